/**
 * What a client may write into a thread: user content only. A client that could send `assistant` or `toolResult`
 * messages could store a guarded call's "result" that no approval ever allowed, or put words in the model's mouth.
 * @module
 */
import { toMessages } from '../agent/input.js';
import { InvalidInputError } from '../types/errors.js';
import type { UserMessage } from '../types/messages.js';
import { HttpError } from './http.js';

/**
 * The `input` of `POST /threads/:id/runs`, checked before anything is created or stored: a non-empty string, a user
 * message, or a non-empty list of user messages, whose content is a string or text and image blocks (as the Agent
 * checks a prompt). Anything else — another role, another block type, a malformed message — throws a 400
 * `invalid_input` naming what is wrong.
 * @internal
 */
export function userInput(input: unknown): string | UserMessage | readonly UserMessage[] {
  if (input === undefined) throw new HttpError(400, 'invalid_input', 'the body must be {"input": …}');
  let messages;
  try {
    messages = toMessages(input, 'input');
  } catch (error) {
    if (error instanceof InvalidInputError) throw new HttpError(400, 'invalid_input', error.message);
    throw error;
  }
  const index = messages.findIndex((message) => message.role !== 'user');
  if (index !== -1) {
    const where = Array.isArray(input) ? `input[${index}]` : 'input';
    throw new HttpError(
      400,
      'invalid_input',
      `${where}: a client sends user messages only, not ${JSON.stringify(messages[index]!.role)}`,
    );
  }
  return input as string | UserMessage | readonly UserMessage[];
}
