/**
 * Telling a failure before any content from one after.
 * @module
 */
import { concatMap, defer, throwError, type Observable, type OperatorFunction } from 'rxjs';
import type { ErrorEvent, StreamEvent } from '../types/stream-events.js';

/** Thrown into a stream by {@link failBeforeContent}: the attempt failed before any content and may be replaced. */
export class FailedBeforeContent extends Error {
  constructor(readonly event: ErrorEvent) {
    super(event.message.errorMessage ?? event.errorKind);
  }
}

/**
 * Per attempt (it is stateful: apply it inside `defer`): holds the `start` event back until the first content event,
 * and turns an `error` event that `replaceable(event)` accepts into a {@link FailedBeforeContent} Observable error —
 * but only while no content was emitted, so a stream that already produced text is never silently replayed. Once
 * content flowed, everything passes through as it is.
 */
export function failBeforeContent(
  replaceable: (event: ErrorEvent) => boolean,
): OperatorFunction<StreamEvent, StreamEvent> {
  return (source: Observable<StreamEvent>) =>
    defer(() => {
      let content = false;
      let held: StreamEvent | undefined;
      return source.pipe(
        concatMap((event): StreamEvent[] | Observable<never> => {
          if (content) return [event];
          if (event.type === 'start') {
            held = event;
            return [];
          }
          if (event.type === 'error' && replaceable(event)) return throwError(() => new FailedBeforeContent(event));
          if (event.type !== 'error') content = true;
          const out = held === undefined || event.type === 'error' ? [event] : [held, event];
          held = undefined;
          return out;
        }),
      );
    });
}
