/**
 * Helpers shared by the checkpointer conformance suites (not exported from `cubepi/testing`).
 * @module
 */
import type { Message, UserMessage } from '../types/messages.js';
import { assert } from './assert.js';

export function user(text: string): UserMessage {
  return { role: 'user', content: text, timestamp: 1_700_000_000_000 };
}

export function text(message: Message): string {
  return typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
}

export function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

export async function assertConflict(write: Promise<unknown>, threadId: string, expected: number, actual: number) {
  await assert.rejects(write, (error: unknown) => {
    assertConflictError(error, threadId, expected, actual);
    return true;
  });
}

export function assertConflictError(error: unknown, threadId: string, expected: number, actual: number): void {
  assert.equal(codeOf(error), 'thread_conflict', `a ThreadConflictError, got ${String(error)}`);
  const conflict = error as { threadId: unknown; expected: unknown; actual: unknown };
  assert.deepEqual(
    { threadId: conflict.threadId, expected: conflict.expected, actual: conflict.actual },
    { threadId, expected, actual },
  );
}
