/**
 * Files from users, checked before anything is admitted, claimed or stored: the one check every surface makes (the
 * server's `POST /threads/:id/runs`, `/chat` and `/ag-ui`, and `cubepi run --file`). A file a client sends is either
 * inline bytes (`data`, base64), a URL the vendor fetches, or a vendor file API's id; never a blob store's `ref`,
 * which would let a client name bytes of another thread.
 * @module
 */
import type { FileContent, ImageContent } from '../types/content.js';
import { base64ByteLength } from '../types/check-file.js';
import { HttpError } from './http.js';

/** The largest file a client may send when the server is not told otherwise: 10 MiB of decoded bytes. */
export const DEFAULT_SERVER_MAX_FILE_BYTES = 10 * 1_048_576;

/** The image types every provider takes as an image block: such a file becomes an `image` block, not a `file`. */
const IMAGE_BLOCK_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;

/** Why a file was refused: `status` 413 for one over the size limit, 400 for anything else. */
export class FileInputError extends Error {
  override readonly name = 'FileInputError';
  constructor(
    message: string,
    readonly status: 400 | 413,
  ) {
    super(message);
  }
}

/** The MIME type without parameters or case (`Text/CSV; charset=utf-8` → `text/csv`). */
export function bareMime(mimeType: string): string {
  return mimeType.split(';', 1)[0]!.trim().toLowerCase();
}

/**
 * Whether `bytes` can be a file of `mimeType`, by its leading bytes: PDF, PNG, JPEG, GIF, WebP, WAV, MP3, the Office
 * Open XML (ZIP) documents; text types (`text/*`, JSON, XML) must be UTF-8 without NUL bytes. A type without a known
 * signature is taken as given. Returns the reason when it cannot, else `undefined`.
 */
export function fileBytesProblem(mimeType: string, bytes: Uint8Array): string | undefined {
  const type = bareMime(mimeType);
  const starts = (...prefix: number[]) => prefix.every((byte, i) => bytes[i] === byte);
  const ascii = (at: number, text: string) => [...text].every((c, i) => bytes[at + i] === c.charCodeAt(0));
  const expect = (ok: boolean, what: string) => (ok ? undefined : `its bytes are not ${what} (${type})`);
  switch (type) {
    case 'application/pdf':
      return expect(ascii(0, '%PDF-'), 'a PDF');
    case 'image/png':
      return expect(starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a), 'a PNG image');
    case 'image/jpeg':
      return expect(starts(0xff, 0xd8, 0xff), 'a JPEG image');
    case 'image/gif':
      return expect(ascii(0, 'GIF87a') || ascii(0, 'GIF89a'), 'a GIF image');
    case 'image/webp':
      return expect(ascii(0, 'RIFF') && ascii(8, 'WEBP'), 'a WebP image');
    case 'audio/wav':
    case 'audio/wave':
    case 'audio/x-wav':
      return expect(ascii(0, 'RIFF') && ascii(8, 'WAVE'), 'WAV audio');
    case 'audio/mpeg':
    case 'audio/mp3':
      // An ID3 tag, or an MPEG audio frame's 11-bit sync word.
      return expect(ascii(0, 'ID3') || (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0), 'MP3 audio');
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
    case 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet':
    case 'application/vnd.openxmlformats-officedocument.presentationml.presentation':
      return expect(starts(0x50, 0x4b, 0x03, 0x04), 'an Office Open XML (ZIP) document');
  }
  if (isText(type)) {
    if (bytes.includes(0)) return `its bytes are not text (${type}): they hold a NUL byte`;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return `its bytes are not UTF-8 text (${type})`;
    }
  }
  return undefined;
}

/** Whether `mimeType` is text: `text/*`, JSON, XML. */
function isText(mimeType: string): boolean {
  const type = bareMime(mimeType);
  return (
    type.startsWith('text/') || type === 'application/json' || type === 'application/xml' || type.endsWith('+json')
  );
}

const BASE64_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUE = new Uint8Array(128);
for (let i = 0; i < BASE64_DIGITS.length; i++) BASE64_VALUE[BASE64_DIGITS.charCodeAt(i)] = i;

/**
 * The bytes of base64 `data` already checked strict (or a prefix of such data cut at a multiple of 4). A table loop:
 * `Uint8Array.from(atob(data), …)` took 3 s for 10 MiB; this needs no `Buffer` (the server runs on any Fetch runtime).
 */
function decodeBase64(data: string): Uint8Array {
  const end = data.endsWith('==') ? data.length - 2 : data.endsWith('=') ? data.length - 1 : data.length;
  const bytes = new Uint8Array(Math.floor((end * 3) / 4));
  let at = 0;
  let i = 0;
  for (; i + 4 <= end; i += 4) {
    const n =
      (BASE64_VALUE[data.charCodeAt(i)]! << 18) |
      (BASE64_VALUE[data.charCodeAt(i + 1)]! << 12) |
      (BASE64_VALUE[data.charCodeAt(i + 2)]! << 6) |
      BASE64_VALUE[data.charCodeAt(i + 3)]!;
    bytes[at++] = n >> 16;
    bytes[at++] = (n >> 8) & 0xff;
    bytes[at++] = n & 0xff;
  }
  const rest = end - i;
  if (rest >= 2) {
    let n = (BASE64_VALUE[data.charCodeAt(i)]! << 18) | (BASE64_VALUE[data.charCodeAt(i + 1)]! << 12);
    if (rest === 3) n |= BASE64_VALUE[data.charCodeAt(i + 2)]! << 6;
    bytes[at++] = n >> 16;
    if (rest === 3) bytes[at++] = (n >> 8) & 0xff;
  }
  return bytes.subarray(0, at);
}

