/**
 * An Agent's link to its checkpointer: restoring the thread, and the checkpoint sink every run goes through.
 * @module
 */
import { defer, of, tap, type MonoTypeOperatorFunction, type Observable } from 'rxjs';
import { appendToCheckpoint } from '../../operators/append-to-checkpoint.js';
import type { Checkpointer, ForkResult } from '../checkpoint/checkpointer.js';
import type { AgentEvent } from '../types/agent-events.js';
import { CheckpointError, InvalidStateError, ThreadConflictError } from '../types/errors.js';
import type { AgentStateStore } from './agent-state.js';
import { toolCallsOf, type Message } from '../types/messages.js';
import { interruptedToolResults } from '../loop/interrupted-tool-results.js';

/** The repair a restore makes (results for the calls of an unfinished batch), for cubepi/server's lost runs. */
export { interruptedToolResults };
import type { StoreBarrier } from './store-barrier.js';
import { decodeStoredExtra, type StoredApprovals } from './stored-extra.js';

/**
 * One thread of one checkpointer, as an Agent uses it: whether the in-memory transcript is the thread's, the `seq`
 * and `extra` the store holds as last loaded or written, the restore that loads them into the state, and the sink
 * ({@link appendToCheckpoint}) that stores each run's messages before their `message_end` reaches anyone.
 */
export class CheckpointSession {
  /** The thread's `seq` as last loaded or written (the `expectedSeq` of the next append). */
  private seq = 0;
  /**
   * The `extra` record the store holds, as last loaded or saved (`undefined`: not known): a turn end with the same
   * record writes nothing.
   */
  private storedExtra: Readonly<Record<string, unknown>> | undefined = {};
  /** Whether the in-memory transcript is the thread's (restored since the last {@link invalidate}). */
  restored = false;
  /** The restore in flight, shared by everyone who needs it until it settles (one load at a time). */
  private restoring: Promise<void> | undefined;

  constructor(
    private readonly checkpointer: Checkpointer,
    /** The thread the agent works on: the `threadId` option, then the last fork it moved to. */
    private thread: string,
    private readonly store: AgentStateStore,
  ) {}

  /** The thread the agent works on now. */
  get threadId(): string {
    return this.thread;
  }

  /** Whether the checkpointer implements the optional `fork`. */
  get canFork(): boolean {
    return typeof this.checkpointer.fork === 'function';
  }

  /** The thread's `seq` as last loaded or written (meaningful once restored). */
  get storedSeq(): number {
    return this.seq;
  }

  /**
   * Forks the thread at `atSeq` into `newThreadId`, then makes the fork the agent's thread: the
   * next restore loads it. Call it restored and idle. Rejects with {@link InvalidStateError} when the checkpointer has
   * no `fork`, and with the checkpointer's typed error when the fork fails (then nothing changed).
   */
  async fork(atSeq: number, newThreadId: string): Promise<ForkResult> {
    if (this.checkpointer.fork === undefined) {
      throw new InvalidStateError('fork: this checkpointer does not implement fork()');
    }
    const result = await this.checkpointer.fork(this.thread, { atSeq, newThreadId });
    this.thread = newThreadId;
    this.invalidate();
    return result;
  }

  /**
   * Restores the thread when it has not been (a cold Observable of one `undefined`, synchronous when there is nothing
   * to restore). Whether to restore is decided at subscription, and a restore in flight is joined, not repeated: a
   * second load finishing late would overwrite what a run has added since.
   */
  restore$(): Observable<void> {
    return defer(() => {
      if (this.restored) return of(undefined);
      return (this.restoring ??= this.load().finally(() => (this.restoring = undefined)));
    });
  }

