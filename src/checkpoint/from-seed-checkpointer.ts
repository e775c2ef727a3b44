/**
 * A `Checkpointer` over a backend of the seed's protocol: `load`, `append` and `saveExtra` alone.
 * @module
 */
import {
  CheckpointCorruptionError,
  CheckpointUnsupportedError,
  ConfigurationError,
  ThreadConflictError,
} from '../types/errors.js';
import { canonicalJson, type Message } from '../types/messages.js';
import { decodeExtra, decodeMessage, encodeExtra, encodeMessages } from '../types/row-codec.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';
import type {
  AppendOptions,
  AppendResult,
  CheckpointData,
  Checkpointer,
  ListThreadsOptions,
  ThreadInfo,
} from './checkpointer.js';
import { checkExpectedSeq, checkExtra, checkListOptions, checkThreadId } from './check-arguments.js';

/** What a seed backend's `load` returns: the thread's messages and its `extra` record (`{}` when absent). */
export interface SeedCheckpointData {
  readonly messages: readonly Message[];
  readonly extra?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * The seed's checkpointer protocol (seed 004, "任何匹配下面 Protocol 的对象就是 Checkpointer"): any object with these
 * three methods. Each may return a value or a Promise; what `append` returns is ignored (it may be `void`).
 * `deleteThread` is optional: given, `fromSeedCheckpointer` passes deletions to it; absent, they are refused.
 */
export interface SeedCheckpointer {
  /** The thread's messages and `extra`, or `null`/`undefined` for a thread never written. */
  load(threadId: string): SeedCheckpointData | null | undefined | PromiseLike<SeedCheckpointData | null | undefined>;
  /** Stores `messages` after the thread's last message, creating the thread if needed. */
  append(threadId: string, messages: Message[]): unknown;
  /** Replaces the thread's `extra` record, creating the thread with no messages if needed. */
  saveExtra(threadId: string, extra: Record<string, unknown>): unknown;
  /** Removes the thread (optional; a thread that does not exist is no error). */
  deleteThread?(threadId: string): unknown;
}

/** Options of {@link fromSeedCheckpointer}. */
export interface SeedCheckpointerOptions {
  /**
   * How `append({ expectedSeq })` is checked. `'reload'` (default): the thread is loaded before each append and its
   * message count compared with `expectedSeq` (a mismatch is a `ThreadConflictError`, nothing written); the check and
   * the write run one at a time per thread within this adapter, so writers in one process that share it cannot
   * interleave, but two processes can both pass the check before either writes (the seed protocol has no atomic
   * compare-and-append). Each append then costs a `load`. `'none'`: `expectedSeq` is trusted, not checked (no load
   * before an append that passes it); the returned `seq` is `expectedSeq` plus the messages appended.
   */
  readonly conflictCheck?: 'reload' | 'none' | undefined;
}

/**
 * Adapts an object of the seed's protocol — `load(threadId)`, `append(threadId, messages)`, `saveExtra(threadId,
 * extra)`, each sync or async — to cubepi's {@link Checkpointer}, so a store written for the seed runs an `Agent`.
 *
 * What it adds: thread ids checked (`InvalidInputError`); every message serialised first (one that cannot be is
 * refused before anything reaches the backend) and handed over as a canonical-JSON copy, and what `load` returns
 * re-read the same way (a fresh copy, keys sorted; a value that is not a message is a `CheckpointCorruptionError`
 * naming thread and seq); the backend's own errors typed as `CheckpointError`.
 *
 * What it cannot do, by the protocol's limits:
 * - **seq** is the number of messages the backend's `load` returns; the backend keeps no counter of its own.
 * - **Conflicts** (`expectedSeq`) are checked by reloading, one write at a time per thread in this process; not across
 *   processes (see {@link SeedCheckpointerOptions.conflictCheck}).
 * - **Listing**: `listThreads` rejects with `CheckpointUnsupportedError` (not an empty page, which would say "no
 *   threads" where the truth is "cannot tell"); `cubepi/server`'s thread list needs a full checkpointer.
 * - **Deletion**: `deleteThread` goes to the backend's `deleteThread` when it has one, else rejects with
 *   `CheckpointUnsupportedError`.
 * - **No `fork`, no owners, no `blobs`**: `fork` is absent (an `Agent` refuses `fork()` and `retryFrom()`), as are
 *   `claimThread`/`threadOwner` (`cubepi/server` keeps owners in memory), and files stay inline in the messages.
 *
 * A backend without one of the three methods is a `ConfigurationError`.
 *
 * @example
 * const threads = new Map<string, { messages: Message[]; extra: Record<string, unknown> }>();
 * const checkpointer = fromSeedCheckpointer({
 *   load: (id) => threads.get(id) ?? null,
 *   append: (id, messages) => void (threads.get(id) ?? threads.set(id, { messages: [], extra: {} }).get(id)!).messages.push(...messages),
 *   saveExtra: (id, extra) => void threads.set(id, { messages: threads.get(id)?.messages ?? [], extra }),
 * });
 * const agent = new Agent({ provider, model, checkpointer, threadId: 'user-42' });
 */
export function fromSeedCheckpointer(backend: SeedCheckpointer, options: SeedCheckpointerOptions = {}): Checkpointer {
  const candidate = backend as Partial<SeedCheckpointer> | null | undefined;
  for (const method of ['load', 'append', 'saveExtra'] as const) {
    if (typeof candidate?.[method] !== 'function') {
      throw new ConfigurationError(`fromSeedCheckpointer: the backend needs a ${method}() method`);
    }
  }
  const { conflictCheck = 'reload' } = options;
  if (conflictCheck !== 'reload' && conflictCheck !== 'none') {
    throw new ConfigurationError('fromSeedCheckpointer: conflictCheck must be "reload" or "none"');
  }
  const queue = new ThreadQueue();

  const load = async (threadId: string): Promise<CheckpointData | null> => {
    const data = await backend.load(threadId);
    if (data === null || data === undefined) return null;
    if (typeof data !== 'object' || !Array.isArray(data.messages)) {
      throw new CheckpointCorruptionError(threadId, undefined, 'the backend loaded no messages array');
    }
    const messages = data.messages.map((message, seq) =>
      decodeMessage(threadId, seq, reencode(threadId, seq, message)),
    );
    const extra = data.extra === undefined ? {} : decodeExtra(threadId, reencode(threadId, undefined, data.extra));
    return { messages, extra, seq: messages.length };
  };
  const count = async (threadId: string): Promise<number> => (await backend.load(threadId))?.messages.length ?? 0;

  const checkpointer: Checkpointer = {
    async load(threadId) {
      try {
        checkThreadId(threadId);
        return await load(threadId);
      } catch (error) {
        throw toCheckpointError(error, 'load', threadId);
      }
    },
    async append(threadId: string, messages: readonly Message[], options?: AppendOptions): Promise<AppendResult> {
      try {
        checkThreadId(threadId);
        const expected = checkExpectedSeq(options);
        // Serialised first: a message that cannot be stored leaves the backend untouched; the backend gets copies.
        const copies = encodeMessages(threadId, messages).map((row) => JSON.parse(row) as Message);
        return await queue.run(threadId, async () => {
          const trusted = conflictCheck === 'none' && expected !== undefined;
          const actual = trusted ? expected : await count(threadId);
          if (expected !== undefined && expected !== actual) throw new ThreadConflictError(threadId, expected, actual);
          if (copies.length > 0) await backend.append(threadId, copies);
          return { seq: actual + copies.length };
        });
      } catch (error) {
        throw toCheckpointError(error, 'append', threadId);
      }
    },
    async saveExtra(threadId, extra) {
      try {
        checkThreadId(threadId);
        checkExtra(extra);
        const copy = JSON.parse(encodeExtra(threadId, extra)) as Record<string, unknown>;
        await queue.run(threadId, async () => {
          await backend.saveExtra(threadId, copy);
        });
      } catch (error) {
        throw toCheckpointError(error, 'saveExtra', threadId);
      }
    },
    async listThreads(options?: ListThreadsOptions): Promise<ThreadInfo[]> {
      checkListOptions(options); // a bad limit or cursor is still the caller's mistake, said as such
      throw new CheckpointUnsupportedError(
        'listThreads',
        'the backend has only the seed protocol (load, append, saveExtra), which cannot list threads',
      );
    },
    async deleteThread(threadId) {
      try {
        checkThreadId(threadId);
        if (typeof backend.deleteThread !== 'function') {
          throw new CheckpointUnsupportedError('deleteThread', 'the backend has no deleteThread()', threadId);
        }
        await queue.run(threadId, async () => {
          await backend.deleteThread!(threadId);
        });
      } catch (error) {
        throw toCheckpointError(error, 'deleteThread', threadId);
      }
    },
  };
  return checkpointer;
}

/** The canonical JSON of a value the backend returned; one that has none is a corruption of its row. */
function reencode(threadId: string, seq: number | undefined, value: unknown): string {
  try {
    return canonicalJson(value);
  } catch (error) {
    throw new CheckpointCorruptionError(threadId, seq, 'the backend returned a value that is not JSON', {
      cause: error,
    });
  }
}

/** One section at a time per thread (check and write of an append, a saveExtra, a delete), in call order. */
class ThreadQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(threadId: string, section: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(threadId) ?? Promise.resolve();
    const result = previous.then(section, section);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(threadId, tail);
    // The map holds only threads with a section in flight.
    void tail.then(() => {
      if (this.#tails.get(threadId) === tail) this.#tails.delete(threadId);
    });
    return result;
  }
}
