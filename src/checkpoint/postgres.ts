/**
 * `cubepi/checkpoint/postgres`: a `Checkpointer` on PostgreSQL, through `pg`, for many processes and machines.
 * @module
 */
import pg from 'pg';
import {
  CheckpointError,
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
import { checkStoredRows } from './check-stored-rows.js';
import { decodeExtra, decodeMessage, encodeExtra, encodeMessages } from '../types/row-codec.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { checkBlobThreshold, hasFiles, offloadFiles, type BlobOptions } from './offload-files.js';
import { insertBlobSql, PostgresBlobStore, toBuffer } from './postgres-blob-store.js';
import { SerialQueue } from './serial-queue.js';
import { PostgresStore, type PostgresStoreOptions } from './postgres-store.js';

export { PostgresBlobStore };
export { PostgresStore, type PostgresStoreOptions, type PostgresVectorSearch } from './postgres-store.js';
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
 * Options of {@link PostgresCheckpointer}. `blobs` defaults to the schema's own `<prefix>blobs` table
 * ({@link PostgresBlobStore}, `bytea`), written in the same transaction as the rows.
 */
export interface PostgresCheckpointerOptions extends BlobOptions {
  /** The schema holding the tables; created if missing. Letters, digits and `_`; default `public`. */
  readonly schema?: string | undefined;
  /**
   * Prefix of the tables' names (`<prefix>threads`, `<prefix>messages`, `<prefix>schema_version`, `<prefix>blobs`,
   * `<prefix>blob_refs`), so several stores can share a schema. Letters, digits and `_`; default `cubepi_`.
   */
  readonly tablePrefix?: string | undefined;
  /**
   * Use named prepared statements (default `true`): each connection parses a statement once, and an append then sends
   * little more than its messages. Set `false` behind a pooler that cannot keep them (PgBouncer before 1.21 in
   * transaction mode).
   */
  readonly preparedStatements?: boolean | undefined;
}

/** The schema version this code writes and reads. A store at a newer version is refused. */
export const POSTGRES_SCHEMA_VERSION = 4;

// Migration n (index n - 1) takes a store from version n - 1 to n. Never edit one that was released: add the next.
// Message and extra rows are JSONB; the few texts JSONB cannot hold (U+0000, a lone surrogate) go to the *_raw text
// column instead, as the same canonical JSON, so no message is ever refused or altered.
const MIGRATIONS: readonly ((t: Tables) => string)[] = [
  (t) => `
    CREATE TABLE ${t.threads} (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- creation order, never reused: the listThreads cursor
      thread_id text NOT NULL UNIQUE,
      next_seq bigint NOT NULL,                             -- the number of messages stored (no max(seq) scan)
      extra jsonb,
      extra_raw text,
      created_at bigint NOT NULL,                           -- ms since the epoch, the server's clock
      updated_at bigint NOT NULL,
      CHECK ((extra IS NULL) <> (extra_raw IS NULL))
    );
    CREATE TABLE ${t.messages} (
      thread_id text NOT NULL,
      seq bigint NOT NULL,                                  -- 0, 1, 2, … within the thread
      body jsonb,
      body_raw text,
      PRIMARY KEY (thread_id, seq),
      CHECK ((body IS NULL) <> (body_raw IS NULL))
    );`,
  // 2: forks. A fork's own messages are rows of its own from fork_seq on; [0, fork_seq) are its parent's. The foreign
  // key keeps a parent from being deleted under a fork committed concurrently. Adding a column with a constant
  // default rewrites nothing (PostgreSQL 11+): existing threads get no parent and fork_seq 0, unchanged.
  (t) => `
    ALTER TABLE ${t.threads} ADD COLUMN parent_id bigint REFERENCES ${t.threads} (id);
    ALTER TABLE ${t.threads} ADD COLUMN fork_seq bigint NOT NULL DEFAULT 0;
    CREATE INDEX ${t.parentIndex} ON ${t.threads} (parent_id) WHERE parent_id IS NOT NULL;`,
  // 3: owners. The Principal.id that created the thread (claimThread); existing threads get NULL: unowned. A
  // nullable column without a default rewrites nothing.
  (t) => `
    ALTER TABLE ${t.threads} ADD COLUMN owner text;
    CREATE INDEX ${t.ownerIndex} ON ${t.threads} (owner, id) WHERE owner IS NOT NULL;`,
  // 4: files stored by reference. blobs: the bytes by content address (when the store is this schema's own; EXTERNAL:
  // out of line, never compressed — files are mostly compressed already); blob_refs: which thread refers to which
  // blob (a fork's rows include the ones it shares), so deleting a thread deletes the blobs no other thread refers to.
  (t) => `
    CREATE TABLE ${t.blobs} (
      ref text PRIMARY KEY,                                 -- sha256:<hex> of the bytes
      size bigint NOT NULL,
      bytes bytea NOT NULL
    );
    ALTER TABLE ${t.blobs} ALTER COLUMN bytes SET STORAGE EXTERNAL;
    CREATE TABLE ${t.refs} (
      thread_id text NOT NULL,
      ref text NOT NULL,
      first_seq bigint NOT NULL,                            -- the first message of the thread holding it
      PRIMARY KEY (thread_id, ref)
    );
    CREATE INDEX ${t.refsIndex} ON ${t.refs} (ref);`,
];

interface Tables {
  readonly schema: string;
  readonly threads: string;
  readonly messages: string;
  readonly versions: string;
  /** The index of forks by parent (unqualified: an index lives in its table's schema). */
  readonly parentIndex: string;
  /** The index of threads by owner (unqualified). */
  readonly ownerIndex: string;
  readonly blobs: string;
  readonly refs: string;
  /** The index of blob references by blob (unqualified). */
  readonly refsIndex: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;
const NOW_MS = `floor(extract(epoch FROM now()) * 1000)::bigint`;
// Every value comes back as the server's text: our parsing, whatever type parsers the host set on `pg.types`.
const RAW_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;
// Canonical JSON escapes U+0000 and lone surrogates as \u0000 / \udXXX; JSONB refuses both. (A literal backslash-u in
// a string also matches: that row merely goes to the text column, which stores anything.)
const NOT_JSONB_SAFE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;
// pg_advisory_xact_lock(classid, objid): a class of our own, the schema's hash as the object.
const LOCK_CLASS = 0x63756265; // 'cube'
// foreign_key_violation: a fork and the deletion of its parent raced, and the database refused the second.
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * A `Checkpointer` on PostgreSQL (`pg` 8): for servers with many worker processes on many machines.
 *
 * - `new PostgresCheckpointer(pool)` uses a `pg.Pool` you own (`close()` leaves it open);
 *   `new PostgresCheckpointer('postgres://…')` creates a pool and ends it on `close()`.
 * - Tables are created, and later migrated, on first use (or `migrate()`), in one transaction under a
 *   transaction-level advisory lock, so processes starting together migrate once. A store written by a newer cubepi
 *   is refused with a `CheckpointSchemaError`, before anything is written.
 * - An append is one statement (one round trip): it bumps the thread's `next_seq` — only if it still equals
 *   `expectedSeq` — and inserts the rows at the seqs it returned, atomically. A racing writer waits for the row lock,
 *   finds `next_seq` moved and gets `ThreadConflictError`: nothing lost, nothing duplicated. Its cost does not
 *   depend on the thread's length (one `(thread_id, seq)` primary-key insert per message, one update of a row).
 * - A load reads the counter and the rows in one repeatable-read snapshot and checks that seqs 0 … n - 1 are all
 *   there. Messages are JSONB, returned with keys in canonical order (JSONB reorders them).
 *
 * Errors: a failed query or a lost connection is a `CheckpointError` naming the thread (the driver's error as
 * `cause`); a row that cannot be read back is a `CheckpointCorruptionError` naming thread and seq.
 *
 * A lost connection (a server restart, a terminated backend, a network failure) rejects only the calls that were using
 * it, with that `CheckpointError`; the process does not crash, the broken connection is destroyed rather than reused,
 * and the next call connects again. For that, the checkpointer listens for `error` on the pool — on a `pg.Pool` you
 * pass in too, from construction until `close()`, because pg-pool emits an idle client's failure there and an `error`
 * event nobody hears crashes the process. The listener does nothing (the pool has already dropped that client), so
 * a listener of yours still hears every error; once `close()` has removed it, a pool that lives on needs your own.
 *
 * @example
 * import pg from 'pg';
 * import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
 * const checkpointer = new PostgresCheckpointer(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * await checkpointer.migrate(); // optional: fail at startup rather than at the first prompt
 */
export class PostgresCheckpointer implements Checkpointer {
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #tables: Tables;
  readonly #sql: ReturnType<typeof statements>;
  readonly #prepared: boolean;
  #ready: Promise<void> | undefined;
  /** The store file bytes go to; `undefined` with `blobs: false`. */
  readonly blobs: BlobStore | undefined;
  readonly #ownBlobs: boolean;
  readonly #threshold: number;
  readonly #blobQueue = new SerialQueue();
  // The pool's 'error' listener (one per checkpointer, so closing one of two sharing a pool removes only its own). The
  // pool has already dropped the failed idle client: there is nothing more to do.
  readonly #ignoreIdleClientError = (): void => {};

  /** Throws `ConfigurationError` for a bad schema or prefix. Connects lazily: nothing happens before the first call. */
  constructor(poolOrConnectionString: pg.Pool | string, options: PostgresCheckpointerOptions = {}) {
    const schema = options.schema ?? 'public';
    const prefix = options.tablePrefix ?? 'cubepi_';
    this.#threshold = checkBlobThreshold(options);
    for (const [name, value] of [
      ['schema', schema],
      ['tablePrefix', prefix],
    ] as const) {
      if (!IDENTIFIER.test(value)) {
        throw new ConfigurationError(`${name} must be letters, digits and _ (at most 40), got "${value}"`);
      }
    }
    if (typeof poolOrConnectionString === 'string') {
      this.#pool = new pg.Pool({ connectionString: poolOrConnectionString });
      this.#owned = true;
    } else {
      this.#pool = poolOrConnectionString;
      this.#owned = false;
    }
    // pg-pool emits an idle client's error (a server restart, a terminated backend) on the pool, after dropping that
    // client; an 'error' event nobody hears crashes the process. The next call gets a fresh connection, or reports
    // the outage as a CheckpointError.
    this.#pool.on('error', this.#ignoreIdleClientError);
    const q = (name: string) => `"${schema}"."${prefix}${name}"`;
    this.#tables = {
      schema,
      threads: q('threads'),
      messages: q('messages'),
      versions: q('schema_version'),
      parentIndex: `"${prefix}threads_parent"`,
      ownerIndex: `"${prefix}threads_owner"`,
      blobs: q('blobs'),
      refs: q('blob_refs'),
      refsIndex: `"${prefix}blob_refs_ref"`,
    };
    this.#sql = statements(this.#tables);
    this.#prepared = options.preparedStatements ?? true;
    this.#ownBlobs = options.blobs === undefined;
    this.blobs =
      options.blobs === false
        ? undefined
        : (options.blobs ??
          new PostgresBlobStore({
            query: (text, values) => this.#query(this.#pool, text, values),
            ready: () => this.#migrated(),
            table: this.#tables.blobs,
          }));
  }

  /**
   * Creates or migrates the tables now. Every other method does it on its first call; call this at startup to fail
   * early. Rejects with `CheckpointSchemaError` for a store newer than this code, `CheckpointError` otherwise.
   */
  migrate(): Promise<void> {
    return this.#migrated().catch((error: unknown) => {
      throw toCheckpointError(error, 'open');
    });
  }

  /** Migrates once per checkpointer; a failure is forgotten, so a lost connection is retried at the next call. */
  #migrated(): Promise<void> {
    this.#ready ??= this.#migrate().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  /** {@inheritDoc Checkpointer.load} */
  async load(threadId: string): Promise<CheckpointData | null> {
    try {
      checkThreadId(threadId);
      await this.#migrated();
      const found = await this.#transaction('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY', async (client) => {
        const thread = await this.#query(client, this.#sql.loadThread, [threadId]);
        if (thread.rows.length === 0) return undefined;
        // A thread that is not a fork (most): the plain range scan. A fork: its chain of parents in one query.
        const sql = thread.rows[0]![3] === null ? this.#sql.loadMessages : this.#sql.loadForkMessages;
        const messages = await this.#query(client, sql, [threadId]);
        return { thread: thread.rows[0]!, rows: messages.rows };
      });
      if (found === undefined) return null;
      const [nextSeq, extra, extraRaw] = found.thread as [string, string | null, string | null];
      const rows = found.rows.map(
        ([seq, body, raw]) => [Number(seq), body as string | null, raw as string | null] as const,
      );
      checkStoredRows(threadId, Number(nextSeq), rows);
      const messages = rows.map(([seq, body, raw]) =>
        body !== null ? decodeMessage(threadId, seq, body, true) : decodeMessage(threadId, seq, raw ?? 'null'),
      );
      const decodedExtra = extra !== null ? decodeExtra(threadId, extra, true) : decodeExtra(threadId, extraRaw ?? '');
      return { messages, extra: decodedExtra, seq: messages.length };
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
      const encoded = encodeMessages(threadId, messages);
      await this.#migrated();
      if (encoded.length === 0) {
        const actual = (await this.#storedSeq(this.#pool, threadId)) ?? 0;
        if (expected !== undefined && expected !== actual) throw new ThreadConflictError(threadId, expected, actual);
        return { seq: actual };
      }
      const bodies = encoded.map((row) => (NOT_JSONB_SAFE.test(row) ? null : row));
      const raws = encoded.map((row, i) => (bodies[i] === null ? row : null));
      const values = [threadId, expected ?? null, encoded.length, bodies, raws];
      for (let attempt = 1; ; attempt++) {
        // The common case, an existing thread: one statement, one round trip.
        const appended = await this.#query(this.#pool, this.#sql.append, values);
        if (appended.rows.length === 1) return { seq: Number(appended.rows[0]![0]) };
        // Nothing matched: the seq differs, or the thread does not exist (yet, or any more).
        const actual = await this.#storedSeq(this.#pool, threadId);
        if (expected !== undefined && (actual ?? 0) !== expected) {
          throw new ThreadConflictError(threadId, expected, actual ?? 0);
        }
        if (actual === undefined) {
          const seq = await this.#create(threadId, values);
          if (seq !== undefined) return { seq };
        }
        // The thread was created or deleted between two of our statements; what is stored still allows this append.
        if (attempt === 3) {
          throw new CheckpointError({
            operation: 'append',
            threadId,
            message: `Checkpoint append failed for thread "${threadId}": it kept being created or deleted by other writers`,
          });
        }
      }
    } catch (error) {
      throw toCheckpointError(error, 'append', threadId);
    }
  }

  /**
   * An append whose batch holds files: one transaction holding the blobs (own table, each locked till the commit), the
   * rows and the references; with a store of the caller's, its puts first (a failed put writes no row).
   */
  async #appendFiles(
    threadId: string,
    messages: readonly Message[],
    expected: number | undefined,
  ): Promise<AppendResult> {
    const batch = await offloadFiles(messages, this.#threshold);
    const encoded = encodeMessages(threadId, batch.messages);
    await this.#migrated();
    const write = () =>
      this.#transaction('BEGIN', async (client) => {
        if (this.#ownBlobs) {
          // In address order: two appends locking the same blobs take them in the same order (no deadlock).
          for (const ref of [...batch.blobs.keys()].sort()) {
            const bytes = batch.blobs.get(ref)!;
            await this.#query(client, this.#sql.insertBlob, [ref, bytes.length, toBuffer(bytes)]);
          }
        }
        const seq = await this.#appendIn(client, threadId, encoded, expected);
        const refs = [...batch.refs.keys()];
        const firsts = refs.map((ref) => seq - encoded.length + batch.refs.get(ref)!);
        await this.#query(client, this.#sql.insertRefs, [threadId, refs, firsts]);
        return { seq };
      });
    if (this.#ownBlobs) return write();
    const external = this.blobs!;
    return this.#blobQueue.run(async () => {
      for (const [ref, bytes] of batch.blobs) {
        const stored = await external.put(bytes);
        if (stored !== ref) throw new Error(`The blob store stored ${ref} as ${String(stored)}`);
      }
      try {
        return await write();
      } catch (error) {
        // Rolled back (a conflict, a refused row): take back the blobs nothing refers to. A write whose outcome is
        // unknown (its connection lost at the commit) may have landed: those blobs stay.
        if (error instanceof ThreadConflictError || error instanceof pg.DatabaseError) {
          try {
            const unreferenced = await this.#query(this.#pool, this.#sql.unreferenced, [[...batch.blobs.keys()]]);
            for (const [ref] of unreferenced.rows) await external.delete(ref as BlobRef);
          } catch {
            // The append's own error is the one to report; an unreferenced blob left behind is harmless.
          }
        }
        throw error;
      }
    });
  }

  /** The append statement inside a transaction, creating the thread when it does not exist; resolves the new seq. */
  async #appendIn(
    client: pg.PoolClient,
    threadId: string,
    encoded: readonly string[],
    expected: number | undefined,
  ): Promise<number> {
    const bodies = encoded.map((row) => (NOT_JSONB_SAFE.test(row) ? null : row));
    const raws = encoded.map((row, i) => (bodies[i] === null ? row : null));
    const values = [threadId, expected ?? null, encoded.length, bodies, raws];
    const appended = await this.#query(client, this.#sql.append, values);
    if (appended.rows.length === 1) return Number(appended.rows[0]![0]);
    const actual = await this.#storedSeq(client, threadId);
    if (expected !== undefined && (actual ?? 0) !== expected) {
      throw new ThreadConflictError(threadId, expected, actual ?? 0);
    }
    await this.#query(client, this.#sql.createThread, [threadId]);
    const created = await this.#query(client, this.#sql.append, values);
    if (created.rows.length === 1) return Number(created.rows[0]![0]);
    throw new CheckpointError({
      operation: 'append',
      threadId,
      message: `Checkpoint append failed for thread "${threadId}": it was created or deleted by another writer meanwhile`,
    });
  }

  /** {@inheritDoc Checkpointer.saveExtra} */
  async saveExtra(threadId: string, extra: Readonly<Record<string, unknown>>): Promise<void> {
    try {
      checkThreadId(threadId);
      checkExtra(extra);
      const row = encodeExtra(threadId, extra);
      await this.#migrated();
      const safe = !NOT_JSONB_SAFE.test(row);
      await this.#query(this.#pool, this.#sql.saveExtra, [threadId, safe ? row : null, safe ? null : row]);
    } catch (error) {
      throw toCheckpointError(error, 'saveExtra', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.listThreads} */
  async listThreads(options?: ListThreadsOptions): Promise<ThreadInfo[]> {
    try {
      const { limit, before, owner } = checkListOptions(options);
      await this.#migrated();
      const result =
        owner === undefined
          ? await this.#query(this.#pool, this.#sql.list, [before ?? Number.MAX_SAFE_INTEGER, limit])
          : await this.#query(this.#pool, this.#sql.listOwned, [before ?? Number.MAX_SAFE_INTEGER, limit, owner]);
      return result.rows.map(([id, threadId, nextSeq, createdAt, updatedAt, parent, forkSeq, rowOwner]) => ({
        threadId: threadId as string,
        messageCount: Number(nextSeq),
        createdAt: Number(createdAt),
        updatedAt: Number(updatedAt),
        cursor: cursorOf(Number(id)),
        ...(parent === null ? {} : { parent: { threadId: parent as string, atSeq: Number(forkSeq) } }),
        ...(rowOwner === null ? {} : { owner: rowOwner as string }),
      }));
    } catch (error) {
      throw toCheckpointError(error, 'listThreads');
    }
  }

  /** {@inheritDoc Checkpointer.claimThread} */
  async claimThread(threadId: string, owner: string): Promise<string | null> {
    try {
      checkThreadId(threadId);
      checkOwner(owner);
      await this.#migrated();
      // The insert returns the row it created; when the thread exists (or a racing claim committed first: the insert
      // waits for it, then does nothing), the second statement reads the stored owner.
      for (let attempt = 1; ; attempt++) {
        const created = await this.#query(this.#pool, this.#sql.claim, [threadId, owner]);
        if (created.rows.length === 1) return created.rows[0]![0] as string;
        const stored = await this.#query(this.#pool, this.#sql.owner, [threadId]);
        if (stored.rows.length === 1) return stored.rows[0]![0] as string | null;
        // Deleted between the two statements: claim again rather than report an owner nobody has.
        if (attempt === 3) {
          throw new CheckpointError({
            operation: 'claimThread',
            threadId,
            message: `Checkpoint claimThread failed for thread "${threadId}": it kept being created and deleted`,
          });
        }
      }
    } catch (error) {
      throw toCheckpointError(error, 'claimThread', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.threadOwner} */
  async threadOwner(threadId: string): Promise<string | null | undefined> {
    try {
      checkThreadId(threadId);
      await this.#migrated();
      const stored = await this.#query(this.#pool, this.#sql.owner, [threadId]);
      return stored.rows.length === 0 ? undefined : (stored.rows[0]![0] as string | null);
    } catch (error) {
      throw toCheckpointError(error, 'threadOwner', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.deleteThread} */
  async deleteThread(threadId: string): Promise<void> {
    try {
      checkThreadId(threadId);
      await this.#migrated();
      for (let attempt = 1; ; attempt++) {
        try {
          // The thread row first: it waits for an append in flight, and once it is gone no append can add rows (an
          // append must update it), so the messages deleted next are all there will be. A fork committed between the
          // check and the delete makes the foreign key refuse the delete: then look again.
          const unreferenced = await this.#transaction('BEGIN', async (client) => {
            const forks = await this.#query(client, this.#sql.forksOf, [threadId]);
            if (forks.rows.length > 0) {
              throw new ThreadHasForksError(
                threadId,
                forks.rows.map((row) => row[0] as string),
              );
            }
            await this.#query(client, this.#sql.deleteThread, [threadId]);
            await this.#query(client, this.#sql.deleteMessages, [threadId]);
            const refs = (await this.#query(client, this.#sql.deleteRefs, [threadId])).rows.map(
              (row) => row[0] as string,
            );
            if (refs.length === 0) return [];
            if (!this.#ownBlobs) {
              return (await this.#query(client, this.#sql.unreferenced, [refs])).rows.map((row) => row[0] as BlobRef);
            }
            // Lock the blobs first (an append holding one commits, or waits for us), then delete those no thread
            // refers to: that statement's snapshot, taken after the locks, sees every reference committed before.
            await this.#query(client, this.#sql.lockBlobs, [refs]);
            await this.#query(client, this.#sql.deleteUnreferenced, [refs]);
            return [];
          });
          if (unreferenced.length > 0) {
            // The caller's store, after the rows are gone (a failed deletion leaves an unreferenced blob, never a
            // dangling ref), checking again that no thread took the blob meanwhile.
            const external = this.blobs!;
            await this.#blobQueue.run(async () => {
              const still = await this.#query(this.#pool, this.#sql.unreferenced, [unreferenced]);
              for (const [ref] of still.rows) await external.delete(ref as BlobRef);
            });
          }
          return;
        } catch (error) {
          if (attempt === 3 || !isForeignKeyViolation(error)) throw error;
        }
      }
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.fork} */
  async fork(threadId: string, options: ForkOptions): Promise<ForkResult> {
    try {
      const { atSeq, newThreadId } = checkForkOptions(threadId, options);
      await this.#migrated();
      for (let attempt = 1; ; attempt++) {
        // One statement, one row: the new thread, pointing at its parent, with a copy of its extra.
        let forked: pg.QueryArrayResult;
        try {
          forked = await this.#query(this.#pool, this.#sql.fork, [threadId, atSeq, newThreadId]);
        } catch (error) {
          // The parent was deleted after our statement read it: it no longer exists.
          if (isForeignKeyViolation(error)) throw noSuchParent(threadId);
          throw error;
        }
        if (forked.rows.length === 1) return { threadId: newThreadId, seq: atSeq };
        // Nothing inserted: say why.
        const parentSeq = await this.#storedSeq(this.#pool, threadId);
        if (parentSeq === undefined) throw noSuchParent(threadId);
        if (atSeq > parentSeq) throw atSeqOutOfRange(threadId, atSeq, parentSeq);
        const taken = await this.#storedSeq(this.#pool, newThreadId);
        if (taken !== undefined) throw forkTargetExists(newThreadId, taken);
        // The parent was created, or the new id deleted, between two of our statements: try again.
        if (attempt === 3) {
          throw new CheckpointError({
            operation: 'fork',
            threadId,
            message: `Checkpoint fork failed for thread "${threadId}": the threads kept changing under it`,
          });
        }
      }
    } catch (error) {
      throw toCheckpointError(error, 'fork', threadId);
    }
  }

  /**
   * A {@link PostgresStore} on this checkpointer's pool and schema (table `<tablePrefix>store_items`, default
   * `cubepi_`; created at its first call): memory across threads next to the threads. Its `close()` leaves the pool
   * open; closing the checkpointer ends a pool the checkpointer created.
   */
  store(options: Omit<PostgresStoreOptions, 'schema'> = {}): PostgresStore {
    return new PostgresStore(this.#pool, { ...options, schema: this.#tables.schema });
  }

  /**
   * Ends the pool if this checkpointer created it; a `pg.Pool` passed in stays open, without the `error` listener
   * this checkpointer added to it. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#owned) {
      this.#pool.off('error', this.#ignoreIdleClientError);
      return;
    }
    if (!this.#pool.ending && !this.#pool.ended) await this.#pool.end();
  }

  #query(client: pg.Pool | pg.PoolClient, text: string, values: unknown[]): Promise<pg.QueryArrayResult> {
    const name = this.#prepared ? statementName(text) : undefined;
    return client.query({ ...(name === undefined ? {} : { name }), text, values, rowMode: 'array', types: RAW_TYPES });
  }

  /** The stored seq of a thread, `undefined` if it does not exist. */
  async #storedSeq(client: pg.Pool | pg.PoolClient, threadId: string): Promise<number | undefined> {
    const result = await this.#query(client, this.#sql.storedSeq, [threadId]);
    return result.rows.length === 0 ? undefined : Number(result.rows[0]![0]);
  }

  /**
   * The first append of a thread: create its row and append, in one transaction. When another writer created it
   * first, our insert waits for that writer's commit and does nothing, and the append sees what that writer stored.
   * `undefined` when the append then matched nothing (the caller looks again).
   */
  async #create(threadId: string, values: unknown[]): Promise<number | undefined> {
    return this.#transaction('BEGIN', async (client) => {
      await this.#query(client, this.#sql.createThread, [threadId]);
      const appended = await this.#query(client, this.#sql.append, values);
      return appended.rows.length === 1 ? Number(appended.rows[0]![0]) : undefined;
    });
  }

  /**
   * Runs `work` in a transaction on a client checked out of the pool. pg-pool removes its own 'error' listener from a
   * client it hands out, and pg emits 'error' on a client whose connection dies — while it waits between two queries,
   * and again when the socket closes after the query in flight was rejected — so ours listens for as long as the
   * client is out: unheard, that event would crash the process. The query in flight, or the next one, rejects with the
   * failure (the caller's CheckpointError). A client whose connection failed goes back with the error, so the pool
   * destroys it instead of handing it out again.
   */
  async #transaction<T>(begin: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let broken: unknown;
    const onError = (error: Error) => {
      broken ??= error;
    };
    const client = await this.#checkOut(onError);
    try {
      await client.query(begin);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (broken === undefined) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken ??= rollbackError; // the connection is gone
        }
      }
      throw error;
    } finally {
      client.off('error', onError);
      client.release(broken as Error | undefined);
    }
  }

  /**
   * A client of the pool with `onError` already listening. Attached in pg-pool's callback, so no I/O (and no 'error'
   * event) can come between the checkout and the listener.
   */
  #checkOut(onError: (error: Error) => void): Promise<pg.PoolClient> {
    return new Promise((resolve, reject) => {
      this.#pool.connect((error, client) => {
        if (client === undefined) return reject(error ?? new Error('pg-pool gave neither a client nor an error'));
        client.on('error', onError);
        resolve(client);
      });
    });
  }

  async #migrate(): Promise<void> {
    const t = this.#tables;
    await this.#transaction('BEGIN', async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, lockKey(t.schema)]);
      // CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema exists: ask first.
      const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [t.schema]);
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA "${t.schema}"`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${t.versions} (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)`,
      );
      const row = await this.#query(client, `SELECT version FROM ${t.versions} WHERE id = 1`, []);
      const found = row.rows.length === 0 ? 0 : Number(row.rows[0]![0]);
      const location = `PostgreSQL tables ${t.threads.replace(/threads"$/, '*"')}`;
      if (!Number.isSafeInteger(found) || found < 0) {
        throw new CheckpointSchemaError({ found: NaN, supported: POSTGRES_SCHEMA_VERSION, location });
      }
      if (found > POSTGRES_SCHEMA_VERSION) {
        throw new CheckpointSchemaError({ found, supported: POSTGRES_SCHEMA_VERSION, location });
      }
      for (let version = found + 1; version <= POSTGRES_SCHEMA_VERSION; version++) {
        await client.query(MIGRATIONS[version - 1]!(t));
      }
      if (found < POSTGRES_SCHEMA_VERSION) {
        await client.query(
          `INSERT INTO ${t.versions} (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = $1`,
          [POSTGRES_SCHEMA_VERSION],
        );
      }
    });
  }
}

