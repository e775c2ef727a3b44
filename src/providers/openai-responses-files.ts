/**
 * File blocks → Responses API input content.
 * @module
 */
import type OpenAI from 'openai';
import type { FileContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';
import { dataUrl, fileName, fileSource, refuseFile, type BlockPlace } from './openai-file-blocks.js';

const API = 'OpenAI Responses';

/**
 * The input content a file block is sent as in the Responses API (in a user message, and in a
 * `function_call_output`'s list, which takes the same parts), as OpenAI documents file inputs:
 *
 * - a document (a PDF, a text or code file, a spreadsheet, an office document…) → `input_file`: `file_data` (a data
 *   URL, with `filename`: the block's `name`, else one from the MIME type), `file_url`, or `file_id`;
 * - an image → `input_image` (`image_url` from its data or url, or `file_id`);
 * - audio and video → an {@link OpenAIRequestRefusal}: the Responses API takes neither as input (audio goes through
 *   Chat Completions' `input_audio`); so does an unresolved `ref`.
 */
export function responsesFilePart(
  block: FileContent,
  at: BlockPlace,
): OpenAI.Responses.ResponseInputImage | OpenAI.Responses.ResponseInputFile {
  const source = fileSource(API, block, at);
  const kind = fileKind(block.mimeType);
  if (kind === 'audio') {
    throw refuseFile(API, block, at, 'it takes no audio input (use OpenAIProvider, Chat Completions, for input_audio)');
  }
  if (kind === 'video') throw refuseFile(API, block, at, 'it takes no video input');
  if (kind === 'image') {
    if (source === 'fileId') return { type: 'input_image', detail: 'auto', file_id: block.fileId! };
    return {
      type: 'input_image',
      detail: 'auto',
      image_url: source === 'url' ? block.url! : dataUrl(block.mimeType, block.data!),
    };
  }
  if (source === 'url') return { type: 'input_file', file_url: block.url! };
  if (source === 'fileId') return { type: 'input_file', file_id: block.fileId! };
  return { type: 'input_file', filename: fileName(block), file_data: dataUrl(block.mimeType, block.data!) };
}
