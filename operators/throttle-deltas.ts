import { asyncScheduler, Observable, type MonoTypeOperatorFunction, type SchedulerLike, type Subscription } from 'rxjs';
import type { AgentEvent, MessageUpdateEvent } from '../src/types/agent-events.js';
import { ConfigurationError } from '../src/types/errors.js';
import type { TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent } from '../src/types/stream-events.js';

type DeltaEvent = TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent;

/**
 * Fewer, larger deltas for a UI (or a wire) that cannot take one event per token, with nothing lost or reordered.
 * Consecutive `message_update`s carrying a `text_delta`, `thinking_delta` or `toolcall_delta` of the same block of the
 * same run are merged into one: its `delta` is their deltas joined, its `message` and `partial` the latest snapshot.
 * The merged update is emitted `ms` after its first delta arrived — or at once when any other event arrives (which
 * follows it), when a delta of another block arrives, and before the source completes or errors. Every other event
 * passes through unchanged and in order. `ms` = 0 merges what arrives in the same macrotask.
 *
 * Unsubscribing cancels the pending timer (the update held then is dropped with the subscription). Throws
 * {@link ConfigurationError} when `ms` is not a finite number ≥ 0.
 *
 * ```
 * source:  -a-b-c-----d-E---|    (a, b, c, d: text deltas of one block, E: message_end)
 * throttleDeltas(5)
 * result:  ------x------(yE)|    (x: 'abc', 5 ms after a; y: 'd', flushed by E, then E)
 * ```
 *
 * @example
 * agent.prompt$('Write a long story').pipe(throttleDeltas(50), textDeltas()).subscribe(appendToPage);
 */
export function throttleDeltas(
  ms: number,
  scheduler: SchedulerLike = asyncScheduler,
): MonoTypeOperatorFunction<AgentEvent> {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new ConfigurationError(`throttleDeltas: ms must be a finite number >= 0, got ${String(ms)}`);
  }
  return (source) =>
    new Observable<AgentEvent>((subscriber) => {
      let held: MessageUpdateEvent | undefined;
      let deltas: string[] = [];
      let timer: Subscription | undefined;
      const flush = () => {
        timer?.unsubscribe();
        timer = undefined;
        if (held === undefined) return;
        const last = held;
        const stream = last.streamEvent as DeltaEvent;
        const merged: MessageUpdateEvent =
          deltas.length === 1 ? last : { ...last, streamEvent: { ...stream, delta: deltas.join('') } };
        held = undefined;
        deltas = [];
        subscriber.next(merged);
      };
      const subscription = source.subscribe({
        next: (event) => {
          if (event.type === 'message_update' && isDelta(event)) {
            const stream = event.streamEvent as DeltaEvent;
            if (held !== undefined && !sameBlock(held, event)) flush();
            held = event;
            deltas.push(stream.delta);
            timer ??= scheduler.schedule(flush, ms);
            return;
          }
          flush();
          subscriber.next(event);
        },
        error: (error: unknown) => {
          flush();
          subscriber.error(error);
        },
        complete: () => {
          flush();
          subscriber.complete();
        },
      });
      return () => {
        timer?.unsubscribe();
        subscription.unsubscribe();
      };
    });
}

function isDelta(event: MessageUpdateEvent): boolean {
  const type = event.streamEvent.type;
  return type === 'text_delta' || type === 'thinking_delta' || type === 'toolcall_delta';
}

function sameBlock(a: MessageUpdateEvent, b: MessageUpdateEvent): boolean {
  const x = a.streamEvent as DeltaEvent;
  const y = b.streamEvent as DeltaEvent;
  return a.runId === b.runId && x.type === y.type && x.contentIndex === y.contentIndex;
}