/** The SQL of every operation, for one set of tables. */
function statements(t: Tables) {
  return {
    // $1 thread, $2 expectedSeq or null, $3 count, $4 JSONB texts (null where raw), $5 raw texts (null where JSONB).
    // The UPDATE takes the thread's row lock; a racing append waits, then re-checks `next_seq` and matches nothing.
    append: `
      WITH t AS (
        UPDATE ${t.threads} SET next_seq = next_seq + $3::int, updated_at = ${NOW_MS}
        WHERE thread_id = $1 AND ($2::bigint IS NULL OR next_seq = $2::bigint)
        RETURNING next_seq
      ), m AS (
        INSERT INTO ${t.messages} (thread_id, seq, body, body_raw)
        SELECT $1, t.next_seq - $3::int + u.ord - 1, u.body::jsonb, u.raw
        FROM t, unnest($4::text[], $5::text[]) WITH ORDINALITY AS u(body, raw, ord)
      )
      SELECT next_seq FROM t`,
    createThread: `
      INSERT INTO ${t.threads} (thread_id, next_seq, extra, created_at, updated_at)
      VALUES ($1, 0, '{}', ${NOW_MS}, ${NOW_MS}) ON CONFLICT (thread_id) DO NOTHING`,
    storedSeq: `SELECT next_seq FROM ${t.threads} WHERE thread_id = $1`,
    loadThread: `SELECT next_seq, extra, extra_raw, parent_id FROM ${t.threads} WHERE thread_id = $1`,
    loadMessages: `SELECT seq, body, body_raw FROM ${t.messages} WHERE thread_id = $1 ORDER BY seq`,
    // A fork's rows: a recursive walk up its parents (a primary-key lookup per level; ids only grow towards the fork,
    // which bounds the walk even on damaged data), each ancestor giving its own rows from its fork_seq up to the
    // lowest cut-off below it.
    loadForkMessages: `
      WITH RECURSIVE chain(id, thread_id, parent_id, lo, hi) AS (
        SELECT id, thread_id, parent_id, fork_seq, next_seq FROM ${t.threads} WHERE thread_id = $1
        UNION ALL
        SELECT p.id, p.thread_id, p.parent_id, p.fork_seq, LEAST(c.lo, c.hi)
        FROM ${t.threads} p JOIN chain c ON p.id = c.parent_id AND p.id < c.id
      )
      SELECT m.seq, m.body, m.body_raw
      FROM chain c JOIN ${t.messages} m ON m.thread_id = c.thread_id AND m.seq >= c.lo AND m.seq < c.hi
      ORDER BY m.seq`,
    // $1 parent, $2 atSeq, $3 new thread. Inserts nothing when the parent is missing or shorter than atSeq, or the
    // new id is taken.
    // The fork refers to the blobs of the messages it shares (one row per distinct blob, not per message).
    fork: `
      WITH f AS (
        INSERT INTO ${t.threads}
          (thread_id, next_seq, extra, extra_raw, created_at, updated_at, parent_id, fork_seq, owner)
        SELECT $3, $2::bigint, p.extra, p.extra_raw, ${NOW_MS}, ${NOW_MS}, p.id, $2::bigint, p.owner
        FROM ${t.threads} p WHERE p.thread_id = $1 AND p.next_seq >= $2::bigint
        ON CONFLICT (thread_id) DO NOTHING
        RETURNING id
      ), r AS (
        INSERT INTO ${t.refs} (thread_id, ref, first_seq)
        SELECT $3, b.ref, b.first_seq FROM ${t.refs} b, f WHERE b.thread_id = $1 AND b.first_seq < $2::bigint
      )
      SELECT id FROM f`,
    insertBlob: insertBlobSql(t.blobs),
    // $1 thread, $2 refs, $3 the seq of the first message holding each.
    insertRefs: `
      INSERT INTO ${t.refs} (thread_id, ref, first_seq)
      SELECT $1, u.ref, u.first_seq FROM unnest($2::text[], $3::bigint[]) AS u(ref, first_seq)
      ON CONFLICT (thread_id, ref) DO NOTHING`,
    deleteRefs: `DELETE FROM ${t.refs} WHERE thread_id = $1 RETURNING ref`,
    lockBlobs: `SELECT ref FROM ${t.blobs} WHERE ref = ANY($1::text[]) ORDER BY ref FOR UPDATE`,
    deleteUnreferenced: `
      DELETE FROM ${t.blobs} b WHERE b.ref = ANY($1::text[])
      AND NOT EXISTS (SELECT 1 FROM ${t.refs} r WHERE r.ref = b.ref)`,
    unreferenced: `
      SELECT u.ref FROM unnest($1::text[]) AS u(ref)
      WHERE NOT EXISTS (SELECT 1 FROM ${t.refs} r WHERE r.ref = u.ref)`,
    forksOf: `
      SELECT f.thread_id FROM ${t.threads} f JOIN ${t.threads} p ON f.parent_id = p.id
      WHERE p.thread_id = $1 ORDER BY f.id`,
    // Update in place when the thread exists (the common case: no identity value spent); insert it otherwise, a racing
    // insert falling back to the update.
    saveExtra: `
      WITH u AS (
        UPDATE ${t.threads} SET extra = $2::jsonb, extra_raw = $3, updated_at = ${NOW_MS}
        WHERE thread_id = $1
        RETURNING 1
      )
      INSERT INTO ${t.threads} (thread_id, next_seq, extra, extra_raw, created_at, updated_at)
      SELECT $1, 0, $2::jsonb, $3, ${NOW_MS}, ${NOW_MS} WHERE NOT EXISTS (SELECT 1 FROM u)
      ON CONFLICT (thread_id) DO UPDATE
        SET extra = excluded.extra, extra_raw = excluded.extra_raw, updated_at = excluded.updated_at`,
    list: `
      SELECT t.id, t.thread_id, t.next_seq, t.created_at, t.updated_at, p.thread_id, t.fork_seq, t.owner
      FROM ${t.threads} t LEFT JOIN ${t.threads} p ON p.id = t.parent_id
      WHERE t.id < $1::bigint ORDER BY t.id DESC LIMIT $2`,
    listOwned: `
      SELECT t.id, t.thread_id, t.next_seq, t.created_at, t.updated_at, p.thread_id, t.fork_seq, t.owner
      FROM ${t.threads} t LEFT JOIN ${t.threads} p ON p.id = t.parent_id
      WHERE t.owner = $3 AND t.id < $1::bigint ORDER BY t.id DESC LIMIT $2`,
    claim: `
      INSERT INTO ${t.threads} (thread_id, next_seq, extra, created_at, updated_at, owner)
      VALUES ($1, 0, '{}', ${NOW_MS}, ${NOW_MS}, $2) ON CONFLICT (thread_id) DO NOTHING RETURNING owner`,
    owner: `SELECT owner FROM ${t.threads} WHERE thread_id = $1`,
    deleteThread: `DELETE FROM ${t.threads} WHERE thread_id = $1`,
    deleteMessages: `DELETE FROM ${t.messages} WHERE thread_id = $1`,
  };
}

// A statement name is per connection and must always mean the same text: one process-wide name per distinct text
// (checkpointers on other schemas or prefixes have other texts, hence other names).
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) statementNames.set(text, (name = `cubepi_${statementNames.size + 1}`));
  return name;
}

/** FNV-1a of the schema name as a signed 32-bit integer: the advisory lock's object id. */
function lockKey(schema: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < schema.length; i++) hash = Math.imul(hash ^ schema.charCodeAt(i), 0x01000193);
  return hash | 0;
}

function isForeignKeyViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION;
}
