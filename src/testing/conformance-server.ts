/**
 * The local HTTP server of the provider conformance kit, on the caller's `createServer` (node:http's, or any with its
 * shape): `cubepi/testing` itself imports no `node:` module.
 * @module
 */
import type { WireReply } from './conformance-wire.js';

/** The part of node:http's `IncomingMessage` the kit reads. */
export interface IncomingLike {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

/** The part of node:http's `ServerResponse` the kit writes to. */
export interface ResponseLike {
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: string | Uint8Array): unknown;
  end(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

/** The part of node:http's `Server` the kit uses. */
export interface ServerLike {
  listen(port: number, host: string, callback: () => void): unknown;
  address(): unknown;
  close(callback: () => void): unknown;
  closeAllConnections?(): void;
}

/** node:http's `createServer`, or anything with its shape. */
export type CreateServerLike = (listener: (request: IncomingLike, response: ResponseLike) => void) => ServerLike;

/** What the server saw of one request. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly body: string;
  /** Settles when the exchange is over: `finished: false` when the connection closed before the response ended. */
  readonly closed: Promise<{ readonly finished: boolean }>;
}

/** How the server answers the next request: a reply, optionally held open after its first `sendChunks` chunks. */
export interface ScriptedReply {
  readonly reply: WireReply;
  /** Send only this many chunks, then keep the connection open (a stall) until the client closes it. */
  readonly holdAfter?: number | undefined;
}

/** A started conformance server. */
export interface ConformanceServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: readonly SeenRequest[];
  /** Settles with the `n`-th request (0-based) once it arrived. */
  request(n: number): Promise<SeenRequest>;
  /** Queues the answer to the next request. */
  reply(scripted: ScriptedReply): void;
  close(): Promise<void>;
}

/** Starts a server on a free loopback port. An unscripted request gets a 599. */
export async function startConformanceServer(createServer: CreateServerLike): Promise<ConformanceServer> {
  const requests: SeenRequest[] = [];
  const queue: ScriptedReply[] = [];
  const waiters: (() => void)[] = [];
  const server = createServer((req, res) => {
    const parts: Uint8Array[] = [];
    req.on('data', (chunk) => parts.push(chunk));
    req.on('end', () => {
      const closed = new Promise<{ finished: boolean }>((resolve) =>
        res.once('close', () => resolve({ finished: res.writableFinished })),
      );
      requests.push({ method: req.method ?? '', path: req.url ?? '', body: decode(parts), closed });
      for (const wake of waiters.splice(0)) wake();
      const scripted = queue.shift() ?? {
        reply: { status: 599, headers: { 'content-type': 'text/plain' }, chunks: ['no reply scripted'] },
      };
      const { reply } = scripted;
      res.writeHead(reply.status ?? 200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        ...reply.headers,
      });
      const count = scripted.holdAfter ?? reply.chunks.length;
      let i = 0;
      // One chunk per tick, so the client reads them as separate pieces.
      const pump = (): void => {
        if (res.destroyed) return;
        if (i < count) {
          res.write(reply.chunks[i++]!);
          setTimeout(pump, 0);
        } else if (scripted.holdAfter === undefined) res.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async request(n) {
      while (requests.length <= n) await new Promise<void>((resolve) => waiters.push(resolve));
      return requests[n]!;
    },
    reply(scripted) {
      queue.push(scripted);
    },
    close() {
      server.closeAllConnections?.();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function decode(parts: readonly Uint8Array[]): string {
  const decoder = new TextDecoder();
  return parts.map((part) => decoder.decode(part, { stream: true })).join('') + decoder.decode();
}
