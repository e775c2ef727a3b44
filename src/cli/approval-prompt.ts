/**
 * Asking the person at the terminal about a held tool call (`write_file`, `run_command`): a `[y/N]` question; no
 * answer possible (no terminal, end of input) denies it and says how to allow such calls.
 * @module
 */
import { createReadStream, openSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import type { ApprovalAnswer, ApprovalRequest } from '../index.js';
import type { Style } from './style.js';

/** Asks one question and resolves with the line typed, or undefined when no answer can come. */
export type AskLine = (question: string) => Promise<string | undefined>;

/** Turns a {@link AskLine} into the approval question for a request. */
export function approvalAsker(askLine: AskLine, style: Style): (request: ApprovalRequest) => Promise<ApprovalAnswer> {
  return async (request) => {
    const answer = await askLine(style.yellow(`Allow ${request.toolName} to ${request.reason}? [y/N] `));
    if (answer === undefined) {
      return {
        deny: 'Nobody could confirm this call (no terminal to ask on); the user can rerun with --yes to allow it',
      };
    }
    return /^\s*y(es)?\s*$/i.test(answer) ? { approve: true } : { deny: 'The user declined this call' };
  };
}

/**
 * A line reader on `input` (not a terminal: plain lines), writing questions to `output`. `close()` releases it.
 * Resolves undefined at the end of input.
 */
export function lineAsker(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): AskLine & { close(): void } {
  let rl: Interface | undefined;
  let ended = false;
  const ask = (question: string) =>
    new Promise<string | undefined>((resolve) => {
      if (ended) return resolve(undefined);
      if (rl === undefined) {
        rl = createInterface({ input, output, terminal: false });
        rl.once('close', () => (ended = true));
      }
      const reader = rl;
      const onClose = () => resolve(undefined);
      reader.once('close', onClose);
      reader.question(question, (line) => {
        reader.off('close', onClose);
        resolve(line);
      });
    });
  return Object.assign(ask, { close: () => rl?.close() });
}

/** A line reader on the controlling terminal (`/dev/tty`), for when stdin carried the prompt; undefined if none. */
export function ttyAsker(output: NodeJS.WritableStream): (AskLine & { close(): void }) | undefined {
  try {
    const fd = openSync('/dev/tty', 'r');
    return lineAsker(createReadStream('', { fd }), output);
  } catch {
    return undefined;
  }
}
