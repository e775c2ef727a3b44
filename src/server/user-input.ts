/**
 * What a client may write into a thread: user content only. A client that could send `assistant` or `toolResult`
 * messages could store a guarded call's "result" that no approval ever allowed, or put words in the model's mouth.
 * @module
 */
import { toMessages } from '../agent/input.js';
import { InvalidInputError } from '../types/errors.js';
import type { UserMessage } from '../types/messages.js';
import { DEFAULT_SERVER_MAX_FILE_BYTES, httpFileBlock } from './file-input.js';
import { HttpError } from './http.js';

/**
 * The `input` of `POST /threads/:id/runs`, checked before anything is created or stored: a non-empty string, a user
 * message, or a non-empty list of user messages, whose content is a string or text, image and file blocks (as the
 * Agent checks a prompt). Each image and file is checked as `/chat` checks a file part (one source; strict base64 of
 * bytes that are what its MIME type says, at most `maxFileBytes`; an http(s) URL; never a blob store `ref`). Anything
 * else — another role, another block type, a malformed message — throws a 400 `invalid_input` (`invalid_file`, or
 * 413 `file_too_large`, for a file) naming what is wrong.
 * @internal
 */
export function userInput(
  input: unknown,
  maxFileBytes: number = DEFAULT_SERVER_MAX_FILE_BYTES,
): string | UserMessage | readonly UserMessage[] {
  if (input === undefined) throw new HttpError(400, 'invalid_input', 'the body must be {"input": …}');
  let messages;
  try {
    messages = toMessages(input, 'input');
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    // The core's file check (`fileProblem`) speaks of "a file block" and of the byte limit: the same codes as ours.
    const { message } = error;
    if (/-byte limit \(maxFileBytes\)/.test(message)) throw new HttpError(413, 'file_too_large', message);
    throw new HttpError(
      400,
      /a file block|the bytes of a file/.test(message) ? 'invalid_file' : 'invalid_input',
      message,
    );
  }
  messages.forEach((message, index) => {
    const where = Array.isArray(input) ? `input[${index}]` : 'input';
    if (message.role !== 'user') {
      throw new HttpError(
        400,
        'invalid_input',
        `${where}: a client sends user messages only, not ${JSON.stringify(message.role)}`,
      );
    }
    if (typeof message.content === 'string') return;
    message.content.forEach((block, at) => {
      if (block.type === 'text') return;
      const place = `${where}.content[${at}]`;
      if (block.type === 'file') {
        if (block.ref !== undefined) {
          // A content address names bytes in the server's blob store, maybe another thread's: never a client's to give.
          throw new HttpError(400, 'invalid_file', `${place}: a client sends a file's data, url or fileId, not a ref`);
        }
        // `size` against the data was checked by the core (`fileProblem`, in toMessages above).
        httpFileBlock(block, place, maxFileBytes);
      } else httpFileBlock({ mimeType: block.mimeType, data: block.data }, place, maxFileBytes);
    });
  });
  return input as string | UserMessage | readonly UserMessage[];
}
