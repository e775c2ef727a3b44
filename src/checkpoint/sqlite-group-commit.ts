/**
 * Group commit for one better-sqlite3 connection: the writes made in the same turn(s) of the event loop, on any
 * thread, run in one transaction (one fsync), each in a savepoint of its own.
 * @module
 */
import type Database from 'better-sqlite3';
import type { CheckpointOperation } from '../types/errors.js';
import { CheckpointError } from '../types/errors.js';
import { isBusy, lockedError, retryWhileBusy } from './retry-while-busy.js';

/** One write waiting for its transaction. */
interface Pending {
  /** The write: a better-sqlite3 transaction function (inside the group's transaction it runs as a savepoint). */
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  readonly operation: CheckpointOperation;
  readonly threadId: string | undefined;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** The most writes one transaction holds, and the time after which it commits what it has run. */
const MAX_WRITES = 512;
const MAX_MS = 8;

/** Thrown out of the group's transaction when a write's error ended the whole transaction (SQLite rolled it back). */
class TransactionLost extends Error {}

/**
 * The writes of a connection, committed in groups: `run(write)` runs a write at once when none is queued or in
 * flight (its own transaction, as a call did before), and otherwise queues it; on the next turn of the event
 * loop (`setImmediate`), every write queued by then — up to {@link MAX_WRITES}, or what runs in {@link MAX_MS} —
 * runs in one `BEGIN IMMEDIATE` transaction, in queue order; each caller's promise settles after that `COMMIT`. What
 * is left runs on the next turn, so one transaction never holds the event loop for long.
 *
 * Per-call semantics are kept: each write runs in a savepoint, so a write that throws (a conflict, a constraint) is
 * rolled back alone and rejects its own caller only; the others commit. When the transaction as a whole fails (its
 * `COMMIT`, or an error after which SQLite rolled everything back), each write of the group runs again in a
 * transaction of its own, so each caller gets its own outcome. A refused `BEGIN` (`SQLITE_BUSY`: another connection
 * holds the lock) is retried with {@link retryWhileBusy}'s backoff, the queue waiting behind it (order is kept). A
 * write made while the connection is inside a transaction of the caller's runs at once, in that transaction.
 */
export class SQLiteGroupCommit {
  readonly #db: Database.Database;
  readonly #limitMs: number;
  readonly #group: Database.Transaction<(writes: readonly Pending[], outcomes: Outcome[]) => void>;
  readonly #onCommit: (() => void) | undefined;
  #queue: Pending[] = [];
  /** A flush is scheduled, or under way (waiting for a lock, or running writes one by one). */
  #busy = false;
  /** Writes taken off the queue whose outcome is still being awaited (a lock wait, a write run alone). */
  #inFlight = 0;
  /** The group's transaction began (its BEGIN succeeded) in the latest attempt. */
  #began = false;

  constructor(db: Database.Database, limitMs: number, onCommit?: () => void) {
    this.#db = db;
    this.#limitMs = limitMs;
    this.#onCommit = onCommit;
    this.#group = db.transaction((writes: readonly Pending[], outcomes: Outcome[]) => {
      this.#began = true;
      const start = performance.now();
      for (let i = 0; i < writes.length; i++) {
        if (i > 0 && performance.now() - start > MAX_MS) return;
        try {
          outcomes.push({ ok: true, value: writes[i]!.run() });
        } catch (error) {
          // The savepoint was rolled back; if SQLite rolled back the whole transaction, nothing here holds.
          if (!db.inTransaction) throw new TransactionLost();
          outcomes.push({ ok: false, error });
        }
      }
    });
  }

  /** Queues `write` (a synchronous transaction function); resolves or rejects as it does, after its commit. */
  run<T>(write: () => T, operation: CheckpointOperation, threadId?: string): Promise<T> {
    if (this.#db.inTransaction) {
      // A transaction of the caller's: the write belongs in it, now (as a savepoint), not in a later group.
      return Promise.resolve(retryWhileBusy(write, { db: this.#db, limitMs: this.#limitMs, operation, threadId }));
    }
    if (!this.#busy && this.#queue.length === 0) {
      // Nothing queued or in flight: this write runs now, alone, as a call did before group commit (an uncontended
      // writer pays no extra turn); the writes that follow it in this turn are queued for one group on the next.
      this.#schedule();
      try {
        const value = write();
        this.#onCommit?.();
        return Promise.resolve(value);
      } catch (error) {
        if (!isBusy(error) || this.#db.inTransaction) return Promise.reject(error);
        // Refused (another connection holds the lock): it heads the queue, which waits for the lock with backoff.
      }
    }
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run: write, resolve: resolve as (value: unknown) => void, reject, operation, threadId });
      this.#schedule();
    });
  }

  /** `undefined` when no write is queued; otherwise a promise that settles once every write queued so far has. */
  settled(): Promise<void> | undefined {
    if (this.#queue.length === 0 && this.#inFlight === 0) return undefined;
    return this.run(() => undefined, 'load').then(
      () => undefined,
      () => undefined,
    );
  }

  #schedule(): void {
    if (this.#busy) return;
    this.#busy = true;
    setImmediate(() => void this.#flush());
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const writes = this.#queue.slice(0, MAX_WRITES);
        if (writes.length === 1) {
          // Alone: its own transaction, no savepoint (what a call cost before group commit).
          const [write] = this.#queue.splice(0, 1) as [Pending];
          this.#inFlight++;
          await this.#alone(write).finally(() => this.#inFlight--);
        } else {
          const outcomes: Outcome[] = [];
          try {
            const attempt = (): void => {
              outcomes.length = 0;
              this.#began = false;
              this.#group.immediate(writes, outcomes);
            };
            const retry = { db: this.#db, limitMs: this.#limitMs, operation: writes[0]!.operation };
            const waited = retryWhileBusy(attempt, retry);
            if (waited !== undefined) await waited;
          } catch (error) {
            if (!this.#began) {
              // The transaction never began (the lock never came, a closed database): nothing was written; each
              // write fails as a call of its own would have.
              this.#queue.splice(0, writes.length);
              for (const write of writes) write.reject(this.#ownError(error, write));
              continue;
            }
            // The transaction failed as a whole: each write again, alone, with its own outcome.
            this.#queue.splice(0, writes.length);
            this.#inFlight += writes.length;
            for (const write of writes) await this.#alone(write).finally(() => this.#inFlight--);
            continue;
          }
          this.#queue.splice(0, outcomes.length);
          this.#onCommit?.();
          for (let i = 0; i < outcomes.length; i++) {
            const outcome = outcomes[i]!;
            if (outcome.ok) writes[i]!.resolve(outcome.value);
            else writes[i]!.reject(outcome.error);
          }
        }
        // The next group on a later turn: timers and I/O run in between.
        if (this.#queue.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#busy = false;
    }
  }

  /** One write in its own transaction (waiting for a held lock without blocking), settling its caller. */
  async #alone(write: Pending): Promise<void> {
    try {
      const retry = { db: this.#db, limitMs: this.#limitMs, operation: write.operation, threadId: write.threadId };
      const value = await retryWhileBusy(write.run, retry);
      this.#onCommit?.();
      write.resolve(value);
    } catch (error) {
      write.reject(error);
    }
  }

  /** `error` (the group's) as the error of `write`'s own call: a lock wait that ran out names its operation and thread. */
  #ownError(error: unknown, write: Pending): unknown {
    if (!(error instanceof CheckpointError) || !isBusy(error.cause)) return error;
    const retry = { db: this.#db, limitMs: this.#limitMs, operation: write.operation, threadId: write.threadId };
    return lockedError(retry, error.cause);
  }
}