  /**
   * The checkpoint sink for a run over the current transcript: appends every message before its `message_end`, saves
   * `extra` at turn ends, and keeps `seq` and the stored `extra` up to date. With `barrier`, it counts the messages that
   * enter it and those it stored, so the run's loop can wait until its tool calls are stored before they run.
   */
  sink(barrier?: StoreBarrier): MonoTypeOperatorFunction<AgentEvent> {
    const store = this.store;
    const sink = appendToCheckpoint(this.checkpointer, this.thread, {
      seq: this.seq,
      extra: () => store.storedExtra(),
      storedExtra: this.storedExtra,
      onAppended: (seq) => {
        this.seq = seq;
        barrier?.storedOne();
      },
      onExtraSaved: (extra) => (this.storedExtra = extra),
    });
    if (barrier === undefined) return sink;
    return (source) =>
      source.pipe(
        tap((event) => {
          if (event.type === 'message_end') barrier.emittedOne();
        }),
        sink,
        tap({ error: (error: unknown) => barrier.fail(error) }),
      );
  }

  /**
   * The memory and the store may differ (a failed write, a reset): the next run reloads the thread (after a conflict,
   * with what the other writer stored) before going on.
   */
  invalidate(): void {
    this.restored = false;
  }

  /**
   * Stores the state and approvals now (an approval's answer is stored before its call runs). Rejects with the
   * checkpointer's typed error; then the memory and the store may differ, and the next run reloads.
   */
  async saveNow(): Promise<void> {
    const record = this.store.storedExtra();
    try {
      await this.checkpointer.saveExtra(this.thread, record);
    } catch (error) {
      this.invalidate();
      throw error;
    }
    this.storedExtra = copyOrUnknown(record);
  }

  /**
   * Loads the thread and makes it the agent's transcript, state, approvals and seq. A tool batch a crash left open is
   * closed first: each unanswered call gets an `interrupted` result — except a call waiting for an approval, and an
   * approved call of an idempotent tool (it runs when the batch resumes). An approved call of any other tool whose
   * result is missing may have run before the crash: it gets `interrupted`, never a second run.
   */
  private async load(): Promise<void> {
    const { checkpointer, thread: threadId } = this;
    const data = await checkpointer.load(threadId);
    let messages = data?.messages ?? [];
    let seq = data?.seq ?? 0;
    const decoded = data === null ? undefined : decodeStoredExtra(data.extra);
    const requests = new Map((decoded?.approvals?.requests ?? []).map((r) => [r.toolCallId, r]));
    const tools = new Map(this.store.tools.map((tool) => [tool.name, tool]));
    const waiting = (toolCallId: string): boolean => {
      const request = requests.get(toolCallId);
      if (request === undefined) return false;
      const answer = request.answer;
      if (answer === undefined || 'deny' in answer || 'output' in answer) return true;
      return tools.get(request.toolName)?.idempotent === true;
    };
    const interrupted = interruptedToolResults(messages, waiting);
    if (interrupted.length > 0) {
      ({ seq } = await checkpointer.append(threadId, interrupted, { expectedSeq: seq }));
      messages = [...messages, ...interrupted];
    }
    this.seq = seq;
    this.storedExtra = data === null ? {} : copyOrUnknown(data.extra);
    this.restored = true;
    this.store.restore(
      messages,
      decoded === undefined ? undefined : { ...decoded, approvals: stillOpen(decoded.approvals, messages) },
    );
  }
}

/** The approvals, if the batch they belong to is still open at the end of `messages` (else none). */
function stillOpen(approvals: StoredApprovals | undefined, messages: readonly Message[]): StoredApprovals | undefined {
  if (approvals === undefined) return undefined;
  let last = messages.length - 1;
  while (last >= 0 && messages[last]!.role === 'toolResult') last--;
  const assistant = messages[last];
  if (assistant?.role !== 'assistant') return undefined;
  const calls = new Set(toolCallsOf(assistant).map((call) => call.id));
  return approvals.requests.every((r) => calls.has(r.toolCallId)) ? approvals : undefined;
}

/** Whether a run failed because its checkpoint could not be written (or read): the store and memory may differ. */
export function isCheckpointFailure(error: unknown): boolean {
  return error instanceof CheckpointError || error instanceof ThreadConflictError;
}

/**
 * A deep copy of a loaded `extra` (the agent's `extra` shares nested objects with it, and hooks may change them), or
 * `undefined` when a store handed back something that cannot be copied: then it is not known, and the next turn end
 * writes `extra` whatever it holds.
 */
function copyOrUnknown(extra: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> | undefined {
  try {
    return structuredClone(extra);
  } catch {
    return undefined;
  }
}
