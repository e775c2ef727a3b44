/**
 * `cubepi/checkpoint/sqlite`: a `Checkpointer` on one SQLite file, through better-sqlite3.
 * @module
 */
import Database from 'better-sqlite3';
import {
  CheckpointSchemaError,
  ConfigurationError,
  ThreadConflictError,
  ThreadHasForksError,
} from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type {
  AppendOptions,
  AppendResult,
  CheckpointData,
  Checkpointer,
  ForkOptions,
  ForkResult,
  ListThreadsOptions,
  ThreadInfo,
} from './checkpointer.js';
import {
  atSeqOutOfRange,
  checkExpectedSeq,
  checkExtra,
  checkForkOptions,
  checkListOptions,
  checkOwner,
  checkThreadId,
  cursorOf,
  forkTargetExists,
  noSuchParent,
} from './check-arguments.js';
import { decodeExtra, decodeMessage, encodeExtra, encodeMessages } from '../types/row-codec.js';
import { checkStoredRows } from './check-stored-rows.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import { retryWhileBusy } from './retry-while-busy.js';
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { checkBlobThreshold, hasFiles, offloadFiles, type BlobOptions, type OffloadedBatch } from './offload-files.js';
import { insertBlobStatement, SQLiteBlobStore } from './sqlite-blob-store.js';
import { SerialQueue } from './serial-queue.js';
import { SQLiteGroupCommit } from './sqlite-group-commit.js';
import { SQLiteWalWorker } from './sqlite-wal-worker.js';
import { SQLiteStore, type SQLiteStoreOptions } from './sqlite-store.js';

export { SQLiteBlobStore };
export { SQLiteStore, type SQLiteStoreOptions } from './sqlite-store.js';
export type {
  JsonValue,
  ListOptions,
  ListPage,
  Namespace,
  PutOptions,
  SearchItem,
  SearchOptions,
  Store,
  StoreItem,
} from '../types/store.js';

export type {
  AppendOptions,
  AppendResult,
  CheckpointData,
  Checkpointer,
  ForkOptions,
  ForkResult,
  ListThreadsOptions,
  ThreadInfo,
};

/**
 * Options of {@link SQLiteCheckpointer}. `blobs` defaults to the file's own `<prefix>blobs` table
 * ({@link SQLiteBlobStore}), written in the same transaction as the rows.
 */
export interface SQLiteCheckpointerOptions extends BlobOptions {
  /**
   * Prefix of the tables' names (`<prefix>threads`, `<prefix>messages`, `<prefix>schema_version`, `<prefix>blobs`,
   * `<prefix>blob_refs`), so several stores can share one file. Letters, digits and `_`; default `cubepi_`.
   */
  readonly tablePrefix?: string | undefined;
  /**
   * `PRAGMA synchronous`, set only on a file this checkpointer opens: `'full'` (the default) makes every append
   * durable before it resolves, even across a power loss; `'normal'` skips the fsync per commit (WAL keeps the file
   * consistent, a crash of the process loses nothing, a power loss may lose the last appends).
   */
  readonly synchronous?: 'full' | 'normal' | undefined;
  /**
   * How long a call may wait, in milliseconds, while another connection holds the lock it needs (a writer in another
   * process, a long transaction of yours on another `Database`): past it, the call rejects with a `CheckpointError`
   * saying the database was locked, having written nothing. Default 5000 (better-sqlite3's own default). An integer
   * from 0 (never wait).
   *
   * The wait does not block the event loop: SQLite's refusal comes back at once and the call is tried again on later
   * turns, after 1, 2, 4, … ms, then every ~25 ms, so other agents in the process keep running. That needs the
   * connection's own busy handler off, which this checkpointer does (`PRAGMA busy_timeout = 0`) on a file it opens,
   * once its constructor is done. A `Database` passed in keeps its own busy timeout (better-sqlite3's default: 5 s,
   * blocking): open it with `{ timeout: 0 }` for the same behaviour.
   */
  readonly busyTimeoutMs?: number | undefined;
}

/** The schema version this code writes and reads. A store at a newer version is refused. */
export const SQLITE_SCHEMA_VERSION = 4;

