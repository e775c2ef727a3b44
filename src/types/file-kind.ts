/**
 * What kind of input a file block is, by its MIME type.
 * @module
 */
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
