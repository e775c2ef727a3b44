import {
  catchError,
  concatMap,
  defaultIfEmpty,
  defer,
  dematerialize,
  endWith,
  ignoreElements,
  map,
  materialize,
  takeLast,
  tap,
  throwError,
  type MonoTypeOperatorFunction,
  type Observable,
  type ObservableInput,
  type ObservableNotification,
} from 'rxjs';
import { encodeExtra } from '../src/types/row-codec.js';
import { canonicalJson } from '../src/types/messages.js';
import { toCheckpointError } from '../src/types/to-checkpoint-error.js';
import type { AgentEvent } from '../src/types/agent-events.js';
import { CheckpointError, type CheckpointOperation } from '../src/types/errors.js';
import type { Message } from '../src/types/messages.js';

/**
 * What {@link appendToCheckpoint} needs of a store: the two writes of a `Checkpointer`. Every `Checkpointer` fits
 * (a Promise is an `ObservableInput`); so does a fake whose writes are Observables, which is how the marble specs
 * drive it in virtual time.
 */
export interface CheckpointWriter {
  append(
    threadId: string,
    messages: readonly Message[],
    options?: { readonly expectedSeq?: number },
  ): ObservableInput<{ readonly seq: number }>;
  saveExtra(threadId: string, extra: Readonly<Record<string, unknown>>): ObservableInput<unknown>;
}

/** Options of {@link appendToCheckpoint}. */
export interface AppendToCheckpointOptions {
  /**
   * The thread's `seq` as the caller last loaded or wrote it. The first append passes it as `expectedSeq`; each
   * next one passes the `seq` the previous append returned. Each subscription starts again from this value.
   */
  readonly seq: number;
  /**
   * The `extra` record to save at every `turn_end` and at `agent_end`, read when that event arrives and copied as the stores encode it
   * (canonical JSON: functions, symbols and `undefined` fields are dropped), so the store gets the record as it was
   * at that turn's end even if the writes ahead of it take a while and the run has moved on. Without it, `extra` is
   * never saved.
   */
  readonly extra?: (() => Readonly<Record<string, unknown>>) | undefined;
  /**
   * The `extra` record the store holds, as you last loaded or saved it. When given, a `turn_end` whose record encodes
   * the same (canonical JSON) is not written again: the store already holds it. Each subscription starts from it,
   * then from the record it last saved. Without it, `extra` is saved at every `turn_end` and `agent_end`.
   */
  readonly storedExtra?: Readonly<Record<string, unknown>> | undefined;
  /** Called with the new `seq` after each append succeeded, before its `message_end` is emitted. */
  readonly onAppended?: ((seq: number) => void) | undefined;
  /** Called with the record after each `saveExtra` succeeded, before its `turn_end` (or `agent_end`) is emitted. */
  readonly onExtraSaved?: ((extra: Readonly<Record<string, unknown>>) => void) | undefined;
}

/**
 * The checkpoint sink: appends the message of every `message_end` to the thread **before** emitting that event, and
 * saves `extra` at every `turn_end` and at `agent_end` (when it differs from `storedExtra`) before emitting it (the
 * end of a run may change it: `onRunEnd` patches, a suspended run's approvals), so what a subscriber has
 * seen is never ahead of what is stored. Every other event passes through unchanged; order is kept (`concatMap`:
 * while a write is pending, later events wait behind it).
 *
 * Each append passes `expectedSeq` (first `options.seq`, then the `seq` each append returned), so a second writer
 * on the thread makes the stream error with the store's `ThreadConflictError` instead of interleaving.
 *
 * Errors: a failed write errors the stream with the store's typed error (`ThreadConflictError`, `CheckpointError`);
 * anything else a write throws is wrapped in a `CheckpointError` naming the thread. The events behind the failed
 * write are not emitted. An `onAppended` callback that throws errors the stream with its own error, as its append
 * completes, and so does an `onExtraSaved` callback, as its save completes. At a `turn_end` or `agent_end`, an `extra` callback that
 * throws errors the stream with its own error, and an `extra` record that cannot be encoded (a `BigInt`, a cycle)
 * with a `CheckpointError` (operation `saveExtra`).
 *
 * A source error, and those two errors, wait behind the pending writes like an event: the writes ahead of
 * them complete and their events are emitted first, so the messages that close a failed run are still stored (a
 * write that fails meanwhile errors the stream with its own error instead).
 *
 * Unsubscribing tears down a pending write: an Observable write is unsubscribed; a Promise cannot be cancelled, so
 * it may still land, and the next append with the old `seq` then meets a `ThreadConflictError` (reload and go on).
 *
 * The cost on events that are not written is one synchronous inner subscription.
 *
 * ```
 * source:     -u-E-u-T-|          (E: message_end, T: turn_end, u: any other event)
 * append:        -a|              (the write of E, subscribed when E arrives; E passes once it completes)
 * saveExtra:         -x|          (the write of T, when `extra` is given)
 * appendToCheckpoint(store, 'thread-1', { seq: 0, extra })
 * result:     -u---(Eu)(T|)
 * ```
 *
 * @example
 * const saved = await checkpointer.load('user-42');
 * runAgentLoop({ ...options, history: saved?.messages ?? [] })
 *   .pipe(appendToCheckpoint(checkpointer, 'user-42', { seq: saved?.seq ?? 0, extra: () => state.extra }))
 *   .subscribe(render);
 */
