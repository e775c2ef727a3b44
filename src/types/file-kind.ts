/**
 * What kind of input a file block is, by its MIME type.
 * @module
 */
import type { FileContent, TextContent } from './content.js';
import type { ModelInputKind } from './model.js';

/**
 * The {@link ModelInputKind} a file of `mimeType` is sent as: `pdf` for `application/pdf`, `image`, `audio` and
 * `video` by their top-level type, and `file` for every other document (text, CSV, Markdown, HTML, spreadsheets…).
 * Parameters (`; charset=utf-8`) and case are ignored.
 */
export function fileKind(mimeType: string): ModelInputKind {
  const type = mimeType.split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/pdf') return 'pdf';
  const top = type.split('/', 1)[0];
  if (top === 'image' || top === 'audio' || top === 'video') return top;
  return 'file';
}

/**
 * A file block as the text a provider sends in its place where it maps no files yet (a placeholder: the providers'
 * file mappings replace it, see `docs/files.md`).
 */
export function filePlaceholder(block: FileContent): TextContent {
  return { type: 'text', text: `[file${block.name ? ` ${block.name}` : ''} (${block.mimeType}) not sent]` };
}

/** `block`, or the text sent in its place when it is a file (see {@link filePlaceholder}). */
export function noFile<T extends { type: string }>(block: T | FileContent): T | TextContent {
  return block.type === 'file' ? filePlaceholder(block as FileContent) : (block as T);
}