// Migration n (index n - 1) takes a store from version n - 1 to n. Never edit one that was released: add the next.
const MIGRATIONS: readonly ((prefix: string) => string)[] = [
  (p) => `
    CREATE TABLE "${p}threads" (
      id INTEGER PRIMARY KEY AUTOINCREMENT,  -- creation order, never reused: the listThreads cursor
      thread_id TEXT NOT NULL UNIQUE,
      next_seq INTEGER NOT NULL,             -- the number of messages stored (no MAX(seq) scan)
      extra TEXT NOT NULL,                   -- canonical JSON
      created_at INTEGER NOT NULL,           -- ms since the epoch
      updated_at INTEGER NOT NULL
    );
    CREATE TABLE "${p}messages" (
      thread_id TEXT NOT NULL,
      seq INTEGER NOT NULL,                  -- 0, 1, 2, … within the thread
      body TEXT NOT NULL,                    -- canonical JSON of the message
      PRIMARY KEY (thread_id, seq)
    );`,
  // 2: forks. A fork's own messages are rows of its own from fork_seq on; [0, fork_seq) are its parent's (by the
  // parent's row id, which is older: ids only grow). Existing threads get no parent and fork_seq 0: unchanged.
  (p) => `
    ALTER TABLE "${p}threads" ADD COLUMN parent_id INTEGER;
    ALTER TABLE "${p}threads" ADD COLUMN fork_seq INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX "${p}threads_parent" ON "${p}threads" (parent_id) WHERE parent_id IS NOT NULL;`,
  // 3: owners. The Principal.id that created the thread (claimThread); existing threads get NULL: unowned.
  (p) => `
    ALTER TABLE "${p}threads" ADD COLUMN owner TEXT;
    CREATE INDEX "${p}threads_owner" ON "${p}threads" (owner, id) WHERE owner IS NOT NULL;`,
  // 4: files stored by reference. blobs: the bytes by content address (when the store is this file's own);
  // blob_refs: which thread refers to which blob (a fork's rows include the ones it shares), so deleting a thread
  // deletes the blobs no other thread refers to. Existing threads hold no refs.
  (p) => `
    CREATE TABLE "${p}blobs" (
      ref TEXT NOT NULL PRIMARY KEY,         -- sha256:<hex> of the bytes
      size INTEGER NOT NULL,
      bytes BLOB NOT NULL
    );
    CREATE TABLE "${p}blob_refs" (
      thread_id TEXT NOT NULL,
      ref TEXT NOT NULL,
      first_seq INTEGER NOT NULL,            -- the first message of the thread holding it (a fork copies those below its cut-off)
      PRIMARY KEY (thread_id, ref)
    ) WITHOUT ROWID;
    CREATE INDEX "${p}blob_refs_ref" ON "${p}blob_refs" (ref);`,
];

const PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;

/** How long after a commit the WAL is checkpointed (on a file this checkpointer opened). */
const CHECKPOINT_DELAY_MS = 200;

type ThreadRow = { id: number; next_seq: number };
type ListRow = {
  id: number;
  thread_id: string;
  next_seq: number;
  created_at: number;
  updated_at: number;
  parent: string | null;
  fork_seq: number;
  owner: string | null;
};
type LoadedThread = { next_seq: number; extra: string; parent_id: number | null };

