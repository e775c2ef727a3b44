/**
 * A Node request's body for the Fetch handler, and what happens to the part the handler did not read (a 413, a 415,
 * a route that needs no body): drained when it is small, else the connection closes after the response. Left alone,
 * the unread bytes of a keep-alive connection were parsed as the next request, and the one after failed `ECONNRESET`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The most unread body bytes read and discarded to keep a connection alive; past it the connection closes. */
const DRAIN_BYTES = 1_048_576;

/**
 * `req`'s body as a web stream, read at the consumer's pace. Unlike `Readable.toWeb`, cancelling it (the handler
 * stopped at its byte limit) leaves the request open, so the response can still be written; the rest of the body is
 * then {@link settleUnreadBody}'s.
 * @internal
 */
export function requestBody(req: IncomingMessage): ReadableStream<Uint8Array> {
  let cancelled = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          if (cancelled) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.once('end', () => {
          if (!cancelled) controller.close();
        });
        req.once('error', (error) => {
          if (!cancelled) controller.error(error);
        });
        req.pause();
      },
      pull() {
        req.resume();
      },
      cancel() {
        cancelled = true;
        req.pause();
      },
    },
    { highWaterMark: 65_536, size: (chunk) => chunk.byteLength },
  );
}

/**
 * Called before the response head is written: when part of the body is still unread, a body declared no longer than
 * 1 MiB is read and discarded (the connection stays alive), any other gets `connection: close` and the connection
 * closes after the response, having read at most 1 MiB more.
 * @internal
 */
export function settleUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || req.readableEnded) return;
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  const discard = () => {
    let discarded = 0;
    req.removeAllListeners('data');
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.byteLength;
      if (discarded > DRAIN_BYTES) req.socket.destroy();
    });
    req.resume();
  };
  if (Number.isFinite(declared) && declared <= DRAIN_BYTES) {
    discard();
    return;
  }
  res.setHeader('connection', 'close');
  res.once('finish', discard);
}