/** The byte length of strict base64 `data` (padded, no whitespace; the core's count), or `undefined` when it is not that. */
function base64Length(data: string): number | undefined {
  return data.length % 4 !== 0 ? undefined : base64ByteLength(data);
}

/** What a file input may be: one source, a MIME type, maybe a name. */
export interface FileSource {
  readonly mimeType: unknown;
  readonly name?: unknown;
  readonly data?: unknown;
  readonly url?: unknown;
  readonly fileId?: unknown;
}

/**
 * A file from a user as the content block the agent gets: `data` checked (strict base64, not empty, at most
 * `maxFileBytes` decoded, its bytes what `mimeType` says), `url` an `http(s)` URL, `fileId` a vendor's id. A PNG,
 * JPEG, GIF or WebP image with `data` becomes an `image` block (what every provider sends as an image); everything
 * else a `file` block. Throws {@link FileInputError} naming `where` and what is wrong.
 */
export function toFileBlock(source: FileSource, where: string, maxFileBytes: number): FileContent | ImageContent {
  const fail = (what: string, status: 400 | 413 = 400): never => {
    throw new FileInputError(`${where}: ${what}`, status);
  };
  const { mimeType, name, data, url, fileId } = source;
  if (typeof mimeType !== 'string' || !MIME.test(bareMime(mimeType))) {
    fail(`a file needs a MIME type such as "application/pdf", got ${JSON.stringify(mimeType) ?? 'none'}`);
  }
  const mime = mimeType as string;
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 255)) {
    fail('a file name must be a string of 1 to 255 characters');
  }
  const sources = [data, url, fileId].filter((value) => value !== undefined).length;
  if (sources !== 1) fail(`a file needs exactly one of data, url or fileId (got ${sources})`);
  const named = name === undefined ? {} : { name: name as string };
  if (data !== undefined) {
    if (typeof data !== 'string') return fail('the file data must be a base64 string');
    const size = base64Length(data);
    if (size === undefined) return fail('the file data is not valid base64');
    if (size === 0) fail('the file is empty');
    if (size > maxFileBytes) fail(`the file is ${size} bytes, more than the limit of ${maxFileBytes}`, 413);
    // A signature is in the first bytes; only a text type needs all of them (UTF-8 is checked whole).
    const problem = fileBytesProblem(mime, decodeBase64(isText(mime) ? data : data.slice(0, 24)));
    if (problem !== undefined) fail(problem);
    if (IMAGE_BLOCK_TYPES.has(bareMime(mime))) return { type: 'image', data, mimeType: bareMime(mime) };
    return { type: 'file', mimeType: mime, ...named, data, size };
  }
  if (url !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = typeof url === 'string' ? new URL(url) : undefined;
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== 'https:' && parsed?.protocol !== 'http:') fail('a file URL must be an http(s) URL');
    return { type: 'file', mimeType: mime, ...named, url: url as string };
  }
  if (typeof fileId !== 'string' || fileId.length === 0 || fileId.length > 1024) {
    return fail('a file id must be a string of 1 to 1024 characters');
  }
  return { type: 'file', mimeType: mime, ...named, fileId };
}

/**
 * A `data:` URL's MIME type and base64 bytes (`data:application/pdf;base64,JVBERi…`), or a 400 naming `where`:
 * only base64 data URLs are taken (what a browser's `FileReader.readAsDataURL` makes).
 */
export function parseDataUrl(url: string, where: string): { readonly mimeType: string; readonly data: string } {
  const match = /^data:([^,]*?);base64,(.*)$/s.exec(url);
  if (match === null) throw new FileInputError(`${where}: a data URL must be "data:<mime>;base64,<data>"`, 400);
  return { mimeType: match[1]!, data: match[2]! };
}

/** {@link toFileBlock} for the server: its {@link FileInputError} as the HTTP error (400 `invalid_file`, 413 `file_too_large`). */
export function httpFileBlock(source: FileSource, where: string, maxFileBytes: number): FileContent | ImageContent {
  try {
    return toFileBlock(source, where, maxFileBytes);
  } catch (error) {
    throw asHttpError(error);
  }
}

/** A {@link FileInputError} as its HTTP error; anything else unchanged. */
export function asHttpError(error: unknown): unknown {
  if (!(error instanceof FileInputError)) return error;
  return new HttpError(error.status, error.status === 413 ? 'file_too_large' : 'invalid_file', error.message);
}
