import { mergeMap, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../src/types/agent-events.js';
import type { StreamEvent } from '../src/types/stream-events.js';

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

function deltasOf(type: 'text_delta' | 'thinking_delta'): OperatorFunction<AgentEvent | StreamEvent, string> {
  return mergeMap((event) => {
    const stream = event.type === 'message_update' ? event.streamEvent : event;
    return stream.type === type ? [stream.delta] : [];
  });
}
