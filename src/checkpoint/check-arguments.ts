/**
 * Argument checks shared by the built-in checkpointers, so every backend refuses the same bad input the same way
 * (`InvalidInputError`) before touching its store.
 * @module
 */
import { InvalidInputError, ThreadConflictError } from '../types/errors.js';
import type { AppendOptions, ForkOptions, ListThreadsOptions } from './checkpointer.js';

/** The page size of `listThreads` when no `limit` is given. */
const DEFAULT_LIST_LIMIT = 100;

/**
 * The longest thread id the built-in checkpointers accept, in UTF-16 code units (`string.length`). At most 1,536 bytes
 * of UTF-8, well under PostgreSQL's limit for an indexed text value.
 */
export const MAX_THREAD_ID_LENGTH = 512;

// A lone surrogate: in a `u` regex a well-formed pair is one code point, so only an unpaired half matches.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Why `threadId` is not a valid thread id, or `undefined` when it is one. A thread id is a string of 1 to
 * {@link MAX_THREAD_ID_LENGTH} UTF-16 code units, well-formed (no unpaired surrogate: `String.prototype.isWellFormed`)
 * and without U+0000. Anything else would be stored altered by some backend (PostgreSQL and SQLite encode text as
 * UTF-8, where a lone surrogate becomes U+FFFD, so two different ids could name one thread) or refused by it (NUL).
 *
 * Every built-in checkpointer refuses such an id with `InvalidInputError` before any I/O, and the conformance kit
 * holds a custom backend to the same rule; use this to do the same in yours.
 */
export function threadIdProblem(threadId: unknown): string | undefined {
  if (typeof threadId !== 'string') return `a thread id must be a string, got ${describe(threadId)}`;
  if (threadId.length === 0) return 'a thread id must not be empty';
  if (threadId.length > MAX_THREAD_ID_LENGTH) {
    return `a thread id must be at most ${MAX_THREAD_ID_LENGTH} characters, got ${threadId.length}`;
  }
  if (LONE_SURROGATE.test(threadId)) {
    return `a thread id must be well-formed UTF-16 (it has an unpaired surrogate): ${JSON.stringify(threadId)}`;
  }
  if (threadId.includes('\0')) return `a thread id must not contain U+0000: ${JSON.stringify(threadId)}`;
  return undefined;
}

/** Throws `InvalidInputError` unless `threadId` is a valid thread id ({@link threadIdProblem}). */
export function checkThreadId(threadId: unknown): asserts threadId is string {
  const problem = threadIdProblem(threadId);
  if (problem !== undefined) throw new InvalidInputError(`Invalid thread id: ${problem}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function') return typeof value;
  return JSON.stringify(value) ?? typeof value;
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
export function checkListOptions(options: ListThreadsOptions | undefined): {
  limit: number;
  before?: number;
  owner?: string;
} {
  const limit = options?.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new InvalidInputError(`limit must be a positive integer, got ${String(limit)}`);
  }
  const owner = options?.owner;
  if (owner !== undefined && (typeof owner !== 'string' || owner === '')) {
    throw new InvalidInputError(`owner must be a non-empty string, got ${JSON.stringify(owner) ?? String(owner)}`);
  }
  const after = options?.after;
  if (after === undefined) return owner === undefined ? { limit } : { limit, owner };
  const before = typeof after === 'string' && /^[1-9][0-9]{0,15}$/.test(after) ? Number(after) : NaN;
  if (!Number.isSafeInteger(before)) {
    throw new InvalidInputError(`Not a thread cursor: ${JSON.stringify(after) ?? String(after)}`);
  }
  return owner === undefined ? { limit, before } : { limit, before, owner };
}

/** A `claimThread` owner, checked: a non-empty string (a `Principal.id`). */
export function checkOwner(owner: unknown): string {
  if (typeof owner !== 'string' || owner === '') {
    throw new InvalidInputError(`owner must be a non-empty string, got ${JSON.stringify(owner) ?? String(owner)}`);
  }
  return owner;
}

/** The cursor of the thread numbered `order` (see {@link checkListOptions}). */
export function cursorOf(order: number): string {
  return String(order);
}

/**
 * `fork` arguments, checked before any I/O: both thread ids valid and `atSeq` a non-negative integer (its upper bound,
 * the parent's `seq`, and whether `newThreadId` is free, are the store's to check).
 */
export function checkForkOptions(threadId: string, options: ForkOptions): { atSeq: number; newThreadId: string } {
  checkThreadId(threadId);
  if (typeof options !== 'object' || options === null) {
    throw new InvalidInputError('fork options must be an object: { atSeq, newThreadId }');
  }
  const { atSeq, newThreadId } = options;
  checkThreadId(newThreadId);
  if (!Number.isSafeInteger(atSeq) || atSeq < 0) {
    throw new InvalidInputError(`atSeq must be a non-negative integer, got ${String(atSeq)}`);
  }
  return { atSeq, newThreadId };
}

/** The `InvalidInputError` of a fork whose parent does not exist. */
export function noSuchParent(threadId: string): InvalidInputError {
  return new InvalidInputError(`Cannot fork thread "${threadId}": it does not exist`);
}

/** The `InvalidInputError` of a fork past the parent's last message. */
export function atSeqOutOfRange(threadId: string, atSeq: number, seq: number): InvalidInputError {
  return new InvalidInputError(
    `Cannot fork thread "${threadId}" at seq ${atSeq}: it has ${seq} message(s), so atSeq must be from 0 to ${seq}`,
  );
}

/** The `ThreadConflictError` of a fork whose new thread id is taken (`expected` 0: no thread; `actual` its `seq`). */
export function forkTargetExists(newThreadId: string, seq: number): ThreadConflictError {
  return new ThreadConflictError(
    newThreadId,
    0,
    seq,
    `Cannot fork into thread "${newThreadId}": it already exists (seq ${seq}); a fork needs a new thread id`,
  );
}
