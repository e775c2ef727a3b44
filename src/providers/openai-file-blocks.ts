/**
 * What both OpenAI request builders need to know about a file block: its one source, whether it is text, its audio
 * format, a file name, and the refusal that names it.
 * @module
 */
import type { FileContent } from '../types/content.js';
import type { ProviderErrorKind } from '../types/messages.js';
import { OpenAIRequestRefusal } from './openai-request-refusal.js';

/** Where a block sits in the transcript, for refusal messages: `message 2 (user), block 1`. */
export interface BlockPlace {
  readonly message: number;
  readonly role: string;
  readonly block: number;
}

/** Which of a file block's sources holds its content. */
export type FileSource = 'data' | 'url' | 'fileId';

/** `file report.pdf (application/pdf) in message 2 (user), block 1`. */
export function describeFile(block: FileContent, at: BlockPlace): string {
  return `file${block.name ? ` ${block.name}` : ''} (${block.mimeType}) in message ${at.message + 1} (${at.role}), block ${at.block + 1}`;
}

/** The refusal of `block`: `<api> cannot take <file …>: <why>`. */
export function refuseFile(
  api: string,
  block: FileContent,
  at: BlockPlace,
  why: string,
  kind: ProviderErrorKind = 'model_incapable',
): OpenAIRequestRefusal {
  return new OpenAIRequestRefusal(kind, `${api} cannot take the ${describeFile(block, at)}: ${why}`);
}

/**
 * The source of `block`. An unresolved `ref` is refused (the runner resolves blob references before a request is sent;
 * one reaching a provider means no blob store resolved it), as is a block with no source or several.
 */
export function fileSource(api: string, block: FileContent, at: BlockPlace): FileSource {
  const sources = (['data', 'url', 'fileId', 'ref'] as const).filter((key) => block[key] !== undefined);
  if (sources.length !== 1) {
    throw refuseFile(
      api,
      block,
      at,
      `a file block holds exactly one of data, url, fileId or ref (it has ${sources.length === 0 ? 'none' : sources.join(', ')})`,
      'bad_request',
    );
  }
  if (sources[0] === 'ref') {
    throw refuseFile(
      api,
      block,
      at,
      `its content is an unresolved blob reference (${block.ref}); the runner resolves refs to data before a request is sent (is a blob store configured?)`,
    );
  }
  return sources[0]!;
}

/** The MIME type without parameters, lower case. */
export function baseMimeType(mimeType: string): string {
  return mimeType.split(';', 1)[0]!.trim().toLowerCase();
}

const TEXT_APPLICATION = new Set([
  'application/json',
  'application/ld+json',
  'application/xml',
  'application/yaml',
  'application/x-yaml',
  'application/toml',
  'application/javascript',
  'application/typescript',
  'application/x-sh',
  'application/sql',
  'application/csv',
  'application/x-ndjson',
  'application/graphql',
]);

/** Whether a file of this MIME type is text (sent as its characters where the API has no file field for it). */
export function isTextMimeType(mimeType: string): boolean {
  const type = baseMimeType(mimeType);
  return type.startsWith('text/') || TEXT_APPLICATION.has(type) || type.endsWith('+json') || type.endsWith('+xml');
}

/** The bytes of base64 `data` as UTF-8 text, or undefined when they are not valid UTF-8 (or not base64). */
export function decodeUtf8(data: string): string | undefined {
  try {
    const binary = atob(data);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The `input_audio.format` of an audio MIME type OpenAI takes (`wav`, `mp3`), or undefined. */
export function audioFormat(mimeType: string): 'wav' | 'mp3' | undefined {
  const type = baseMimeType(mimeType);
  if (type === 'audio/wav' || type === 'audio/x-wav' || type === 'audio/wave' || type === 'audio/vnd.wave')
    return 'wav';
  if (type === 'audio/mpeg' || type === 'audio/mp3' || type === 'audio/mpeg3' || type === 'audio/x-mpeg-3')
    return 'mp3';
  return undefined;
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/csv': 'csv',
  'text/tab-separated-values': 'tsv',
  'text/html': 'html',
  'application/json': 'json',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/msword': 'doc',
  'application/vnd.ms-excel': 'xls',
};

/**
 * The file name sent with inline bytes: the block's `name`, else `file.<ext>` from the MIME type (OpenAI reads the
 * type of `file_data` from the name's extension, and requires a name with it).
 */
export function fileName(block: FileContent): string {
  if (block.name) return block.name;
  const ext = EXTENSIONS[baseMimeType(block.mimeType)];
  return ext === undefined ? 'file' : `file.${ext}`;
}

/** `data:<mime>;base64,<data>`. */
export function dataUrl(mimeType: string, data: string): string {
  return `data:${mimeType};base64,${data}`;
}
