/**
 * File blocks → Chat Completions content parts.
 * @module
 */
import type OpenAI from 'openai';
import type { FileContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';
import {
  audioFormat,
  dataUrl,
  decodeUtf8,
  fileName,
  fileSource,
  isTextMimeType,
  refuseFile,
  type BlockPlace,
} from './openai-file-blocks.js';
import type { OpenAICompat } from './openai-compat.js';

type UserPart = OpenAI.Chat.Completions.ChatCompletionContentPart;

const API = 'OpenAI Chat Completions';

/**
 * The content part a file block is sent as in a Chat Completions user message, as OpenAI documents the API (file
 * inputs: PDF only, by `file_data` or `file_id`, no URLs; `input_audio`: wav and mp3, base64 only), limited by what
 * the server's profile takes ({@link OpenAICompat.files}):
 *
 * - a PDF → `{ type: 'file', file: { file_data: 'data:application/pdf;base64,…', filename } }`, or `{ file_id }`;
 * - an image → `image_url` (its data as a data URL, or its `url`);
 * - wav / mp3 audio → `input_audio` (`{ data, format }`);
 * - a text file (`text/*`, JSON, XML, YAML…) with `data` → a text part holding its characters in a
 *   `<file name="…" type="…">` wrapper (the API's own advice for non-PDF files);
 * - anything else (a file URL, another document or audio format, video, a `fileId` of a non-PDF, an unresolved `ref`)
 *   → an {@link OpenAIRequestRefusal} naming the block: the call ends `model_incapable` before it is sent.
 */
export function chatFilePart(block: FileContent, at: BlockPlace, compat: OpenAICompat): UserPart {
  const source = fileSource(API, block, at);
  const files = compat.files ?? {};
  const server = compat.name === 'openai' ? '' : ` on the ${compat.name} profile`;
  const kind = fileKind(block.mimeType);
  if (kind === 'image') {
    if (source === 'fileId') throw refuseFile(API, block, at, 'an image is sent by data or url, not by file id');
    return {
      type: 'image_url',
      image_url: { url: source === 'url' ? block.url! : dataUrl(block.mimeType, block.data!) },
    };
  }
  if (source === 'url') {
    throw refuseFile(API, block, at, 'it fetches no file URLs (send the bytes as data, or use the Responses API)');
  }
  if (kind === 'pdf') {
    if (source === 'fileId') {
      if (files.fileId !== true) throw refuseFile(API, block, at, `no uploaded-file parts${server}`);
      return { type: 'file', file: { file_id: block.fileId! } };
    }
    if (files.pdf !== true) throw refuseFile(API, block, at, `no PDF file parts${server}`);
    return { type: 'file', file: { file_data: dataUrl('application/pdf', block.data!), filename: fileName(block) } };
  }
  if (source === 'fileId') {
    throw refuseFile(API, block, at, 'an uploaded file is taken for PDFs only (use the Responses API for others)');
  }
  if (kind === 'audio') {
    const format = audioFormat(block.mimeType);
    if (format === undefined) throw refuseFile(API, block, at, 'input_audio takes wav and mp3 only');
    if (files.audio !== true) throw refuseFile(API, block, at, `no input_audio parts${server}`);
    return { type: 'input_audio', input_audio: { data: block.data!, format } };
  }
  if (kind === 'file' && isTextMimeType(block.mimeType)) {
    const text = decodeUtf8(block.data!);
    if (text === undefined) throw refuseFile(API, block, at, 'its data is not UTF-8 text', 'bad_request');
    return { type: 'text', text: fileText(block, text) };
  }
  throw refuseFile(
    API,
    block,
    at,
    kind === 'video'
      ? 'it takes no video'
      : 'file parts are PDF only, and this is not text (use the Responses API, which takes documents)',
  );
}

/** A text file as the text part it is sent as. */
export function fileText(block: FileContent, text: string): string {
  const name = block.name ? ` name="${block.name.replace(/"/g, '&quot;')}"` : '';
  return `<file${name} type="${block.mimeType}">\n${text}\n</file>`;
}
