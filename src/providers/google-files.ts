/**
 * File blocks → Gemini parts: `inlineData` for bytes, `fileData` for URLs and Files API files.
 * @module
 */
import type { FunctionResponsePart, Part } from '@google/genai';
import type { FileContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';
import { GoogleRequestRefusal } from './google-refusal.js';

/**
 * The prefix of a Gemini API Files API file's URI: the file named `files/<id>` is at `${GEMINI_FILES_URI}files/<id>`,
 * as the API reports it in `File.uri`.
 */
export const GEMINI_FILES_URI = 'https://generativelanguage.googleapis.com/v1beta/';

/**
 * The MIME types Gemini 3 takes inside a function response (`functionResponse.parts`, multimodal function responses):
 * images and PDF or plain-text documents. Other files in a tool result go as parts after the response.
 */
const FUNCTION_RESPONSE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'application/pdf', 'text/plain']);

/** Where a file block is, for the refusal message: `a user message`, `the result of weather (call_1)`. */
export type FilePlace = string;

/**
 * The part a file block is sent as, in a user message or after a function response:
 *
 * - `data` → `inlineData { mimeType, data }` (PDF, image, audio, video, and text documents: `text/*`, JSON, XML,
 *   JavaScript, Python, YAML, RTF, which Gemini reads as text);
 * - `url` → `fileData { fileUri, mimeType }` for `gs://` (Cloud Storage; on the Gemini API a registered bucket) and
 *   `http(s)://` URLs (Gemini fetches them; YouTube URLs as video); a base64 `data:` URL → `inlineData`;
 * - `fileId` → `fileData` with the Files API URI (`files/abc` or `abc` → `https://generativelanguage.googleapis.com/
 *   v1beta/files/abc`; a full `https://` URI as it is). Vertex AI has no Files API: there a `fileId` is refused.
 *
 * `name` is not sent: Gemini reads a part's `displayName` only with server-side tools.
 *
 * Refused ({@link GoogleRequestRefusal}, `model_incapable`, naming the block and `place`): a MIME type Gemini does not
 * read (spreadsheets, Word documents, archives: convert them to PDF or text), a URL of another scheme, an unresolved
 * blob `ref` (the runner resolves refs to `data` before a request), a block with no source.
 */
export function geminiFilePart(block: FileContent, place: FilePlace, vertex: boolean): Part {
  const refuse = (why: string) =>
    new GoogleRequestRefusal('model_incapable', `${describeFile(block)} in ${place}: ${why}; nothing was sent`);
  const mimeType = block.mimeType;
  if (!geminiReads(mimeType)) {
    throw refuse(
      `Gemini reads PDF, image, audio, video and text documents, not ${mimeType} (convert it to PDF or text)`,
    );
  }
  if (block.data !== undefined) return { inlineData: { mimeType, data: block.data } };
  if (block.url !== undefined) {
    const dataUrl = /^data:[^,]*;base64,(.*)$/s.exec(block.url);
    if (dataUrl) return { inlineData: { mimeType, data: dataUrl[1]! } };
    if (!/^(gs|https?):\/\//i.test(block.url)) {
      throw refuse(`Gemini fetches gs:// and http(s):// URLs only (got ${block.url.split(':', 1)[0]}:)`);
    }
    return { fileData: { fileUri: block.url, mimeType } };
  }
  if (block.fileId !== undefined) {
    if (/^https:\/\//i.test(block.fileId)) return { fileData: { fileUri: block.fileId, mimeType } };
    if (vertex) throw refuse('Vertex AI has no Files API: pass the file as data, or its gs:// URI as url');
    const name = block.fileId.startsWith('files/') ? block.fileId : `files/${block.fileId}`;
    if (!/^files\/[a-z0-9-]+$/.test(name)) throw refuse(`"${block.fileId}" is not a Files API file name (files/<id>)`);
    return { fileData: { fileUri: `${GEMINI_FILES_URI}${name}`, mimeType } };
  }
  if (block.ref !== undefined) {
    throw refuse(
      `the blob reference ${block.ref} was not resolved (the runner resolves refs to data before a request)`,
    );
  }
  throw refuse('it has no data, url or fileId');
}

/**
 * The part a file becomes inside a Gemini 3 function response (`functionResponse.parts`), or `undefined` when it goes
 * after the response instead: inline bytes of an image (PNG, JPEG, WebP), a PDF or plain text. URLs and Files API
 * files, audio, video and other documents go after the response as parts of the same user turn.
 */
export function geminiFunctionResponsePart(part: Part): FunctionResponsePart | undefined {
  const mimeType = part.inlineData?.mimeType?.split(';', 1)[0]!.trim().toLowerCase();
  if (part.inlineData === undefined || mimeType === undefined || !FUNCTION_RESPONSE_TYPES.has(mimeType)) {
    return undefined;
  }
  return { inlineData: { mimeType: part.inlineData.mimeType!, data: part.inlineData.data! } };
}

function geminiReads(mimeType: string): boolean {
  if (fileKind(mimeType) !== 'file') return true;
  const type = mimeType.split(';', 1)[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    /^application\/(json|xml|javascript|x-javascript|x-python|x-yaml|yaml|rtf|x-sh)$/.test(type) ||
    /^application\/[\w.-]+\+(json|xml)$/.test(type)
  );
}

function describeFile(block: FileContent): string {
  return `file ${block.name !== undefined ? `"${block.name}" ` : ''}(${block.mimeType})`;
}
