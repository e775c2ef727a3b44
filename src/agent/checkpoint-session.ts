/**
 * An Agent's link to its checkpointer: restoring the thread, and the checkpoint sink every run goes through.
 * @module
 */
import { defer, of, type MonoTypeOperatorFunction, type Observable } from 'rxjs';
import { appendToCheckpoint } from '../../operators/append-to-checkpoint.js';
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import type { AgentEvent } from '../types/agent-events.js';
import { CheckpointError, ThreadConflictError } from '../types/errors.js';
import type { AgentStateStore } from './agent-state.js';
import { interruptedToolResults } from './interrupted-tool-results.js';

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
    private readonly threadId: string,
    private readonly store: AgentStateStore,
  ) {}

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
   * `extra` at turn ends, and keeps `seq` and the stored `extra` up to date.
   */
  sink(): MonoTypeOperatorFunction<AgentEvent> {
    const store = this.store;
    return appendToCheckpoint(this.checkpointer, this.threadId, {
      seq: this.seq,
      extra: () => store.extra,
      storedExtra: this.storedExtra,
      onAppended: (seq) => (this.seq = seq),
      onExtraSaved: (extra) => (this.storedExtra = extra),
    });
  }

  /**
   * The memory and the store may differ (a failed write, a reset): the next run reloads the thread (after a conflict,
   * with what the other writer stored) before going on.
   */
  invalidate(): void {
    this.restored = false;
  }

  /** Loads the thread (closing a tool batch a crash left open) and makes it the agent's transcript, extra and seq. */
  private async load(): Promise<void> {
    const { checkpointer, threadId } = this;
    const data = await checkpointer.load(threadId);
    let messages = data?.messages ?? [];
    let seq = data?.seq ?? 0;
    const interrupted = interruptedToolResults(messages);
    if (interrupted.length > 0) {
      ({ seq } = await checkpointer.append(threadId, interrupted, { expectedSeq: seq }));
      messages = [...messages, ...interrupted];
    }
    this.seq = seq;
    this.storedExtra = data === null ? {} : copyOrUnknown(data.extra);
    this.restored = true;
    this.store.restore(messages, data === null ? undefined : { ...data.extra });
  }
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
