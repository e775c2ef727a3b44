/**
 * The `Checkpointer` contract: durable, append-only storage of conversation threads. See `docs/checkpointing.md`.
 * @module
 */
import type { BlobStore } from '../types/blob.js';
import type { Message } from '../types/messages.js';

/**
 * A thread as stored: its messages in order, its `extra` record and its `seq`.
 *
 * Everything in it is a fresh copy: changing it never changes the store. Messages and `extra` come back as the JSON
 * values that were written (`serializeMessage(loaded) === serializeMessage(written)`), with object keys in canonical
 * (sorted) order and `undefined` fields left out.
 */
export interface CheckpointData {
  readonly messages: Message[];
  /** The last record given to `saveExtra` (`{}` if there was none). */
  readonly extra: Record<string, unknown>;
  /** The number of messages stored: `messages.length`. Pass it as `expectedSeq` to the next `append`. */
  readonly seq: number;
}

/** Options of {@link Checkpointer.append}. */
export interface AppendOptions {
  /**
   * Append only if the thread's stored `seq` still equals this (`0` for a thread that does not exist); otherwise
   * reject with a `ThreadConflictError` and write nothing.
   */
  readonly expectedSeq?: number | undefined;
}

/** The result of {@link Checkpointer.append}. */
export interface AppendResult {
  /** The thread's `seq` after this append: the number of messages now stored. */
  readonly seq: number;
}

/** Options of {@link Checkpointer.listThreads}. */
export interface ListThreadsOptions {
  /** At most this many threads (a positive integer; default 100). */
  readonly limit?: number | undefined;
  /** The `cursor` of the last thread of the previous page: list the threads created before that one. */
  readonly after?: string | undefined;
  /**
   * Only the threads this owner owns (a `Principal.id`; see {@link Checkpointer.claimThread}). A backend without
   * owners ignores it, so check {@link Checkpointer.claimThread} exists before relying on it.
   */
  readonly owner?: string | undefined;
}

/** One thread in a {@link Checkpointer.listThreads} page. */
export interface ThreadInfo {
  readonly threadId: string;
  /** The number of messages stored (the thread's `seq`). */
  readonly messageCount: number;
  /** When the thread was first written (its first `append` or `saveExtra`), in milliseconds since the epoch. */
  readonly createdAt: number;
  /** When the thread was last written (`append` or `saveExtra`), in milliseconds since the epoch. */
  readonly updatedAt: number;
  /**
   * An opaque position in the list: pass it as `after` to get the next page. It stays valid when its thread is
   * deleted, so a loop may delete what it lists.
   */
  readonly cursor: string;
  /**
   * Set when the thread is a fork ({@link Checkpointer.fork}): the thread it was forked from and the cut-off, so its
   * messages `[0, atSeq)` are the parent's. Absent for a thread that is not a fork.
   */
  readonly parent?: ForkParent | undefined;
  /** The `Principal.id` that owns the thread ({@link Checkpointer.claimThread}); absent for an unowned thread. */
  readonly owner?: string | undefined;
}

/** Where a fork comes from: {@link ThreadInfo.parent}. */
export interface ForkParent {
  readonly threadId: string;
  /** The fork shares the parent's messages `[0, atSeq)`. */
  readonly atSeq: number;
}

/** Options of {@link Checkpointer.fork}. */
export interface ForkOptions {
  /**
   * The cut-off: the fork shares the parent's messages `[0, atSeq)` (an integer from 0 to the parent's `seq`; `seq`
   * itself forks the whole thread).
   */
  readonly atSeq: number;
  /** The id of the new thread. It must not exist yet. */
  readonly newThreadId: string;
}

/** The result of {@link Checkpointer.fork}. */
export interface ForkResult {
  /** The new thread's id (`newThreadId`). */
  readonly threadId: string;
  /** The new thread's `seq`: `atSeq`. Pass it as `expectedSeq` to the fork's first `append`. */
  readonly seq: number;
}

