/**
 * cubepi file blocks → Anthropic Messages `document` and `image` blocks.
 * @module
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { FileContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';
import { decodeBase64, RequestRefusal } from './request-refusal.js';

/** The beta the Files API's `file_id` sources need (`anthropic-beta` header). */
export const FILES_API_BETA = 'files-api-2025-04-14';

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * The block a file is sent as, in a user message or inside a `tool_result` (both take documents and images):
 *
 * - a PDF: a `document` with a `base64` source (`data`), a `url` source (`url`, fetched by Anthropic) or a `file`
 *   source (`fileId` of the Files API: the request then carries the {@link FILES_API_BETA} beta);
 * - a text file (`text/*`, `application/json`, `application/xml`): a `document` with a `text` source (the bytes
 *   decoded as UTF-8, sent as `text/plain`, the one plain-text type the API takes), or a `file` source;
 * - an image (JPEG, PNG, GIF, WebP) as an `image` block: `base64`, `url` or `file` source;
 * - `name` becomes the document's `title`.
 *
 * Throws {@link RequestRefusal} (`model_incapable`, naming the block as `where` says and the reason) for what the API
 * cannot take: audio, video, other documents (Word, spreadsheets), a text file by URL, a URL that is not http(s), an
 * unresolved `ref` (the runner resolves refs before a request is sent), and a block with no source; `bad_request` for
 * text bytes that are not base64 UTF-8.
 */
export function anthropicFileBlock(
  block: FileContent,
  where: string,
): Anthropic.DocumentBlockParam | Anthropic.ImageBlockParam {
  const label = `The file ${block.name !== undefined ? `"${block.name}" ` : ''}(${block.mimeType}) ${where}`;
  const refuse = (why: string, kind: 'model_incapable' | 'bad_request' = 'model_incapable'): never => {
    throw new RequestRefusal(kind, `${label} cannot be sent to Anthropic: ${why}`);
  };
  const mime = block.mimeType.split(';', 1)[0]!.trim().toLowerCase();
  const kind = fileKind(mime);
  const title = block.name !== undefined && block.name !== '' ? { title: block.name } : {};
  if (block.data === undefined && block.url === undefined && block.fileId === undefined) {
    if (block.ref !== undefined) refuse(`its blob reference ${block.ref} was not resolved to bytes before sending`);
    refuse('it has no data, url or fileId');
  }
  if (
    block.url !== undefined &&
    block.data === undefined &&
    block.fileId === undefined &&
    !/^https?:\/\//i.test(block.url)
  ) {
    refuse('Anthropic fetches http(s) URLs only');
  }
  if (kind === 'pdf') {
    if (block.data !== undefined) {
      return {
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: block.data },
        ...title,
      };
    }
    if (block.fileId !== undefined)
      return { type: 'document', source: { type: 'file', file_id: block.fileId }, ...title };
    return { type: 'document', source: { type: 'url', url: block.url! }, ...title };
  }
  if (kind === 'image') {
    if (block.fileId !== undefined && block.data === undefined) {
      return { type: 'image', source: { type: 'file', file_id: block.fileId } };
    }
    if (block.data === undefined) return { type: 'image', source: { type: 'url', url: block.url! } };
    if (!IMAGE_TYPES.has(mime)) refuse(`images are JPEG, PNG, GIF or WebP`);
    const media = mime as Anthropic.Base64ImageSource['media_type'];
    return { type: 'image', source: { type: 'base64', media_type: media, data: block.data } };
  }
  if (isText(mime)) {
    if (block.data !== undefined) {
      const bytes = decodeBase64(block.data);
      let text: string | undefined;
      try {
        text = bytes && new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        text = undefined;
      }
      if (text === undefined) refuse('its data is not base64-encoded UTF-8 text', 'bad_request');
      return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text! }, ...title };
    }
    if (block.fileId !== undefined)
      return { type: 'document', source: { type: 'file', file_id: block.fileId }, ...title };
    refuse('Anthropic fetches PDFs and images by URL, not text files: send the text as data');
  }
  return refuse(
    kind === 'audio' || kind === 'video'
      ? `the Messages API takes no ${kind}`
      : 'the Messages API takes PDFs, plain-text documents and images only',
  );
}

function isText(mime: string): boolean {
  return mime.startsWith('text/') || mime === 'application/json' || mime === 'application/xml';
}

/** Whether a request's messages use a Files API `file_id` source (so it needs the {@link FILES_API_BETA} beta). */
export function usesFileIds(messages: readonly Anthropic.MessageParam[]): boolean {
  const hasFile = (block: { type: string; source?: unknown; content?: unknown }): boolean => {
    if ((block.type === 'document' || block.type === 'image') && (block.source as { type?: string }).type === 'file') {
      return true;
    }
    return block.type === 'tool_result' && Array.isArray(block.content) && block.content.some(hasFile);
  };
  return messages.some((m) => Array.isArray(m.content) && m.content.some(hasFile));
}
