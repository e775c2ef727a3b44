/**
 * Estimating the input tokens of a file block (a PDF, an audio clip, a text file…) without a network call.
 * @module
 */
import { base64ByteLength } from '../types/check-file.js';
import type { FileContent } from '../types/content.js';
import { fileKind } from '../types/file-kind.js';

/** The constants of one provider family's file estimate. */
export interface FileTokenRates {
  /** Characters of prose per token (a text file is read as text). */
  readonly charsPerToken: number;
  /** Tokens of one image. */
  readonly image: number;
  /** Tokens of one PDF page (its text, and the picture of the page the vendors add). */
  readonly pdfPage: number;
  /** Tokens of one second of audio. */
  readonly audioSecond: number;
  /** Tokens of one second of video (frames and sound). */
  readonly videoSecond: number;
}

/** A PDF page's bytes when its pages cannot be counted (a compressed object stream, or no bytes at hand). */
export const PDF_BYTES_PER_PAGE = 50_000;
/** Audio bytes a second when the header does not say (128 kbit/s, a common MP3 and Ogg rate). */
export const AUDIO_BYTES_PER_SECOND = 16_000;
/** Video bytes a second (about 8 Mbit/s, a 1080p recording). */
export const VIDEO_BYTES_PER_SECOND = 1_000_000;
/** The tokens of a file whose size is not known (a `url` or `fileId` without `size`). */
export const UNKNOWN_FILE_TOKENS = 1_000;

/**
 * The estimated input tokens of `file`, by its kind (`fileKind`) and byte length (decoded `data`, else `size`):
 * - `pdf`: pages × `pdfPage`, the pages counted in the bytes (`/Type /Page` objects) when `data` is at hand and they
 *   are visible, else one page per {@link PDF_BYTES_PER_PAGE} bytes;
 * - `audio`: seconds × `audioSecond`, the seconds from a WAV header's byte rate, else {@link AUDIO_BYTES_PER_SECOND};
 * - `video`: seconds × `videoSecond` at {@link VIDEO_BYTES_PER_SECOND};
 * - `image`: one image;
 * - every other document (text, CSV, JSON, HTML, docx…): its bytes read as characters of text;
 * - a file of unknown size: {@link UNKNOWN_FILE_TOKENS}.
 * At least one token. A planning figure like the rest of `estimateTokens`, not a bill.
 */
export function estimateFileTokens(file: FileContent, rates: FileTokenRates): number {
  const kind = fileKind(file.mimeType);
  if (kind === 'image') return rates.image;
  const data = typeof file.data === 'string' ? file.data : undefined;
  const bytes = (data === undefined ? undefined : base64ByteLength(data)) ?? file.size;
  if (bytes === undefined) return UNKNOWN_FILE_TOKENS;
  switch (kind) {
    case 'pdf': {
      const pages = (data === undefined ? 0 : countPdfPages(data)) || Math.ceil(bytes / PDF_BYTES_PER_PAGE);
      return Math.max(1, pages) * rates.pdfPage;
    }
    case 'audio': {
      const rate = (data === undefined ? undefined : wavByteRate(data)) ?? AUDIO_BYTES_PER_SECOND;
      return Math.max(1, Math.ceil((bytes / rate) * rates.audioSecond));
    }
    case 'video':
      return Math.max(1, Math.ceil((bytes / VIDEO_BYTES_PER_SECOND) * rates.videoSecond));
    default:
      return Math.max(1, Math.ceil(bytes / rates.charsPerToken));
  }
}

const PAGE_OBJECT = /\/Type\s*\/Page(?![A-Za-z])/g;

/** The page objects visible in a PDF's bytes (0 when its objects are in compressed streams). */
function countPdfPages(data: string): number {
  let binary: string;
  try {
    binary = atob(data);
  } catch {
    return 0;
  }
  return binary.match(PAGE_OBJECT)?.length ?? 0;
}

/** A WAV file's bytes per second, from its `fmt ` chunk (bytes 28–31, little-endian), or `undefined`. */
function wavByteRate(data: string): number | undefined {
  let head: string;
  try {
    head = atob(data.slice(0, 48));
  } catch {
    return undefined;
  }
  if (!head.startsWith('RIFF') || head.slice(8, 12) !== 'WAVE' || head.length < 32) return undefined;
  const rate =
    head.charCodeAt(28) | (head.charCodeAt(29) << 8) | (head.charCodeAt(30) << 16) | (head.charCodeAt(31) << 24);
  return rate > 0 ? rate : undefined;
}