export function appendToCheckpoint(
  checkpointer: CheckpointWriter,
  threadId: string,
  options: AppendToCheckpointOptions,
): MonoTypeOperatorFunction<AgentEvent> {
  const { extra, onAppended, onExtraSaved } = options;
  return (source) =>
    defer(() => {
      let seq = options.seq; // per subscription: what this subscription last wrote
      // The canonical JSON of what the store holds for extra, when known: an equal record is not written again.
      let stored = options.storedExtra === undefined ? undefined : encodeStored(options.storedExtra);
      // Notifications, not events, go through the queue: an error or completion waits behind the pending writes.
      // The extra of each turn end, encoded as the event arrives (the run may change it before the write's turn
      // comes), as the store keeps it: a function in it is dropped here as the store would drop it.
      const extras = new Map<AgentEvent, string>();
      return source.pipe(
        tap((event) => {
          if ((event.type === 'turn_end' || event.type === 'agent_end') && extra !== undefined)
            extras.set(event, encodeExtra(threadId, extra()));
        }),
        materialize(),
        concatMap((notification): ObservableInput<ObservableNotification<AgentEvent>> => {
          if (notification.kind !== 'N') return [notification];
          const event = notification.value;
          if (event.type === 'message_end') {
            return write(threadId, 'append', () =>
              checkpointer.append(threadId, [event.message], { expectedSeq: seq }),
            ).pipe(
              takeLast(1),
              defaultIfEmpty(undefined),
              map((result) => {
                // A writer that completes without a result broke the contract; do not let the message slip by unstored.
                if (result === undefined) {
                  const message = `Checkpoint append for thread "${threadId}" completed without a seq`;
                  throw new CheckpointError({ operation: 'append', threadId, message });
                }
                seq = result.seq;
                onAppended?.(seq);
                return notification;
              }),
            );
          }
          if ((event.type === 'turn_end' || event.type === 'agent_end') && extra !== undefined) {
            const encoded = extras.get(event)!;
            extras.delete(event);
            if (encoded === stored) return [notification];
            const record = JSON.parse(encoded) as Record<string, unknown>;
            return write(threadId, 'saveExtra', () => checkpointer.saveExtra(threadId, record)).pipe(
              ignoreElements(),
              tap({
                complete: () => {
                  stored = encoded;
                  onExtraSaved?.(record);
                },
              }),
              endWith(notification),
            );
          }
          return [notification];
        }),
        dematerialize(),
      );
    });
}

/** A store write as a cold Observable whose errors are typed: cubepi's own as they are, others as `CheckpointError`. */
function write<T>(threadId: string, operation: CheckpointOperation, start: () => ObservableInput<T>): Observable<T> {
  return defer(start).pipe(
    catchError((error: unknown) => throwError(() => toCheckpointError(error, operation, threadId))),
  );
}

/** The canonical JSON of a stored record; `undefined` (unknown: write at the next turn end) if it cannot be encoded. */
function encodeStored(record: Readonly<Record<string, unknown>>): string | undefined {
  try {
    return canonicalJson(record);
  } catch {
    return undefined;
  }
}
