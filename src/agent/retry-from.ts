/**
 * The rules of `agent.fork()` and `agent.retryFrom()`: their options, and what a retry sends.
 * @module
 */
import { InvalidInputError, InvalidStateError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import { checkThreadId } from '../checkpoint/check-arguments.js';

/** Options of `agent.fork()`. */
export interface AgentForkOptions {
  /** The cut-off: the fork keeps the messages `[0, atSeq)` (default: all of them, the thread's `seq`). */
  readonly atSeq?: number | undefined;
  /** The fork's thread id (default: a random UUID). It must not exist yet. */
  readonly newThreadId?: string | undefined;
}

/** Options of `agent.retryFrom()` and `agent.retryFrom$()`: a run's options, and the fork's thread id. */
export interface RetryFromOptions {
  /** The fork's thread id (default: a random UUID). It must not exist yet. */
  readonly newThreadId?: string | undefined;
}

/** The new thread id a fork gets: the one given (checked now, before any I/O), or a random UUID. */
export function forkThreadId(newThreadId: string | undefined): string {
  if (newThreadId === undefined) return globalThis.crypto.randomUUID();
  checkThreadId(newThreadId);
  return newThreadId;
}

/**
 * What a retry from message `seq` of `messages` sends on the fork `[0, seq)`: for a user message, `edited` (when
 * given) or that message again with a new timestamp; for an assistant message, nothing (the model answers the same
 * history again), and `edited` is refused. A tool result cannot be retried from (the fork would cut its batch).
 * Throws {@link InvalidInputError} for a `seq` that names no message or a message that cannot be retried from, and
 * {@link InvalidStateError} when the history before an assistant message cannot be resumed (it is empty, or ends with
 * another assistant message).
 */
export function retryPrompts(messages: readonly Message[], seq: number, edited: Message[] | undefined): Message[] {
  if (!Number.isSafeInteger(seq) || seq < 0 || seq >= messages.length) {
    throw new InvalidInputError(
      `retryFrom(): seq must name a message of the thread (an integer from 0 to ${messages.length - 1}), ` +
        `got ${String(seq)}`,
    );
  }
  const target = messages[seq]!;
  if (target.role === 'user') return edited ?? [{ ...target, timestamp: Date.now() }];
  if (target.role === 'toolResult') {
    throw new InvalidInputError(
      `retryFrom(): message ${seq} is a tool result; retry from the assistant message that called the tool, or ` +
        'from the user message before it',
    );
  }
  if (edited !== undefined) {
    throw new InvalidInputError(
      `retryFrom(): message ${seq} is an assistant message, which is regenerated, not edited: drop the new input, ` +
        'or retry from the user message before it',
    );
  }
  const previous = messages[seq - 1];
  if (previous === undefined || previous.role === 'assistant') {
    throw new InvalidStateError(
      `retryFrom(): the history before message ${seq} ${previous === undefined ? 'is empty' : 'ends with an assistant message'}, so there is nothing to answer again`,
    );
  }
  return [];
}
