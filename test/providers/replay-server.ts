// A local HTTP server that answers SDK requests with scripted replies: recorded SSE bodies, HTTP errors, a connection
// dropped mid-stream, or silence. It records every request body, and when each request's connection closed.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted reply, used for the next request that arrives. */
export type Reply =
  /**
   * A `text/event-stream` response with this body, written in small pieces so the client's SSE parser reassembles:
   * 97 bytes each, or `pieces` (byte counts, used in turn); with `eventGapMs`, one SSE event at a time, that long
   * apart (a slow model).
   */
  | {
      readonly kind: 'sse';
      readonly body: string;
      readonly pieces?: readonly number[];
      readonly eventGapMs?: number;
    }
  /** An HTTP status with a JSON body (an API error) and extra headers (`retry-after`). */
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly body: unknown;
      readonly headers?: Readonly<Record<string, string>>;
    }
  /** The SSE headers and `body`, then the socket is destroyed: a connection reset mid-stream. */
  | { readonly kind: 'drop'; readonly body: string }
  /** The SSE headers and `body`, then nothing more: the connection stays open until the client closes it. */
  | { readonly kind: 'stall'; readonly body: string }
  /** The request is read and never answered: not even the status line. */
  | { readonly kind: 'hang' };

export const sse = (body: string): Reply => ({ kind: 'sse', body });

/** What the server saw of one request. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- request bodies are asserted field by field
  readonly body: any;
  readonly rawBody: string;
  /**
   * Settles when the response is over: `{ finished: true }` when it was sent whole, `{ finished: false }` when the
   * connection closed first (the client aborted).
   */
  readonly closed: Promise<{ finished: boolean }>;
}

const PIECE = 97; // bytes per write: an odd size, so pieces split lines, JSON and UTF-8 sequences alike

export class ReplayServer {
  readonly requests: RecordedRequest[] = [];
  /**
   * The model ids a `GET …/models` lists (the OpenAI list format), answered outside the queue and not recorded in
   * `requests`; undefined (the default): such a request takes the next reply like any other.
   */
  models: readonly string[] | undefined;
  /** How many `GET …/models` requests the `models` list answered. */
  modelListings = 0;
  private readonly queue: Reply[] = [];

  private constructor(private readonly server: Server) {}

  /** Starts a server on a free loopback port. */
  static async start(): Promise<ReplayServer> {
    const server = createServer();
    const replay = new ReplayServer(server);
    server.on('request', (req, res) => {
      if (replay.models !== undefined && req.method === 'GET' && /\/models$/.test(req.url ?? '')) {
        replay.modelListings++;
        const data = replay.models.map((id) => ({ id, object: 'model', created: 1, owned_by: 'local' }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data }));
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        const closed = new Promise<{ finished: boolean }>((resolve) =>
          res.once('close', () => resolve({ finished: res.writableFinished })),
        );
        replay.requests.push({
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: rawBody === '' ? undefined : (JSON.parse(rawBody) as unknown),
          rawBody,
          closed,
        });
        const reply = replay.queue.shift() ?? {
          kind: 'status',
          status: 599,
          body: { error: { type: 'test_error', message: 'no reply queued on the replay server' } },
        };
        switch (reply.kind) {
          case 'status':
            res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
            res.end(JSON.stringify(reply.body));
            return;
          case 'hang':
            return;
          case 'sse':
          case 'drop':
          case 'stall': {
            res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
            if (reply.kind === 'sse' && reply.eventGapMs !== undefined) {
              const events = reply.body.split('\n\n').filter((e) => e.trim() !== '');
              const gap = reply.eventGapMs;
              const next = (i: number): void => {
                if (res.destroyed) return;
                if (i === events.length) return void res.end();
                res.write(`${events[i]}\n\n`);
                setTimeout(() => next(i + 1), gap);
              };
              next(0);
              return;
            }
            const bytes = Buffer.from(reply.body, 'utf8');
            const pieces = reply.kind === 'sse' ? reply.pieces : undefined;
            let offset = 0;
            let written = 0;
            const pump = (): void => {
              if (res.destroyed) return;
              if (offset >= bytes.length) {
                if (reply.kind === 'sse') res.end();
                else if (reply.kind === 'drop') res.socket?.destroy();
                return;
              }
              const piece = pieces === undefined ? PIECE : pieces[written++ % pieces.length]!;
              res.write(bytes.subarray(offset, offset + piece));
              offset += piece;
              setImmediate(pump);
            };
            pump();
          }
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return replay;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Queues replies for the next requests, in order. */
  reply(...replies: Reply[]): this {
    this.queue.push(...replies);
    return this;
  }

  /** Forgets recorded requests and queued replies. */
  reset(): void {
    this.requests.length = 0;
    this.queue.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
