/**
 * What {@link threadView$} and {@link runView$} share: telling a reconnect from a first connection, and the
 * operators that turn a run's events into the messages and tool activity a view renders.
 * @module
 */
import type { Observable, Subscription } from 'rxjs';
import { assembleMessages } from '../../operators/assemble-messages.js';
import { throttleDeltas } from '../../operators/throttle-deltas.js';
import { toolActivity, type ToolActivity } from '../../operators/tool-activity.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { Message } from '../types/messages.js';

const EVENTS_PATH = /\/runs\/[^/]+\/events(\?|$)/;

/**
 * @internal `baseFetch` wrapped so that a second request for one run's events URL (`fromAgentEvents` resuming after
 * its last seq) calls `onReconnect` before it is sent. SSE only: a WebSocket stream does not go through `fetch`.
 */
export function watchReconnects(baseFetch: typeof fetch | undefined, onReconnect: () => void): typeof fetch {
  const send = baseFetch ?? globalThis.fetch.bind(globalThis);
  const attempts = new Map<string, number>();
  return (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (EVENTS_PATH.test(url)) {
      const count = (attempts.get(url) ?? 0) + 1;
      attempts.set(url, count);
      if (count > 1) onReconnect();
    }
    return send(input, init);
  };
}

/**
 * @internal Subscribes the two view pipelines to `events$`: messages assembled after `seed` (deltas merged within
 * `throttleMs`, default 16) and the tool activity. Returns their subscriptions, for the view's teardown.
 */
export function watchEvents(
  events$: Observable<AgentEvent>,
  seed: readonly Message[],
  throttleMs: number | undefined,
  onMessages: (messages: readonly Message[]) => void,
  onActivity: (activity: readonly ToolActivity[]) => void,
): Subscription[] {
  return [
    events$.pipe(throttleDeltas(throttleMs ?? 16), assembleMessages(seed)).subscribe(onMessages),
    events$.pipe(toolActivity()).subscribe(onActivity),
  ];
}