/**
 * A `Checkpointer` on a SQLite file (better-sqlite3 12), for one machine: a CLI, a desktop app, a single server.
 *
 * - `new SQLiteCheckpointer('threads.db')` opens (or creates) the file and owns it: `close()` closes it.
 *   `new SQLiteCheckpointer(db)` uses an open better-sqlite3 `Database` and leaves it open on `close()`.
 * - The file is switched to WAL (readers never block the writer). Tables are created, and later migrated, by the
 *   constructor itself in one `BEGIN IMMEDIATE` transaction, so processes opening the same file at once do it once.
 *   A store written by a newer cubepi is refused with a `CheckpointSchemaError` before anything is written.
 * - A load is one range scan of the `(thread_id, seq)` primary key; an append is one transaction: a lookup of the
 *   thread's `next_seq`, the new rows, and the counter update — its cost does not depend on the thread's length.
 *   Appends take the write lock at their start (`BEGIN IMMEDIATE`), so `expectedSeq` holds across processes.
 * - Group commit: a write (`append`, `saveExtra`, `fork`, `claimThread`, `deleteThread`) with none queued runs in
 *   its call; the writes called after it in that turn of the event loop, on any threads, run on the next turn in one
 *   transaction (one fsync with `synchronous: 'full'`),
 *   in call order, each in a savepoint: a write that fails rejects its own caller, nothing of it written, and the
 *   others commit. A promise resolves after its transaction's `COMMIT` (an acknowledged append survives `kill -9`).
 *   At most 512 writes or ~8 ms of statements per transaction. Reads wait for the writes called before them. On a
 *   file it opens, `wal_autocheckpoint` is off: a PASSIVE checkpoint runs in a worker thread ~200 ms after writes.
 * - A group that finds the database locked by another connection does not wait on the thread:
 *   it is tried again on later turns of the event loop, with backoff, for up to `busyTimeoutMs` (default 5 s), so
 *   the other agents of the process keep running meanwhile. The constructor is synchronous: when it must create or
 *   migrate the tables (or switch the file to WAL) while another connection holds the lock, it waits for it on the
 *   thread, up to `busyTimeoutMs` on a file it opens; opening a store already at the current version needs no lock.
 *
 * Errors: a failed statement (disk full, a closed database) is a `CheckpointError` naming the thread, as is a call
 * that found the database locked for all of `busyTimeoutMs` (it wrote nothing); a row that cannot be read back is a
 * `CheckpointCorruptionError` naming thread and seq.
 *
 * @example
 * import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
 * const checkpointer = new SQLiteCheckpointer('threads.db');
 * const agent = new Agent({ provider, model, checkpointer, threadId: 'user-42' });
 */
export class SQLiteCheckpointer implements Checkpointer {
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #busyTimeoutMs: number;
  readonly #read: Database.Transaction<(threadId: string) => (LoadedThread & { rows: [number, string][] }) | undefined>;
  readonly #write: Database.Transaction<
    (threadId: string, rows: string[], expected: number | undefined, batch: OffloadedBatch | undefined) => number
  >;
  readonly #delete: Database.Transaction<(threadId: string) => BlobRef[]>;
  /** The store file bytes go to; `undefined` with `blobs: false`. */
  readonly blobs: BlobStore | undefined;
  readonly #ownBlobs: boolean;
  readonly #threshold: number;
  readonly #blobQueue = new SerialQueue();
  readonly #insertBlob: Database.Statement<[string, number, Uint8Array]>;
  readonly #insertRef: Database.Statement<[string, string, number]>;
  readonly #deleteRefs: Database.Statement<[string], string>;
  readonly #deleteUnreferenced: Database.Statement<[string, string]>;
  readonly #isReferenced: Database.Statement<[string], number>;
  readonly #copyRefs: Database.Statement<[string, string, number]>;
  readonly #fork: Database.Transaction<(threadId: string, atSeq: number, newThreadId: string) => void>;
  readonly #selectThread: Database.Statement<[string], ThreadRow>;
  readonly #insertThread: Database.Statement<[string, number, string, number, number]>;
  readonly #updateSeq: Database.Statement<[number, number, number]>;
  readonly #insertMessage: Database.Statement<[string, number, string]>;
  readonly #loadThread: Database.Statement<[string], LoadedThread>;
  readonly #loadMessages: Database.Statement<[string], [number, string]>;
  readonly #loadForkMessages: Database.Statement<[string], [number, string]>;
  readonly #selectParent: Database.Statement<
    [string],
    { id: number; next_seq: number; extra: string; owner: string | null }
  >;
  readonly #claim: Database.Statement<[string, number, number, string]>;
  readonly #selectOwner: Database.Statement<[string], { owner: string | null }>;
  readonly #claimOwner: Database.Transaction<(threadId: string, owner: string) => string | null>;
  readonly #listOwned: Database.Statement<[string, number, number], ListRow>;
  readonly #insertFork: Database.Statement<[string, number, string, number, number, number, number, string | null]>;
  readonly #selectForks: Database.Statement<[string], string>;
  readonly #upsertExtra: Database.Statement<[string, string, number, number]>;
  readonly #list: Database.Statement<[number, number], ListRow>;
  readonly #deleteMessages: Database.Statement<[string]>;
  readonly #deleteThread: Database.Statement<[string]>;
  readonly #commits: SQLiteGroupCommit;
  /** The timer of the next WAL checkpoint (a file this checkpointer opened: autocheckpoint is off on it). */
  #checkpointTimer: NodeJS.Timeout | undefined;
  /** The thread that runs those checkpoints (a file on disk), started with the first one. */
  readonly #walWorker: SQLiteWalWorker | undefined;

