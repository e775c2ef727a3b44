import { filter, map, pipe, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../src/types/agent-events.js';
import type { StreamEvent, TextDeltaEvent, ThinkingDeltaEvent } from '../src/types/stream-events.js';

/**
 * The text the model streams, delta by delta: from agent events (`message_update` carrying a `text_delta`) or
 * directly from a provider's stream events.
 *
 * ```
 * source:  -s-u-u-t-u-e-|     (u: message_update with a text_delta 'a' / 'b' / 'c', t: a thinking_delta)
 * textDeltas()
 * result:  ---a-b---c---|
 * ```
 *
 * @example
 * agent.prompt$('Tell me a story').pipe(textDeltas()).subscribe((text) => process.stdout.write(text));
 */
export function textDeltas(): OperatorFunction<AgentEvent | StreamEvent, string> {
  return deltasOf('text_delta');
}

/** The model's thinking, delta by delta (like {@link textDeltas}, for `thinking_delta`). */
export function thinkingDeltas(): OperatorFunction<AgentEvent | StreamEvent, string> {
  return deltasOf('thinking_delta');
}

// `filter` then `map`, not a `mergeMap` to a one- or zero-element array: this runs once per token, and an inner
// subscription to an array per event costs several times what a predicate and a projection do.
function deltasOf(type: 'text_delta' | 'thinking_delta'): OperatorFunction<AgentEvent | StreamEvent, string> {
  return pipe(
    filter((event) => streamEventOf(event).type === type),
    map((event) => (streamEventOf(event) as TextDeltaEvent | ThinkingDeltaEvent).delta),
  );
}

/** The stream event an agent event carries (`message_update`), or the stream event itself. */
function streamEventOf(event: AgentEvent | StreamEvent): AgentEvent | StreamEvent {
  return event.type === 'message_update' ? event.streamEvent : event;
}
