import { ThreadConflictError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type {
  AppendOptions,
  AppendResult,
  CheckpointData,
  Checkpointer,
  ListThreadsOptions,
  ThreadInfo,
} from './checkpointer.js';
import { checkExpectedSeq, checkExtra, checkListOptions, checkThreadId, cursorOf } from './check-arguments.js';
import { decodeExtra, decodeMessage, encodeExtra, encodeMessages } from '../types/row-codec.js';
import { toCheckpointError } from '../types/to-checkpoint-error.js';

interface StoredThread {
  /** Creation order: 1, 2, … never reused (the list cursor). */
  readonly order: number;
  /** Each message as its canonical JSON; `rows.length` is the thread's seq. */
  readonly rows: string[];
  extra: string;
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
 * see the same `expectedSeq` conflicts as with a database.
 *
 * @example
 * const agent = new Agent({ provider, model, checkpointer: new MemoryCheckpointer(), threadId: 'demo' });
 */
export class MemoryCheckpointer implements Checkpointer {
  readonly #threads = new Map<string, StoredThread>();
  #lastOrder = 0;

  /** {@inheritDoc Checkpointer.load} */
  async load(threadId: string): Promise<CheckpointData | null> {
    try {
      checkThreadId(threadId);
      const thread = this.#threads.get(threadId);
      if (thread === undefined) return null;
      const messages = thread.rows.map((row, seq) => decodeMessage(threadId, seq, row));
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
      // Serialise the whole batch first: a message that cannot be stored leaves the thread as it was.
      const rows = encodeMessages(threadId, messages);
      const thread = this.#threads.get(threadId);
      const actual = thread?.rows.length ?? 0;
      if (expected !== undefined && expected !== actual) throw new ThreadConflictError(threadId, expected, actual);
      if (rows.length === 0) return { seq: actual };
      const stored = thread ?? this.#create(threadId);
      for (const row of rows) stored.rows.push(row);
      stored.updatedAt = Date.now();
      return { seq: stored.rows.length };
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

  /** {@inheritDoc Checkpointer.listThreads} */
  async listThreads(options?: ListThreadsOptions): Promise<ThreadInfo[]> {
    try {
      const { limit, before } = checkListOptions(options);
      // A Map iterates in insertion order, which is creation order: walk it backwards from the cursor.
      const threads = [...this.#threads.entries()];
      const page: ThreadInfo[] = [];
      for (let i = threads.length - 1; i >= 0 && page.length < limit; i--) {
        const [threadId, thread] = threads[i]!;
        if (before !== undefined && thread.order >= before) continue;
        page.push({
          threadId,
          messageCount: thread.rows.length,
          createdAt: thread.createdAt,
          updatedAt: thread.updatedAt,
          cursor: cursorOf(thread.order),
        });
      }
      return page;
    } catch (error) {
      throw toCheckpointError(error, 'listThreads');
    }
  }

  /** {@inheritDoc Checkpointer.deleteThread} */
  async deleteThread(threadId: string): Promise<void> {
    try {
      checkThreadId(threadId);
      this.#threads.delete(threadId);
    } catch (error) {
      throw toCheckpointError(error, 'deleteThread', threadId);
    }
  }

  #create(threadId: string): StoredThread {
    const now = Date.now();
    const thread: StoredThread = { order: ++this.#lastOrder, rows: [], extra: '{}', createdAt: now, updatedAt: now };
    this.#threads.set(threadId, thread);
    return thread;
  }
}
