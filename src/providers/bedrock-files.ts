/**
 * cubepi file blocks → Bedrock Converse `document`, `image`, `audio` and `video` blocks.
 * @module
 */
import type {
  AudioFormat,
  ContentBlock,
  DocumentFormat,
  ImageFormat,
  VideoFormat,
} from '@aws-sdk/client-bedrock-runtime';
import type { FileContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';
import { decodeBase64, RequestRefusal } from './request-refusal.js';

/** The document names used so far in one request: Converse wants a name per document, and each one different. */
export interface DocumentNames {
  count: number;
  readonly used: Set<string>;
}

/** A fresh {@link DocumentNames} for one request. */
export const documentNames = (): DocumentNames => ({ count: 0, used: new Set() });

/** The Converse block of a file: what a user message takes (a tool result takes all but audio). */
export type BedrockFileBlock =
  ContentBlock.DocumentMember | ContentBlock.ImageMember | ContentBlock.AudioMember | ContentBlock.VideoMember;

/**
 * The block a file is sent as:
 *
 * - a document (PDF, CSV, Word, Excel, HTML, Markdown, plain text; another `text/*` or JSON as `txt`): a `document`
 *   block named after `name`, sanitized to what Converse takes (letters, digits, single spaces, hyphens,
 *   parentheses, square brackets; the extension dropped; at most 200 characters), made unique in the request
 *   (`report (2)`); `document-<n>` without a usable name;
 * - an image (PNG, JPEG, GIF, WebP), audio (WAV, MP3, M4A, AAC, FLAC, OGG, Opus, WebM, …) and video (MP4, MOV,
 *   WebM, MKV, …) as `image`, `audio` and `video` blocks;
 * - the bytes from `data` (base64), or an `s3://` `url` as `s3Location` (Bedrock reads the object itself).
 *
 * Throws {@link RequestRefusal} (`model_incapable`, naming the block as `where` says and the reason) for what Converse
 * cannot take: another MIME type, a URL that is not `s3://`, a `fileId` (Bedrock has no file API), an unresolved
 * `ref` (the runner resolves refs before a request is sent), a block with no source; `bad_request` for `data` that
 * is not base64.
 */
export function bedrockFileBlock(block: FileContent, where: string, names: DocumentNames): BedrockFileBlock {
  const label = `The file ${block.name !== undefined ? `"${block.name}" ` : ''}(${block.mimeType}) ${where}`;
  const refuse = (why: string, kind: 'model_incapable' | 'bad_request' = 'model_incapable'): never => {
    throw new RequestRefusal(kind, `${label} cannot be sent to Bedrock Converse: ${why}`);
  };
  let source: { bytes: Uint8Array } | { s3Location: { uri: string } };
  if (block.data !== undefined) {
    const bytes = decodeBase64(block.data);
    source = bytes === undefined ? refuse('its data is not valid base64', 'bad_request') : { bytes };
  } else if (block.url !== undefined) {
    if (!/^s3:\/\//i.test(block.url)) refuse('Converse reads s3:// URLs only (send other files as data)');
    source = { s3Location: { uri: block.url } };
  } else if (block.fileId !== undefined) {
    source = refuse('Bedrock has no file API to take a fileId (send the file as data or an s3:// URL)');
  } else if (block.ref !== undefined) {
    source = refuse(`its blob reference ${block.ref} was not resolved to bytes before sending`);
  } else {
    source = refuse('it has no data, url or fileId');
  }
  const mime = block.mimeType.split(';', 1)[0]!.trim().toLowerCase();
  const kind = fileKind(mime);
  if (kind === 'image') {
    const format = IMAGE_FORMATS[mime] ?? refuse(`images are ${Object.keys(IMAGE_FORMATS).join(', ')}`);
    return { image: { format, source } };
  }
  if (kind === 'audio') {
    const format = AUDIO_FORMATS[mime] ?? refuse(`audio is ${Object.keys(AUDIO_FORMATS).join(', ')}`);
    return { audio: { format, source } };
  }
  if (kind === 'video') {
    const format = VIDEO_FORMATS[mime] ?? refuse(`video is ${Object.keys(VIDEO_FORMATS).join(', ')}`);
    return { video: { format, source } };
  }
  const format =
    DOCUMENT_FORMATS[mime] ??
    (mime.startsWith('text/') || mime === 'application/json' ? 'txt' : undefined) ??
    refuse(`documents are ${Object.keys(DOCUMENT_FORMATS).join(', ')} or other text`);
  return { document: { format, name: documentName(block.name, names), source } };
}

/**
 * A Converse document name: Bedrock takes letters, digits, whitespace (never two in a row), hyphens, parentheses and
 * square brackets; a name is also read by the model, so the rest becomes a space rather than vanishing.
 */
export function documentName(name: string | undefined, names: DocumentNames): string {
  names.count++;
  const base = (name ?? '')
    .replace(/\.[A-Za-z0-9]{1,5}$/, '')
    .replace(/[^A-Za-z0-9\s\-()[\]]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 190)
    .trim();
  let candidate = base === '' ? `document-${names.count}` : base;
  for (let n = 2; names.used.has(candidate); n++)
    candidate = `${base === '' ? `document-${names.count}` : base} (${n})`;
  names.used.add(candidate);
  return candidate;
}

export const IMAGE_FORMATS: Readonly<Record<string, ImageFormat>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

export const DOCUMENT_FORMATS: Readonly<Record<string, DocumentFormat>> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'text/html': 'html',
  'text/markdown': 'md',
  'text/plain': 'txt',
};

const AUDIO_FORMATS: Readonly<Record<string, AudioFormat>> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/webm': 'webm',
  'audio/x-matroska': 'mka',
  'audio/pcm': 'pcm',
};

const VIDEO_FORMATS: Readonly<Record<string, VideoFormat>> = {
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
  'video/x-matroska': 'mkv',
  'video/x-flv': 'flv',
  'video/mpeg': 'mpeg',
  'video/x-ms-wmv': 'wmv',
  'video/3gpp': 'three_gp',
};
