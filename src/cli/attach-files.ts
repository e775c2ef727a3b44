/**
 * `cubepi run --file report.pdf "…"`: files attached to the prompt, read whole, their type from the extension (or
 * `--file-type`), checked as the server checks a file a client sends (`toFileBlock`: bytes that are their type, a
 * size limit). Every problem is a usage error naming the file (exit code 2), before any model is called.
 * @module
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { userMessage, type FileContent, type ImageContent, type UserContent, type UserMessage } from '../index.js';
import { usageError } from './cli-error.js';
import { MIME_BY_EXTENSION } from './mime-by-extension.js';

/**
 * The largest file `--file` attaches: 32 MiB, the largest request the providers that take documents accept (a file
 * travels base64 inside the request, a third larger).
 */
export const MAX_ATTACHED_BYTES = 32 * 1_048_576;

/** One `--file`, with the `--file-type` that followed it, if any. */
export interface FileArgument {
  readonly path: string;
  readonly type?: string | undefined;
}

/**
 * The `--file` arguments of `args` in order, each with the `--file-type` given right after it (`--file data.bin
 * --file-type application/pdf`). A `--file-type` before any `--file`, or two after one, is a usage error. `options`
 * are the command's (so option values are told from options).
 */
export function fileArguments(
  args: readonly string[],
  options: NonNullable<ParseArgsConfig['options']>,
): FileArgument[] {
  const { tokens } = parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true });
  const files: { path: string; type?: string }[] = [];
  for (const token of tokens) {
    if (token.kind !== 'option' || typeof token.value !== 'string') continue;
    if (token.name === 'file') files.push({ path: token.value });
    else if (token.name === 'file-type') {
      const last = files.at(-1);
      if (last === undefined)
        throw usageError('run: --file-type names the type of the --file before it: give --file first');
      if (last.type !== undefined) throw usageError(`run: two --file-type for --file ${last.path}`);
      last.type = token.value;
    }
  }
  return files;
}

/** The MIME type of `path`: `type` when given, else from its extension; a usage error when neither tells. */
export function mimeTypeOf(path: string, type: string | undefined): string {
  if (type !== undefined) return type;
  const mime = MIME_BY_EXTENSION[extname(path).toLowerCase()];
  if (mime === undefined) {
    throw usageError(
      `run: cannot tell the type of --file ${path} from its extension: add --file-type <mime> after it ` +
        `(known: ${Object.keys(MIME_BY_EXTENSION).join(' ')})`,
    );
  }
  return mime;
}

/**
 * The files read and checked, as content blocks (a PNG, JPEG, GIF or WebP image as an `image` block, anything else a
 * `file` block named by its base name). A missing, unreadable or empty file, a directory, one over
 * {@link MAX_ATTACHED_BYTES}, or bytes that are not their type: a usage error naming the file.
 */
export async function readAttachments(
  files: readonly FileArgument[],
  maxBytes: number = MAX_ATTACHED_BYTES,
): Promise<(FileContent | ImageContent)[]> {
  const blocks: (FileContent | ImageContent)[] = [];
  for (const { path, type } of files) {
    const mimeType = mimeTypeOf(path, type);
    let bytes: Buffer;
    try {
      const info = await stat(path);
      if (info.isDirectory()) throw usageError(`run: --file ${path} is a directory`);
      if (info.size > maxBytes) {
        throw usageError(`run: --file ${path} is ${info.size} bytes, more than the limit of ${maxBytes}`);
      }
      bytes = await readFile(path);
    } catch (error) {
      if ((error as { name?: unknown }).name === 'CliError') throw error;
      const code = (error as { code?: unknown }).code;
      const why =
        code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
      throw usageError(`run: cannot read --file ${path}: ${why}`);
    }
    // Loaded only when a file is attached: `cubepi run` without one does not load the server.
    const { FileInputError, toFileBlock } = await import('../server/index.js');
    try {
      blocks.push(
        toFileBlock({ mimeType, name: basename(path), data: bytes.toString('base64') }, `--file ${path}`, maxBytes),
      );
    } catch (error) {
      if (!(error instanceof FileInputError)) throw error;
      const mistyped = type === undefined && error.message.includes('its bytes are not');
      const hint = mistyped ? ' (add --file-type <mime> after it if it is another type)' : '';
      throw usageError(`run: ${error.message}${hint}`);
    }
  }
  return blocks;
}

/** The prompt with its attachments: the prompt itself when there are none, else one user message, text first. */
export function promptWithFiles(prompt: string, files: readonly UserContent[]): string | UserMessage {
  return files.length === 0 ? prompt : userMessage([{ type: 'text', text: prompt }, ...files]);
}

/** `report.pdf (application/pdf, 12.3 KB)`: how an attachment is announced on stderr. */
export function describeAttachment(block: FileContent | ImageContent, path: string): string {
  const size = Math.floor((block.data!.length * 3) / 4) - (block.data!.match(/=+$/)?.[0].length ?? 0);
  const shown =
    size < 1024
      ? `${size} B`
      : size < 1_048_576
        ? `${(size / 1024).toFixed(1)} KB`
        : `${(size / 1_048_576).toFixed(1)} MB`;
  return `${basename(path)} (${block.mimeType}, ${shown})`;
}