  /**
   * Opens the store, creating or migrating its tables. Throws `ConfigurationError` for a bad `tablePrefix`,
   * `CheckpointSchemaError` for a store newer than this code, `CheckpointError` when the file cannot be opened (or
   * stays locked by another connection for `busyTimeoutMs` while it must be set up: this wait blocks the thread).
   */
  constructor(pathOrDatabase: string | Database.Database, options: SQLiteCheckpointerOptions = {}) {
    const prefix = options.tablePrefix ?? 'cubepi_';
    if (!PREFIX.test(prefix)) {
      throw new ConfigurationError(`tablePrefix must be letters, digits and _ (at most 40), got "${prefix}"`);
    }
    const synchronous = options.synchronous ?? 'full';
    if (synchronous !== 'full' && synchronous !== 'normal') {
      throw new ConfigurationError(`synchronous must be 'full' or 'normal', got "${String(synchronous)}"`);
    }
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 0x7fffffff) {
      throw new ConfigurationError(`busyTimeoutMs must be an integer from 0 to 2^31 - 1, got ${String(busyTimeoutMs)}`);
    }
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#threshold = checkBlobThreshold(options);
    this.#ownBlobs = options.blobs === undefined;
    this.#owned = typeof pathOrDatabase === 'string';
    try {
      // The constructor cannot wait asynchronously: while it sets the file up, SQLite's own busy handler waits.
      this.#db =
        typeof pathOrDatabase === 'string' ? new Database(pathOrDatabase, { timeout: busyTimeoutMs }) : pathOrDatabase;
    } catch (error) {
      throw toCheckpointError(error, 'open');
    }
    try {
      const db = this.#db;
      db.pragma('journal_mode = WAL');
      if (this.#owned) db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
      // Checkpoints out of the commits' path: on a timer after writes (#scheduleCheckpoint), never inside a COMMIT.
      if (this.#owned) db.pragma('wal_autocheckpoint = 0');
      migrate(db, prefix);
      // From here on a refusal comes back at once and retryWhileBusy waits without blocking the event loop.
      if (this.#owned) db.pragma('busy_timeout = 0');
      this.#walWorker = this.#owned && !db.memory ? new SQLiteWalWorker(db.name) : undefined;
      this.#commits = new SQLiteGroupCommit(
        db,
        busyTimeoutMs,
        this.#owned ? () => this.#scheduleCheckpoint() : undefined,
      );
      const threads = `"${prefix}threads"`;
      const messages = `"${prefix}messages"`;
      const blobs = `"${prefix}blobs"`;
      const refs = `"${prefix}blob_refs"`;
      this.blobs =
        options.blobs === false ? undefined : (options.blobs ?? new SQLiteBlobStore(this.#db, blobs, busyTimeoutMs));
      this.#insertBlob = insertBlobStatement(db, blobs);
      this.#insertRef = db.prepare(
        `INSERT INTO ${refs} (thread_id, ref, first_seq) VALUES (?, ?, ?) ON CONFLICT (thread_id, ref) DO NOTHING`,
      );
      this.#deleteRefs = db.prepare<[string], string>(`DELETE FROM ${refs} WHERE thread_id = ? RETURNING ref`).pluck();
      this.#deleteUnreferenced = db.prepare(
        `DELETE FROM ${blobs} WHERE ref = ? AND NOT EXISTS (SELECT 1 FROM ${refs} WHERE ref = ?)`,
      );
      this.#isReferenced = db.prepare<[string], number>(`SELECT 1 FROM ${refs} WHERE ref = ? LIMIT 1`).pluck();
      this.#copyRefs = db.prepare(
        `INSERT INTO ${refs} (thread_id, ref, first_seq)
         SELECT ?, ref, first_seq FROM ${refs} WHERE thread_id = ? AND first_seq < ?`,
      );
      this.#selectThread = db.prepare(`SELECT id, next_seq FROM ${threads} WHERE thread_id = ?`);
      this.#insertThread = db.prepare(
        `INSERT INTO ${threads} (thread_id, next_seq, extra, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
      );
      this.#updateSeq = db.prepare(`UPDATE ${threads} SET next_seq = ?, updated_at = ? WHERE id = ?`);
      this.#insertMessage = db.prepare(`INSERT INTO ${messages} (thread_id, seq, body) VALUES (?, ?, ?)`);
      this.#loadThread = db.prepare(`SELECT next_seq, extra, parent_id FROM ${threads} WHERE thread_id = ?`);
      this.#loadMessages = db
        .prepare<[string], [number, string]>(`SELECT seq, body FROM ${messages} WHERE thread_id = ? ORDER BY seq`)
        .raw(true);
      this.#loadForkMessages = db.prepare<[string], [number, string]>(forkMessagesSql(threads, messages)).raw(true);
      this.#selectParent = db.prepare(`SELECT id, next_seq, extra, owner FROM ${threads} WHERE thread_id = ?`);
      this.#insertFork = db.prepare(
        `INSERT INTO ${threads} (thread_id, next_seq, extra, created_at, updated_at, parent_id, fork_seq, owner)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      this.#claim = db.prepare(
        `INSERT INTO ${threads} (thread_id, next_seq, extra, created_at, updated_at, owner) VALUES (?, 0, '{}', ?, ?, ?)
         ON CONFLICT (thread_id) DO NOTHING`,
      );
      this.#selectOwner = db.prepare<[string], { owner: string | null }>(
        `SELECT owner FROM ${threads} WHERE thread_id = ?`,
      );
      this.#selectForks = db
        .prepare<[string], string>(
          `SELECT f.thread_id FROM ${threads} f JOIN ${threads} p ON f.parent_id = p.id WHERE p.thread_id = ?
           ORDER BY f.id`,
        )
        .pluck();
      this.#upsertExtra = db.prepare(
        `INSERT INTO ${threads} (thread_id, next_seq, extra, created_at, updated_at) VALUES (?, 0, ?, ?, ?)
         ON CONFLICT (thread_id) DO UPDATE SET extra = excluded.extra, updated_at = excluded.updated_at`,
      );
      const listColumns = `t.id, t.thread_id, t.next_seq, t.created_at, t.updated_at, p.thread_id AS parent,
         t.fork_seq, t.owner FROM ${threads} t LEFT JOIN ${threads} p ON p.id = t.parent_id`;
      this.#list = db.prepare(`SELECT ${listColumns} WHERE t.id < ? ORDER BY t.id DESC LIMIT ?`);
      this.#listOwned = db.prepare(`SELECT ${listColumns} WHERE t.owner = ? AND t.id < ? ORDER BY t.id DESC LIMIT ?`);
      this.#claimOwner = db.transaction((threadId: string, owner: string) => {
        const now = Date.now();
        this.#claim.run(threadId, now, now, owner);
        return this.#selectOwner.get(threadId)!.owner;
      });
      this.#deleteMessages = db.prepare(`DELETE FROM ${messages} WHERE thread_id = ?`);
      this.#deleteThread = db.prepare(`DELETE FROM ${threads} WHERE thread_id = ?`);
      // One read transaction: the counter and the rows come from the same snapshot, whatever other processes do.
      this.#read = db.transaction((threadId: string) => {
        const thread = this.#loadThread.get(threadId);
        if (thread === undefined) return undefined;
        // A thread that is not a fork (most): the plain range scan. A fork: its chain of parents in one query.
        const rows = (thread.parent_id === null ? this.#loadMessages : this.#loadForkMessages).all(threadId);
        return { ...thread, rows };
      });
      this.#write = db.transaction((threadId: string, rows: string[], expected?: number, batch?: OffloadedBatch) => {
        const thread = this.#selectThread.get(threadId);
        const actual = thread?.next_seq ?? 0;
        if (expected !== undefined && expected !== actual) throw new ThreadConflictError(threadId, expected, actual);
        if (rows.length === 0) return actual;
        const now = Date.now();
        const next = actual + rows.length;
        if (thread === undefined) this.#insertThread.run(threadId, next, '{}', now, now);
        else this.#updateSeq.run(next, now, thread.id);
        for (let i = 0; i < rows.length; i++) this.#insertMessage.run(threadId, actual + i, rows[i]!);
        if (batch !== undefined) {
          // The bytes (own table) and the references, in the rows' transaction: all of it lands, or none.
          if (this.#ownBlobs) for (const [ref, bytes] of batch.blobs) this.#insertBlob.run(ref, bytes.length, bytes);
          for (const [ref, index] of batch.refs) this.#insertRef.run(threadId, ref, actual + index);
        }
        return next;
      });
      // Resolves with the blobs no thread refers to any more (deleted already when they are in the own table).
      this.#delete = db.transaction((threadId: string) => {
        const forks = this.#selectForks.all(threadId);
        if (forks.length > 0) throw new ThreadHasForksError(threadId, forks);
        this.#deleteMessages.run(threadId);
        this.#deleteThread.run(threadId);
        const unreferenced: BlobRef[] = [];
        for (const ref of this.#deleteRefs.all(threadId)) {
          if (this.#ownBlobs) this.#deleteUnreferenced.run(ref, ref);
          else if (this.#isReferenced.get(ref) === undefined) unreferenced.push(ref as BlobRef);
        }
        return unreferenced;
      });
      // One row written, whatever the parent's length: a pointer and a cut-off.
      this.#fork = db.transaction((threadId: string, atSeq: number, newThreadId: string) => {
        const parent = this.#selectParent.get(threadId);
        if (parent === undefined) throw noSuchParent(threadId);
        if (atSeq > parent.next_seq) throw atSeqOutOfRange(threadId, atSeq, parent.next_seq);
        const taken = this.#selectThread.get(newThreadId);
        if (taken !== undefined) throw forkTargetExists(newThreadId, taken.next_seq);
        const now = Date.now();
        this.#insertFork.run(newThreadId, atSeq, parent.extra, now, now, parent.id, atSeq, parent.owner);
        // The fork refers to the blobs of the messages it shares (one row per distinct blob, not per message).
        this.#copyRefs.run(newThreadId, threadId, atSeq);
      });
    } catch (error) {
      if (this.#owned) this.#db.close();
      throw toCheckpointError(error, 'open');
    }
  }

  /** {@inheritDoc Checkpointer.load} */
  async load(threadId: string): Promise<CheckpointData | null> {
    try {
      checkThreadId(threadId);
      await this.#commits.settled(); // the writes called before this load, committed
      const read = (): CheckpointData | null => {
        const found = this.#read.deferred(threadId);
        if (found === undefined) return null;
        checkStoredRows(threadId, found.next_seq, found.rows);
        const messages = found.rows.map(([seq, body]) => decodeMessage(threadId, seq, body));
        return { messages, extra: decodeExtra(threadId, found.extra), seq: messages.length };
      };
      return retryWhileBusy(read, { db: this.#db, limitMs: this.#busyTimeoutMs, operation: 'load', threadId });
    } catch (error) {
      throw toCheckpointError(error, 'load', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.append} */
  async append(threadId: string, messages: readonly Message[], options?: AppendOptions): Promise<AppendResult> {
    try {
      checkThreadId(threadId);
      const expected = checkExpectedSeq(options);
      if (this.blobs !== undefined && hasFiles(messages)) return await this.#appendFiles(threadId, messages, expected);
      const rows = encodeMessages(threadId, messages);
      // IMMEDIATE: take the write lock before reading next_seq, so no other process can write between the check and
      // the insert (a deferred transaction would fail to upgrade instead of waiting).
      const write = (): AppendResult => ({ seq: this.#write.immediate(threadId, rows, expected, undefined) });
      return await this.#commits.run(write, 'append', threadId);
    } catch (error) {
      throw toCheckpointError(error, 'append', threadId);
    }
  }

  /** An append whose batch holds files: their bytes to the blob store, the rows with `ref`s. */
  async #appendFiles(
    threadId: string,
    messages: readonly Message[],
    expected: number | undefined,
  ): Promise<AppendResult> {
    const batch = await offloadFiles(messages, this.#threshold);
    const rows = encodeMessages(threadId, batch.messages);
    const write = (): AppendResult => ({ seq: this.#write.immediate(threadId, rows, expected, batch) });
    if (this.#ownBlobs) return this.#commits.run(write, 'append', threadId);
    const external = this.blobs!;
    // The caller's store first (a failed put writes no row), then the rows; one at a time with this process's
    // deletions, so a deletion cannot remove a blob between its put and the row that refers to it.
    return this.#blobQueue.run(async () => {
      for (const [ref, bytes] of batch.blobs) {
        const stored = await external.put(bytes);
        if (stored !== ref) throw new Error(`The blob store stored ${ref} as ${String(stored)}`);
      }
      try {
        return await this.#commits.run(write, 'append', threadId);
      } catch (error) {
        // Nothing written (a conflict, a locked file): take back the blobs nothing refers to.
        // (A failed clean-up leaves an unreferenced blob, harmless; the append's own error is the one reported.)
        for (const ref of batch.blobs.keys()) {
          if (this.#isReferenced.get(ref) === undefined) await external.delete(ref).catch(() => undefined);
        }
        throw error;
      }
    });
  }

  /** {@inheritDoc Checkpointer.saveExtra} */
  async saveExtra(threadId: string, extra: Readonly<Record<string, unknown>>): Promise<void> {
    try {
      checkThreadId(threadId);
      checkExtra(extra);
      const encoded = encodeExtra(threadId, extra);
      const write = (): void => {
        const now = Date.now();
        this.#upsertExtra.run(threadId, encoded, now, now);
      };
      return await this.#commits.run(write, 'saveExtra', threadId);
    } catch (error) {
      throw toCheckpointError(error, 'saveExtra', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.listThreads} */
  async listThreads(options?: ListThreadsOptions): Promise<ThreadInfo[]> {
    try {
      const { limit, before, owner } = checkListOptions(options);
      await this.#commits.settled();
      const rows = (): ListRow[] =>
        owner === undefined
          ? this.#list.all(before ?? Number.MAX_SAFE_INTEGER, limit)
          : this.#listOwned.all(owner, before ?? Number.MAX_SAFE_INTEGER, limit);
      const list = (): ThreadInfo[] =>
        rows().map((row) => ({
          threadId: row.thread_id,
          messageCount: row.next_seq,
          createdAt: row.created_at,
          updatedAt: row.updated_at,
          cursor: cursorOf(row.id),
          ...(row.parent === null ? {} : { parent: { threadId: row.parent, atSeq: row.fork_seq } }),
          ...(row.owner === null ? {} : { owner: row.owner }),
        }));
      return retryWhileBusy(list, { db: this.#db, limitMs: this.#busyTimeoutMs, operation: 'listThreads' });
    } catch (error) {
      throw toCheckpointError(error, 'listThreads');
    }
  }

  /** {@inheritDoc Checkpointer.claimThread} */
  async claimThread(threadId: string, owner: string): Promise<string | null> {
    try {
      checkThreadId(threadId);
      checkOwner(owner);
      const claim = (): string | null => this.#claimOwner.immediate(threadId, owner);
      return await this.#commits.run(claim, 'claimThread', threadId);
    } catch (error) {
      throw toCheckpointError(error, 'claimThread', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.threadOwner} */
  async threadOwner(threadId: string): Promise<string | null | undefined> {
    try {
      checkThreadId(threadId);
      await this.#commits.settled();
      const read = (): string | null | undefined => this.#selectOwner.get(threadId)?.owner;
      return retryWhileBusy(read, { db: this.#db, limitMs: this.#busyTimeoutMs, operation: 'threadOwner', threadId });
    } catch (error) {
      throw toCheckpointError(error, 'threadOwner', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.deleteThread} */
  async deleteThread(threadId: string): Promise<void> {
    try {
      checkThreadId(threadId);
      const remove = (): BlobRef[] => this.#delete.immediate(threadId);
      const unreferenced = await this.#commits.run(remove, 'deleteThread', threadId);
      if (unreferenced.length === 0) return;
      // The caller's store: after the rows are gone (a failed deletion leaves an unreferenced blob, never a dangling
      // ref), checking again that no thread took the blob meanwhile.
      const external = this.blobs!;
      await this.#blobQueue.run(async () => {
        for (const ref of unreferenced) if (this.#isReferenced.get(ref) === undefined) await external.delete(ref);
      });
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.fork} */
  async fork(threadId: string, options: ForkOptions): Promise<ForkResult> {
    try {
      const { atSeq, newThreadId } = checkForkOptions(threadId, options);
      const fork = (): ForkResult => {
        this.#fork.immediate(threadId, atSeq, newThreadId);
        return { threadId: newThreadId, seq: atSeq };
      };
      return await this.#commits.run(fork, 'fork', threadId);
    } catch (error) {
      throw toCheckpointError(error, 'fork', threadId);
    }
  }

  /**
   * A {@link SQLiteStore} on this checkpointer's file and connection (table `<tablePrefix>store_items`, default
   * `cubepi_`; created if missing), with this checkpointer's busy timeout unless `options` says otherwise: memory
   * across threads next to the threads. Closing the checkpointer closes the connection the store uses.
   */
  store(options: SQLiteStoreOptions = {}): SQLiteStore {
    return new SQLiteStore(this.#db, { busyTimeoutMs: this.#busyTimeoutMs, ...options });
  }

  /**
   * Closes the database if this checkpointer opened it (a `Database` passed in stays open), once the writes called
   * before it have settled. Idempotent.
   */
  async close(): Promise<void> {
    await this.#commits.settled();
    clearTimeout(this.#checkpointTimer);
    this.#checkpointTimer = undefined;
    await this.#walWorker?.close();
    if (this.#owned && this.#db.open) this.#db.close();
  }

  /**
   * After a commit: a PASSIVE checkpoint of the WAL into the database file within {@link CHECKPOINT_DELAY_MS}, in a
   * worker thread of its own ({@link SQLiteWalWorker}), so the WAL stays small without a COMMIT ever paying for a
   * checkpoint and without the copy or its fsyncs holding the event loop. PASSIVE never waits for a lock: when a reader or
   * another process's checkpoint is in the way, what it could not copy is copied by the next one.
   */
  #scheduleCheckpoint(): void {
    if (this.#checkpointTimer !== undefined) return;
    this.#checkpointTimer = setTimeout(() => {
      this.#checkpointTimer = undefined;
      try {
        // In the worker thread when there is one; here (a short pause of the event loop) when it could not start.
        if (this.#db.open && this.#walWorker?.request() !== true) this.#db.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        // A failed checkpoint loses nothing (the WAL keeps the commits); the next commit schedules another one.
      }
    }, CHECKPOINT_DELAY_MS);
    this.#checkpointTimer.unref();
  }
}

/** Brings the store to {@link SQLITE_SCHEMA_VERSION}, or refuses a newer one, in one write transaction. */
function migrate(db: Database.Database, prefix: string): void {
  const versions = `"${prefix}schema_version"`;
  // A store already at this version (every start but the first) needs no write lock: in WAL this read never waits,
  // so a process can open the store while another one is writing.
  const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`);
  if (
    exists.get(`${prefix}schema_version`) !== undefined &&
    db.prepare(`SELECT version FROM ${versions} WHERE id = 1`).pluck().get() === SQLITE_SCHEMA_VERSION
  ) {
    return;
  }
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS ${versions} (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)`);
    const row = db.prepare<[], { version: unknown }>(`SELECT version FROM ${versions} WHERE id = 1`).get();
    const found = row === undefined ? 0 : row.version;
    if (typeof found !== 'number' || !Number.isSafeInteger(found) || found < 0) {
      throw new CheckpointSchemaError({
        found: NaN,
        supported: SQLITE_SCHEMA_VERSION,
        location: locationOf(db, prefix),
      });
    }
    if (found > SQLITE_SCHEMA_VERSION) {
      throw new CheckpointSchemaError({ found, supported: SQLITE_SCHEMA_VERSION, location: locationOf(db, prefix) });
    }
    for (let version = found + 1; version <= SQLITE_SCHEMA_VERSION; version++)
      db.exec(MIGRATIONS[version - 1]!(prefix));
    if (found < SQLITE_SCHEMA_VERSION) {
      db.prepare(
        `INSERT INTO ${versions} (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version`,
      ).run(SQLITE_SCHEMA_VERSION);
    }
  }).immediate();
}

function locationOf(db: Database.Database, prefix: string): string {
  return `SQLite file ${db.name} (tables ${prefix}*)`;
}

/**
 * The rows of a fork, in one query: a recursive walk up its parents (each step a primary-key lookup; ids only grow
 * towards the fork, which bounds the walk even on damaged data), each ancestor contributing its own rows from its
 * `fork_seq` up to the lowest cut-off below it.
 */
function forkMessagesSql(threads: string, messages: string): string {
  return `
    WITH RECURSIVE chain(id, thread_id, parent_id, lo, hi) AS (
      SELECT id, thread_id, parent_id, fork_seq, next_seq FROM ${threads} WHERE thread_id = ?
      UNION ALL
      SELECT p.id, p.thread_id, p.parent_id, p.fork_seq, min(c.lo, c.hi)
      FROM ${threads} p JOIN chain c ON p.id = c.parent_id AND p.id < c.id
    )
    SELECT m.seq, m.body FROM chain c JOIN ${messages} m ON m.thread_id = c.thread_id AND m.seq >= c.lo AND m.seq < c.hi
    ORDER BY m.seq`;
}
