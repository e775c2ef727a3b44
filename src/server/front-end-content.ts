/**
 * A front end's user message content as cubepi content blocks: the AI SDK's UI message parts (`text`, `file`) and
 * AG-UI's content parts (`text`; 1.0's `image`, `audio`, `video`, `document` with a `data`, `url` or `file` source;
 * 0.x's `binary`). Each file goes through the one check of `toFileBlock`, so a bad file is refused naming its part.
 * @module
 */
import type { UserContent } from '../types/content.js';
import { asHttpError, bareMime, httpFileBlock, parseDataUrl, type FileSource } from './file-input.js';
import { HttpError } from './http.js';

const AG_UI_MEDIA = new Set(['image', 'audio', 'video', 'document']);

/**
 * The parts of a UI message (`useChat`'s `sendMessage({ text, files })`) as user content: a `text` part is text; a
 * `file` part (`{ mediaType, url, filename }`) is a file whose bytes are its `data:` URL's, or its `url` for any other
 * URL (images with bytes become image blocks, see `toFileBlock`). Any other part, or a malformed one, is a 400 naming
 * it (`where` is the message, e.g. `messages[2]`); a file over `maxFileBytes` is a 413.
 * @internal
 */
export function chatContent(parts: readonly unknown[], where: string, maxFileBytes: number): UserContent[] {
  return parts.map((value, index): UserContent => {
    const at = `${where}.parts[${index}]`;
    const part = (value ?? {}) as { type?: unknown; text?: unknown; mediaType?: unknown; url?: unknown };
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw invalid(`${at}: a text part needs a string \`text\``);
      return { type: 'text', text: part.text };
    }
    if (part.type !== 'file') {
      throw invalid(`${at}: a part of type ${JSON.stringify(part.type) ?? 'none'} is not taken (text and file are)`);
    }
    const { filename } = value as { filename?: unknown };
    if (typeof part.url !== 'string') throw invalid(`${at}: a file part needs a string \`url\``);
    return fileFromUrl(part.url, part.mediaType, filename, at, maxFileBytes);
  });
}

/**
 * An AG-UI user message's `content` as user content: a string is one text block; each part is text, a media part of
 * AG-UI 1.0 (`image`, `audio`, `video`, `document`; its `source` `data` → data, `url` → url, `file` → fileId; the
 * name from `metadata.filename`), or the `binary` part of AG-UI 0.x (`mimeType`, `data` | `url` | `id`, `filename`).
 * Anything else is a 400 naming the part; a file over `maxFileBytes` a 413.
 * @internal
 */
export function agUiContent(content: unknown, where: string, maxFileBytes: number): string | UserContent[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(`${where}.content: expected a string or a list of parts`);
  return content.map((value: unknown, index): UserContent => {
    const at = `${where}.content[${index}]`;
    const part = (value ?? {}) as Record<string, unknown>;
    if (part.type === 'text') {
      if (typeof part.text !== 'string') throw invalid(`${at}: a text part needs a string \`text\``);
      return { type: 'text', text: part.text };
    }
    if (part.type === 'binary') {
      const { mimeType, data, url, id, filename } = part;
      if (typeof url === 'string' && data === undefined && id === undefined) {
        return fileFromUrl(url, mimeType, filename, at, maxFileBytes);
      }
      return httpFileBlock({ mimeType, name: filename, data, url, fileId: id }, at, maxFileBytes);
    }
    if (typeof part.type !== 'string' || !AG_UI_MEDIA.has(part.type)) {
      throw invalid(
        `${at}: a part of type ${JSON.stringify(part.type) ?? 'none'} is not taken (text, image, audio, video, document, binary are)`,
      );
    }
    const source = (part.source ?? {}) as { type?: unknown; value?: unknown; mimeType?: unknown };
    const name = (part.metadata as { filename?: unknown } | undefined)?.filename;
    const named = typeof name === 'string' ? name : undefined;
    if (typeof source.value !== 'string')
      throw invalid(`${at}: a ${part.type} part needs a source with a string value`);
    switch (source.type) {
      case 'data':
        return httpFileBlock({ mimeType: source.mimeType, name: named, data: source.value }, at, maxFileBytes);
      case 'url':
        return fileFromUrl(source.value, source.mimeType, named, at, maxFileBytes);
      case 'file':
        return httpFileBlock({ mimeType: source.mimeType, name: named, fileId: source.value }, at, maxFileBytes);
      default:
        throw invalid(`${at}: a source of type ${JSON.stringify(source.type) ?? 'none'} (expected data, url or file)`);
    }
  });
}

/** A file at `url`: its bytes for a `data:` URL (whose MIME type must be `mimeType`'s, when both are given), else the URL. */
function fileFromUrl(url: string, mimeType: unknown, name: unknown, where: string, maxFileBytes: number): UserContent {
  let source: FileSource;
  if (url.startsWith('data:')) {
    let parsed;
    try {
      parsed = parseDataUrl(url, where);
    } catch (error) {
      throw asHttpError(error);
    }
    const declared = typeof mimeType === 'string' ? mimeType : undefined;
    if (declared !== undefined && parsed.mimeType !== '' && !sameType(declared, parsed.mimeType)) {
      throw new HttpError(
        400,
        'invalid_file',
        `${where}: the data URL says ${parsed.mimeType}, the part says ${declared}`,
      );
    }
    source = { mimeType: declared ?? parsed.mimeType, name, data: parsed.data };
  } else source = { mimeType, name, url };
  return httpFileBlock(source, where, maxFileBytes);
}

function sameType(a: string, b: string): boolean {
  return bareMime(a) === bareMime(b);
}

function invalid(message: string): HttpError {
  return new HttpError(400, 'invalid_input', message);
}
