import { ThreadConflictError, ThreadHasForksError } from '../types/errors.js';
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
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { MemoryBlobStore } from './memory-blob-store.js';
import { checkBlobThreshold, hasFiles, offloadFiles, type BlobOptions, type OffloadedBatch } from './offload-files.js';
import { SerialQueue } from './serial-queue.js';

/** Options of {@link MemoryCheckpointer}. */
export type MemoryCheckpointerOptions = BlobOptions;

interface StoredThread {
  /** Creation order: 1, 2, … never reused (the list cursor). */
  readonly order: number;
  /** For a fork: the parent and the cut-off (its messages `[0, atSeq)` are the parent's). */
  readonly parent?: { readonly threadId: string; readonly thread: StoredThread; readonly atSeq: number };
  /** The ids of this thread's direct forks, in creation order. */
  readonly forks: Set<string>;
  /** This thread's own messages (seq `base`, `base + 1`, …) as canonical JSON; `base + rows.length` is its seq. */
  readonly rows: string[];
  /** The seq of the first own row: 0, or a fork's `atSeq`. */
  readonly base: number;
  extra: string;
  /** The owner's `Principal.id`; `null` for a thread written without one. */
  readonly owner: string | null;
  /** Every blob its messages (own and inherited) refer to, with the seq of the first message holding it. */
  readonly refs: Map<BlobRef, number>;
  readonly createdAt: number;
  updatedAt: number;
}

/**
 * A `Checkpointer` that keeps threads in this process's memory: for tests, demos and short-lived agents. Nothing
 * survives the process.
 *
 * It stores what the durable backends store (each message's canonical JSON), so it behaves like them: `load`
 * returns fresh copies (changing them never changes the store), a message that cannot be serialised is refused at
 * `append`, and keys come back sorted. Every operation is atomic (it runs without yielding), so concurrent callers
 * see the same `expectedSeq` conflicts as with a database. A fork holds a reference to its parent and the cut-off,
 * never a copy of the parent's messages.
 *
 * Files: a file block whose `data` is `blobThreshold` bytes or more (default 4 KiB) is stored by reference in `blobs`
 * (by default a `MemoryBlobStore` of its own), once whatever the number of messages or threads holding it; `load`
 * returns the block with `ref` and `size` instead of `data` (an `Agent` resolves it before each request).
 * `deleteThread` deletes the blobs no other thread refers to (a fork refers to its parent's). See
 * `docs/files-storage.md`.
 *
 * @example
 * const agent = new Agent({ provider, model, checkpointer: new MemoryCheckpointer(), threadId: 'demo' });
 */
export class MemoryCheckpointer implements Checkpointer {
  readonly #threads = new Map<string, StoredThread>();
  #lastOrder = 0;
  /** The store file bytes go to; `undefined` with `blobs: false`. */
  readonly blobs: BlobStore | undefined;
  readonly #ownBlobs: MemoryBlobStore | undefined;
  readonly #threshold: number;
  /** How many threads refer to each blob. */
  readonly #refCounts = new Map<BlobRef, number>();
  /** Writes and deletions of blobs in a store of the caller's, one at a time (they cannot share a write with rows). */
  readonly #blobQueue = new SerialQueue();

