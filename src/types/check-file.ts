/**
 * The check every file block passes where a message or a tool result comes in: one source, a MIME type, base64 that
 * decodes, bytes that are what the MIME type says, and a size limit.
 * @module
 */

/** The default largest file, in bytes, a message or tool result may hold: 20 MiB (see `AgentOptions.maxFileBytes`). */
export const DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024;

const SOURCES = ['data', 'url', 'fileId', 'ref'] as const;
// RFC 6838 type and subtype names (restricted-name), optional parameters after `;`.
const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;.*)?$/i;
// Standard base64 with optional padding (some encoders leave it out); no whitespace, no URL-safe alphabet.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const REF = /^sha256:[0-9a-f]{64}$/;

/**
 * The byte length of standard base64 `data` (padding or not), or `undefined` when it is not base64. Linear in the
 * string, allocation-free: a 20 MiB file is checked without being decoded.
 */
export function base64ByteLength(data: string): number | undefined {
  if (data.length % 4 === 1 || !BASE64.test(data)) return undefined;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  if (padding > 0 && data.length % 4 !== 0) return undefined;
  const chars = data.length - padding;
  return Math.floor((chars * 3) / 4);
}

/** The first `count` bytes of base64 `data` (which {@link base64ByteLength} accepted). */
function headBytes(data: string, count: number): Uint8Array {
  let head = data.slice(0, Math.ceil(count / 3) * 4).replace(/=+$/, '');
  head = head.slice(0, head.length - (head.length % 4 === 1 ? 1 : 0));
  const binary = atob(head + '='.repeat((4 - (head.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const ascii = (bytes: Uint8Array, at: number, text: string): boolean => {
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

/** A signature check over a file's first bytes, and the format it names in an error. */
interface Signature {
  readonly format: string;
  readonly matches: (bytes: Uint8Array) => boolean;
}

const PDF: Signature = {
  format: 'a PDF (%PDF-)',
  // The header may follow a little junk (PDF 1.7 §7.5.2 readers accept it within the first 1,024 bytes).
  matches: (bytes) => {
    for (let i = 0; i + 5 <= bytes.length; i++) if (ascii(bytes, i, '%PDF-')) return true;
    return false;
  },
};
const ZIP: Signature = { format: 'a ZIP container (PK)', matches: (b) => ascii(b, 0, 'PK\x03\x04') };
const WAV: Signature = { format: 'a WAV file (RIFF…WAVE)', matches: (b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE') };
const MP3: Signature = {
  format: 'an MP3 file (ID3 or an MPEG frame)',
  matches: (b) => ascii(b, 0, 'ID3') || (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0),
};
const FLAC: Signature = { format: 'a FLAC file (fLaC)', matches: (b) => ascii(b, 0, 'fLaC') };
const OGG: Signature = { format: 'an Ogg file (OggS)', matches: (b) => ascii(b, 0, 'OggS') };

/**
 * The MIME types whose bytes are sniffed, by their first bytes. A type not listed here is not sniffed (text, CSV,
 * HTML and JSON have no signature; video containers vary too much to be worth it here).
 */
const SIGNATURES: Readonly<Record<string, Signature>> = {
  'application/pdf': PDF,
  'audio/wav': WAV,
  'audio/x-wav': WAV,
  'audio/wave': WAV,
  'audio/vnd.wave': WAV,
  'audio/mpeg': MP3,
  'audio/mp3': MP3,
  'audio/flac': FLAC,
  'audio/x-flac': FLAC,
  'audio/ogg': OGG,
  'audio/opus': OGG,
  'application/ogg': OGG,
  'application/zip': ZIP,
  'application/epub+zip': ZIP,
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': ZIP,
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': ZIP,
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': ZIP,
  'application/vnd.oasis.opendocument.text': ZIP,
  'application/vnd.oasis.opendocument.spreadsheet': ZIP,
};

/** Bytes read from the head of a file to sniff it (the PDF header may sit anywhere in the first 1,024). */
const SNIFF_BYTES = 1_024;

/**
 * Why `block` is not a valid file block, or `undefined` when it is one: `mimeType` a `type/subtype`; exactly one of
 * `data` (standard base64), `url` (an absolute URL), `fileId` (a non-empty string) or `ref` (`sha256:` and 64
 * lowercase hex digits, with `size`); `name` a string and `size` a non-negative integer when present (with `data`:
 * its decoded length); the bytes no larger than `maxFileBytes` (the decoded `data`, else `size` when given); and for
 * the MIME types with a signature (PDF `%PDF-`, WAV, MP3, FLAC, Ogg, and ZIP-based documents such as docx and xlsx),
 * `data` that starts as that format does. The problem is a phrase to follow the block's place
 * (`prompt[0].content[1]: …`).
 */
export function fileProblem(block: object, maxFileBytes: number = DEFAULT_MAX_FILE_BYTES): string | undefined {
  const file = block as Record<string, unknown>;
  const { mimeType, name, size } = file;
  if (typeof mimeType !== 'string' || !MIME.test(mimeType)) {
    return `a file block needs a \`mimeType\` of the form type/subtype (got ${describe(mimeType)})`;
  }
  const given = SOURCES.filter((key) => file[key] !== undefined);
  if (given.length !== 1) {
    return given.length === 0
      ? 'a file block needs one of `data`, `url`, `fileId` or `ref`'
      : `a file block takes exactly one of \`data\`, \`url\`, \`fileId\` or \`ref\` (got ${given.join(' and ')})`;
  }
  if (name !== undefined && typeof name !== 'string') return `a file block's \`name\` must be a string`;
  if (size !== undefined && !(typeof size === 'number' && Number.isSafeInteger(size) && size >= 0)) {
    return `a file block's \`size\` must be a non-negative integer (got ${describe(size)})`;
  }
  const source = given[0]!;
  const value = file[source];
  let bytes = typeof size === 'number' ? size : undefined;
  switch (source) {
    case 'data': {
      const length = typeof value === 'string' ? base64ByteLength(value) : undefined;
      if (length === undefined) return `a file block's \`data\` must be a base64 string`;
      if (length === 0) return `a file block's \`data\` is empty`;
      if (bytes !== undefined && bytes !== length) {
        return `a file block's \`size\` (${bytes}) is not the length of its \`data\` (${length} bytes)`;
      }
      bytes = length;
      break;
    }
    case 'url':
      if (typeof value !== 'string' || !isUrl(value))
        return `a file block's \`url\` must be an absolute URL (got ${describe(value)})`;
      break;
    case 'fileId':
      if (typeof value !== 'string' || value.length === 0)
        return `a file block's \`fileId\` must be a non-empty string`;
      break;
    case 'ref':
      if (typeof value !== 'string' || !REF.test(value))
        return `a file block's \`ref\` must be "sha256:" and 64 lowercase hex digits (got ${describe(value)})`;
      if (bytes === undefined) return 'a file block with a `ref` needs its `size`';
      break;
  }
  if (bytes !== undefined && bytes > maxFileBytes) {
    return `the file (${mimeType}, ${bytes} bytes) is over the ${maxFileBytes}-byte limit (maxFileBytes)`;
  }
  if (source === 'data') {
    const signature = SIGNATURES[mimeType.split(';', 1)[0]!.trim().toLowerCase()];
    if (signature !== undefined && !signature.matches(headBytes(value as string, SNIFF_BYTES))) {
      return `the bytes of a file block declared ${mimeType} are not ${signature.format}`;
    }
  }
  return undefined;
}

function isUrl(text: string): boolean {
  try {
    return new URL(text).protocol.length > 1;
  } catch {
    return false;
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return value === null ? 'null' : typeof value;
}
