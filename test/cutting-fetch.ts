// A fetch that cuts each run-event stream at a random byte offset (seeded), for the resume tests of the agent server
// and the queue server.
/** A small seeded generator (mulberry32), so a failing cut can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A `fetch` whose event streams break (a network error) after a random number of bytes (20 to `maxBytes`), each
 * connection anew.
 */
export function cuttingFetch(next: () => number, connections: { count: number }, maxBytes = 4000): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (
      !new URL(String(input instanceof Request ? input.url : input)).pathname.endsWith('/events') ||
      response.body === null
    ) {
      return response;
    }
    connections.count++;
    const cutAt = 20 + Math.floor(next() * maxBytes);
    let sent = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (sent + chunk.byteLength <= cutAt) {
            sent += chunk.byteLength;
            controller.enqueue(chunk);
            return;
          }
          controller.enqueue(chunk.subarray(0, cutAt - sent));
          sent = cutAt;
          controller.error(new TypeError('network connection lost'));
        },
      }),
    );
    return new Response(body, { status: response.status, headers: response.headers });
  };
}