  /** Throws `ConfigurationError` for a bad `blobThreshold` or a `blobs` that is not a `BlobStore`. */
  constructor(options: MemoryCheckpointerOptions = {}) {
    this.#threshold = checkBlobThreshold(options);
    this.#ownBlobs = options.blobs === undefined ? new MemoryBlobStore() : undefined;
    this.blobs = options.blobs === false ? undefined : (options.blobs ?? this.#ownBlobs);
  }

  /** {@inheritDoc Checkpointer.load} */
  async load(threadId: string): Promise<CheckpointData | null> {
    try {
      checkThreadId(threadId);
      const thread = this.#threads.get(threadId);
      if (thread === undefined) return null;
      const rows = rowsOf(thread, seqOf(thread));
      const messages = rows.map((row, seq) => decodeMessage(threadId, seq, row));
      return { messages, extra: decodeExtra(threadId, thread.extra), seq: messages.length };
    } catch (error) {
      throw toCheckpointError(error, 'load', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.append} */
  async append(threadId: string, messages: readonly Message[], options?: AppendOptions): Promise<AppendResult> {
    try {
      checkThreadId(threadId);
      const expected = checkExpectedSeq(options);
      if (this.blobs !== undefined && hasFiles(messages)) {
        const batch = await offloadFiles(messages, this.#threshold);
        if (this.#ownBlobs !== undefined) return this.#write(threadId, batch, expected);
        const external = this.blobs;
        // The caller's store first (a failed put writes no row), then the rows; one at a time with deletions, so a
        // deletion cannot remove a blob between its put and the row that refers to it.
        return await this.#blobQueue.run(async () => {
          for (const [ref, bytes] of batch.blobs) {
            const stored = await external.put(bytes);
            if (stored !== ref) throw new Error(`The blob store stored ${ref} as ${String(stored)}`);
          }
          try {
            return this.#write(threadId, batch, expected);
          } catch (error) {
            // Nothing written (a conflict, a message that cannot be stored): take back the blobs nothing refers to.
            for (const ref of batch.blobs.keys()) {
              if (!this.#refCounts.has(ref)) await external.delete(ref).catch(() => undefined);
            }
            throw error;
          }
        });
      }
      return this.#write(threadId, { messages, blobs: new Map(), refs: new Map() }, expected);
    } catch (error) {
      throw toCheckpointError(error, 'append', threadId);
    }
  }

  /** The synchronous part of an append: the check, the blobs of its own store, the rows and the references. */
  #write(threadId: string, batch: OffloadedBatch, expected: number | undefined): AppendResult {
    try {
      // Serialise the whole batch first: a message that cannot be stored leaves the thread as it was.
      const rows = encodeMessages(threadId, batch.messages);
      const thread = this.#threads.get(threadId);
      const actual = thread === undefined ? 0 : seqOf(thread);
      if (expected !== undefined && expected !== actual) throw new ThreadConflictError(threadId, expected, actual);
      if (rows.length === 0) return { seq: actual };
      const stored = thread ?? this.#create(threadId);
      if (this.#ownBlobs !== undefined) for (const [ref, bytes] of batch.blobs) this.#ownBlobs.putSync(ref, bytes);
      for (const [ref, index] of batch.refs) this.#addRef(stored, ref, actual + index);
      for (const row of rows) stored.rows.push(row);
      stored.updatedAt = Date.now();
      return { seq: seqOf(stored) };
    } catch (error) {
      throw toCheckpointError(error, 'append', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.saveExtra} */
  async saveExtra(threadId: string, extra: Readonly<Record<string, unknown>>): Promise<void> {
    try {
      checkThreadId(threadId);
      checkExtra(extra);
      const row = encodeExtra(threadId, extra);
      const thread = this.#threads.get(threadId) ?? this.#create(threadId);
      thread.extra = row;
      thread.updatedAt = Date.now();
    } catch (error) {
      throw toCheckpointError(error, 'saveExtra', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.fork} */
  async fork(threadId: string, options: ForkOptions): Promise<ForkResult> {
    try {
      const { atSeq, newThreadId } = checkForkOptions(threadId, options);
      const parent = this.#threads.get(threadId);
      if (parent === undefined) throw noSuchParent(threadId);
      const seq = seqOf(parent);
      if (atSeq > seq) throw atSeqOutOfRange(threadId, atSeq, seq);
      const taken = this.#threads.get(newThreadId);
      if (taken !== undefined) throw forkTargetExists(newThreadId, seqOf(taken));
      const fork = this.#create(newThreadId, { threadId, thread: parent, atSeq }, parent.extra, parent.owner);
      // The fork refers to the blobs of the messages it shares: deleting the parent's last other holder keeps them.
      for (const [ref, seq] of parent.refs) if (seq < atSeq) this.#addRef(fork, ref, seq);
      parent.forks.add(newThreadId);
      return { threadId: newThreadId, seq: atSeq };
    } catch (error) {
      throw toCheckpointError(error, 'fork', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.listThreads} */
  async listThreads(options?: ListThreadsOptions): Promise<ThreadInfo[]> {
    try {
      const { limit, before, owner } = checkListOptions(options);
      // A Map iterates in insertion order, which is creation order: walk it backwards from the cursor.
      const threads = [...this.#threads.entries()];
      const page: ThreadInfo[] = [];
      for (let i = threads.length - 1; i >= 0 && page.length < limit; i--) {
        const [threadId, thread] = threads[i]!;
        if (before !== undefined && thread.order >= before) continue;
        if (owner !== undefined && thread.owner !== owner) continue;
        const { parent } = thread;
        page.push({
          threadId,
          messageCount: seqOf(thread),
          createdAt: thread.createdAt,
          updatedAt: thread.updatedAt,
          cursor: cursorOf(thread.order),
          ...(parent === undefined ? {} : { parent: { threadId: parent.threadId, atSeq: parent.atSeq } }),
          ...(thread.owner === null ? {} : { owner: thread.owner }),
        });
      }
      return page;
    } catch (error) {
      throw toCheckpointError(error, 'listThreads');
    }
  }

  /** {@inheritDoc Checkpointer.claimThread} */
  async claimThread(threadId: string, owner: string): Promise<string | null> {
    try {
      checkThreadId(threadId);
      checkOwner(owner);
      return (this.#threads.get(threadId) ?? this.#create(threadId, undefined, '{}', owner)).owner;
    } catch (error) {
      throw toCheckpointError(error, 'claimThread', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.threadOwner} */
  async threadOwner(threadId: string): Promise<string | null | undefined> {
    try {
      checkThreadId(threadId);
      return this.#threads.get(threadId)?.owner;
    } catch (error) {
      throw toCheckpointError(error, 'threadOwner', threadId);
    }
  }

  /** {@inheritDoc Checkpointer.deleteThread} */
  async deleteThread(threadId: string): Promise<void> {
    try {
      checkThreadId(threadId);
      const thread = this.#threads.get(threadId);
      if (thread === undefined) return;
      if (thread.forks.size > 0) throw new ThreadHasForksError(threadId, [...thread.forks]);
      thread.parent?.thread.forks.delete(threadId);
      this.#threads.delete(threadId);
      const unreferenced: BlobRef[] = [];
      for (const ref of thread.refs.keys()) {
        const count = this.#refCounts.get(ref)! - 1;
        if (count > 0) this.#refCounts.set(ref, count);
        else {
          this.#refCounts.delete(ref);
          unreferenced.push(ref);
        }
      }
      if (unreferenced.length === 0) return;
      if (this.#ownBlobs !== undefined) {
        for (const ref of unreferenced) this.#ownBlobs.deleteSync(ref);
        return;
      }
      // The thread is gone already; a failed deletion leaves an unreferenced blob behind, never a dangling ref.
      const external = this.blobs!;
      await this.#blobQueue.run(async () => {
        for (const ref of unreferenced) if (!this.#refCounts.has(ref)) await external.delete(ref);
      });
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread', threadId);
    }
  }

  #addRef(thread: StoredThread, ref: BlobRef, seq: number): void {
    if (thread.refs.has(ref)) return;
    thread.refs.set(ref, seq);
    this.#refCounts.set(ref, (this.#refCounts.get(ref) ?? 0) + 1);
  }

  #create(threadId: string, parent?: StoredThread['parent'], extra = '{}', owner: string | null = null): StoredThread {
    const now = Date.now();
    const thread: StoredThread = {
      order: ++this.#lastOrder,
      ...(parent === undefined ? {} : { parent }),
      forks: new Set(),
      rows: [],
      base: parent?.atSeq ?? 0,
      extra,
      owner,
      refs: new Map(),
      createdAt: now,
      updatedAt: now,
    };
    this.#threads.set(threadId, thread);
    return thread;
  }
}

function seqOf(thread: StoredThread): number {
  return thread.base + thread.rows.length;
}

/** The rows `[0, end)` of a thread: its ancestors' up to each cut-off, then its own (a loop: any depth). */
function rowsOf(thread: StoredThread, end: number): string[] {
  const segments: string[][] = [];
  for (let t: StoredThread | undefined = thread, hi = end; t !== undefined; t = t.parent?.thread) {
    segments.push(t.rows.slice(0, Math.max(0, hi - t.base)));
    hi = Math.min(hi, t.base);
  }
  return segments.reverse().flat();
}
