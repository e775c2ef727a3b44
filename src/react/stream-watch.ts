/**
 * How {@link threadView$} and {@link runView$} tell a reconnect from a first connection (their shared state and
 * pipelines are `ViewState`, in view-state.ts).
 * @module
 */

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
