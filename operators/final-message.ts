import { defaultIfEmpty, filter, map, takeLast, type OperatorFunction } from 'rxjs';
import type { AssistantMessage } from '../src/types/messages.js';
import type { StreamEvent, TerminalStreamEvent } from '../src/types/stream-events.js';

/**
 * The final message of a provider stream: the message of its terminal `done` or `error` event. A stream that
 * completes without a terminal event broke the provider contract: the result errors with a `TypeError` saying so.
 *
 * ```
 * source:  -s-d-d-D|          (D: done { message: M })
 * finalMessage()
 * result:  --------(M|)
 * ```
 *
 * @example
 * const message = await lastValueFrom(provider.stream(model, messages).pipe(finalMessage()));
 */
export function finalMessage(): OperatorFunction<StreamEvent, AssistantMessage> {
  return (source) =>
    source.pipe(
      filter((event): event is TerminalStreamEvent => event.type === 'done' || event.type === 'error'),
      takeLast(1),
      defaultIfEmpty(undefined),
      map((event) => {
        if (event === undefined)
          throw new TypeError('The provider stream completed without a terminal done/error event');
        return event.message;
      }),
    );
}
