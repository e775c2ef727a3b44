import { CheckpointError, type CheckpointOperation } from '../types/errors.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';

/** Where {@link retryWhileBusy} runs, and how long it may wait. */
export interface BusyRetry {
  /** The connection, asked after a refusal whether it is inside a transaction of the caller's. */
  readonly db: { readonly inTransaction: boolean };
  /** The total wait allowed, from the first attempt, in milliseconds. */
  readonly limitMs: number;
  readonly operation: CheckpointOperation;
  readonly threadId?: string | undefined;
}

// Backoff between attempts: 1, 2, 4, 8, 16 ms, then 25 ms, each shortened by up to half at random so that waiters
// (in this process or others) spread out. A failed attempt costs microseconds, so polling every ~25 ms is free, and
// a released lock is picked up within that.
const FIRST_DELAY_MS = 1;
const MAX_DELAY_MS = 25;

/**
 * Runs one SQLite transaction (`attempt`, synchronous) and, while SQLite refuses it with `SQLITE_BUSY` (another
 * connection holds the lock it needs), runs it again on later turns of the event loop, with a capped exponential
 * backoff, until `limitMs` have passed since the first attempt.
 *
 * Returns the result itself when the first attempt succeeds (the common case: no Promise, no timer), and throws,
 * synchronously, a first error that is not a refusal. Otherwise returns a Promise that resolves with the first attempt
 * that succeeds; rejects with the first error that is not a refusal (as `toCheckpointError` makes it), or, past the
 * limit, with a `CheckpointError` saying the database was locked (`cause`: SQLite's last refusal).
 *
 * `attempt` must be a whole transaction that wrote nothing when it threw (better-sqlite3's `transaction()` rolls
 * back): that is what makes running it again safe. A refusal inside a transaction of the caller's (`db.inTransaction`
 * still true after it) is not retried: a later attempt would run outside that transaction.
 */
export function retryWhileBusy<T>(attempt: () => T, retry: BusyRetry): T | Promise<T> {
  const start = performance.now();
  try {
    return attempt();
  } catch (error) {
    if (!isBusy(error) || retry.db.inTransaction) throw error;
    return retryLater(attempt, retry, start, error);
  }
}

async function retryLater<T>(attempt: () => T, retry: BusyRetry, start: number, refusal: unknown): Promise<T> {
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(2 * delay, MAX_DELAY_MS)) {
    const left = retry.limitMs - (performance.now() - start);
    if (left <= 0) throw lockedError(retry, refusal);
    // The last attempt is made at the limit, not before it.
    await sleep(Math.min(left, delay * (0.5 + Math.random() / 2)));
    try {
      return attempt();
    } catch (error) {
      if (!isBusy(error) || retry.db.inTransaction) throw toCheckpointError(error, retry.operation, retry.threadId);
      refusal = error;
    }
  }
}

/** Whether `error` is one of SQLite's refusals for a lock held elsewhere: `SQLITE_BUSY` and its extended codes (`_SNAPSHOT`, `_RECOVERY`, …). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'));
}

/** The error of a call that waited for the lock for all of `retry.limitMs` (`cause`: SQLite's last refusal). */
export function lockedError(retry: BusyRetry, refusal: unknown): CheckpointError {
  const where = retry.threadId === undefined ? '' : ` for thread "${retry.threadId}"`;
  return new CheckpointError({
    operation: retry.operation,
    ...(retry.threadId === undefined ? {} : { threadId: retry.threadId }),
    cause: refusal,
    message:
      `Checkpoint ${retry.operation} failed${where}: the database was locked ` +
      `(another connection held the lock for all of busyTimeoutMs, ${retry.limitMs} ms)`,
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