/**
 * Durable storage of threads: each thread is an append-only sequence of messages plus one `extra` record.
 *
 * - **Append-only.** A write never rewrites history, and its cost does not grow with the thread's length.
 * - **`seq`** is the number of messages stored for a thread (0 for a thread that does not exist). `append` with
 *   `expectedSeq` succeeds only if the stored `seq` still equals it; otherwise it rejects with `ThreadConflictError`
 *   and writes nothing. Two writers that loaded the same thread therefore cannot interleave: the second to write
 *   loses. Every `append` call is atomic: all of its messages are stored, contiguously, or none.
 * - **Copies.** What `load` returns is the caller's to change; what `append` and `saveExtra` were given may be
 *   changed by the caller afterwards without changing the store.
 * - **Failures** are typed: `CheckpointError` (with the thread and the driver's error as `cause`; a write refused
 *   before it reached the store wrote nothing, but one whose connection was lost after its statement or commit
 *   reached the server, as can happen with PostgreSQL, may have landed: its outcome is unknown, so reload the thread
 *   before writing again), `CheckpointCorruptionError` (a row that cannot be read back, naming thread and seq),
 *   `CheckpointSchemaError` (a store written by a newer version), `ThreadConflictError` (a lost race). Invalid
 *   arguments (an empty thread id, a bad `limit` or cursor) reject with `InvalidInputError`.
 * - **Forks** (`fork`, optional): a thread may start as a fork of another at a cut-off, sharing its messages up to
 *   there without copying them; a thread with forks cannot be deleted (`ThreadHasForksError`).
 *
 * Built in: `MemoryCheckpointer` (`cubepi`), `SQLiteCheckpointer` (`cubepi/checkpoint/sqlite`),
 * `PostgresCheckpointer` (`cubepi/checkpoint/postgres`). A new backend proves itself with `checkpointerConformance`
 * from `cubepi/testing`.
 *
 * @example
 * const saved = await checkpointer.load('user-42');            // null for a new thread
 * let seq = saved?.seq ?? 0;
 * ({ seq } = await checkpointer.append('user-42', [userMessage('hi')], { expectedSeq: seq }));
 */
export interface Checkpointer {
  /**
   * Where the checkpointer keeps file bytes stored by reference: a file block loaded from it may hold a `ref` instead
   * of `data`, and this is the store that resolves it (an `Agent` reads its blobs here unless given `blobs` of its
   * own). Absent for a backend that stores every file inline. See `docs/files-storage.md`.
   */
  readonly blobs?: BlobStore | undefined;

  /** The thread's messages, `extra` and `seq`, or `null` if the thread was never written (or was deleted). */
  load(threadId: string): Promise<CheckpointData | null>;

  /**
   * Appends `messages` after the thread's last message, creating the thread if needed, in one atomic write.
   * Resolves with the new `seq`. An empty `messages` writes nothing (and still checks `expectedSeq`).
   */
  append(threadId: string, messages: readonly Message[], options?: AppendOptions): Promise<AppendResult>;

  /**
   * Replaces the thread's `extra` record (a key missing from `extra` is removed from storage), creating the thread
   * with no messages if needed. Does not change `seq`.
   */
  saveExtra(threadId: string, extra: Readonly<Record<string, unknown>>): Promise<void>;

  /**
   * One page of threads, newest (most recently created) first. Creation order, not update order, so paging with
   * `after` sees every thread that existed when it began exactly once, however the threads are written meanwhile.
   */
  listThreads(options?: ListThreadsOptions): Promise<ThreadInfo[]>;

  /**
   * Removes the thread, its messages and its `extra`. Deleting a thread that does not exist does nothing. A thread
   * that has forks is not deleted: the call rejects with `ThreadHasForksError` (naming them) and changes nothing;
   * delete the forks first (newest first, as `listThreads` lists them, does it).
   */
  deleteThread(threadId: string): Promise<void>;

  /**
   * Creates `newThreadId` as a fork of `threadId` at `atSeq`: a new thread whose messages are the parent's `[0, atSeq)`,
   * whose `seq` is `atSeq`, and whose `extra` is a copy of the parent's `extra` as it is at the fork (the store keeps
   * one `extra` per thread, not its history). From then on the two are separate threads: an append to either never
   * changes the other. The fork stores a pointer to its parent and the cut-off, not a copy of the messages, so its
   * cost does not grow with the history; a fork of a fork loads like any thread, at any depth.
   *
   * Rejects with `InvalidInputError` (nothing written) when `threadId` does not exist or `atSeq` is not an integer
   * from 0 to its `seq`, and with `ThreadConflictError` (`expected` 0, `actual` its `seq`) when `newThreadId` already
   * exists.
   *
   * Optional, so a backend written for an earlier version still type-checks: an `Agent` on a checkpointer without it
   * refuses `fork()` and `retryFrom()` with `InvalidStateError`. Every built-in has it.
   */
  fork?(threadId: string, options: ForkOptions): Promise<ForkResult>;

  /**
   * Creates the thread (no messages, `{}` extra) owned by `owner` if it does not exist, in one atomic step, and
   * resolves with the owner now stored: `owner` when this call created it (or it was already theirs), another id
   * when someone else owns it, `null` for a thread written without an owner (by `append` or `saveExtra` alone, or
   * before the store had owners). An existing thread's owner is never changed. A fork gets its parent's owner.
   *
   * Optional, like {@link Checkpointer.threadOwner} (a backend has both or neither): `cubepi/server` stores every
   * thread's owner with it through them, and keeps owners in its own memory for a checkpointer without them.
   */
  claimThread?(threadId: string, owner: string): Promise<string | null>;

  /** The thread's owner: its id, `null` for an unowned thread, `undefined` for a thread that does not exist. */
  threadOwner?(threadId: string): Promise<string | null | undefined>;

  /**
   * Releases what the checkpointer owns (a database it opened, a pool it created); a database or pool passed in by
   * the caller stays open. Idempotent. Optional: a backend that owns nothing need not have it.
   */
  close?(): Promise<void>;
}
