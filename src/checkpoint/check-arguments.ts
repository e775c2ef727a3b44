/**
 * Argument checks shared by the built-in checkpointers, so every backend refuses the same bad input the same way
 * (`InvalidInputError`) before touching its store.
 * @module
 */
import { InvalidInputError } from '../types/errors.js';
import type { AppendOptions, ListThreadsOptions } from './checkpointer.js';

/** The page size of `listThreads` when no `limit` is given. */
const DEFAULT_LIST_LIMIT = 100;

/** Throws unless `threadId` is a non-empty string. */
export function checkThreadId(threadId: unknown): asserts threadId is string {
  if (typeof threadId !== 'string' || threadId.length === 0) {
    throw new InvalidInputError(`A thread id must be a non-empty string, got ${JSON.stringify(threadId) ?? threadId}`);
  }
}

/** The `expectedSeq` of `append` options, checked: a non-negative integer or `undefined`. */
export function checkExpectedSeq(options: AppendOptions | undefined): number | undefined {
  const expected = options?.expectedSeq;
  if (expected === undefined) return undefined;
  if (!Number.isSafeInteger(expected) || expected < 0) {
    throw new InvalidInputError(`expectedSeq must be a non-negative integer, got ${String(expected)}`);
  }
  return expected;
}

/** Throws unless `extra` is a plain record (not `null`, not an array). */
export function checkExtra(extra: unknown): asserts extra is Readonly<Record<string, unknown>> {
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) {
    throw new InvalidInputError('extra must be a plain object');
  }
}

/**
 * `listThreads` options, checked and decoded. The built-ins number threads in creation order (1, 2, …, never
 * reused) and use that number, in decimal, as the cursor: `before` is the number of the cursor's thread.
 */
export function checkListOptions(options: ListThreadsOptions | undefined): { limit: number; before?: number } {
  const limit = options?.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new InvalidInputError(`limit must be a positive integer, got ${String(limit)}`);
  }
  const after = options?.after;
  if (after === undefined) return { limit };
  const before = typeof after === 'string' && /^[1-9][0-9]{0,15}$/.test(after) ? Number(after) : NaN;
  if (!Number.isSafeInteger(before)) {
    throw new InvalidInputError(`Not a thread cursor: ${JSON.stringify(after) ?? String(after)}`);
  }
  return { limit, before };
}

/** The cursor of the thread numbered `order` (see {@link checkListOptions}). */
export function cursorOf(order: number): string {
  return String(order);
}
