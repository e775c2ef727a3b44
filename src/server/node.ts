/**
 * The agent server on Node's `http`: a request listener over the Fetch handler, and the same run streams over
 * WebSocket (with the `ws` package).
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import type { AgentServer } from './agent-server.js';
import { isAuthorized } from './auth.js';
import { frameBatches } from './frame-pump.js';

/**
 * A Node `http` request listener serving `server`: each request becomes a Fetch `Request` (its body streamed, its
 * signal aborted when the client goes away) and the `Response` is written back with the socket's back-pressure
 * respected (a stream waits for `drain`, so a slow client costs memory nowhere but in its own socket buffer). When the
 * client disconnects, its stream is cancelled.
 *
 * @example
 * http.createServer(toNodeListener(server)).listen(8787, '127.0.0.1');
 */
export function toNodeListener(server: AgentServer): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void serve(server, req, res);
  };
}

async function serve(server: AgentServer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const init: RequestInit = { method, headers, signal: controller.signal };
  if (hasBody) Object.assign(init, { body: Readable.toWeb(req), duplex: 'half' });
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, init);
  const response = await server.fetch(request);
  if (res.destroyed) {
    await response.body?.cancel();
    return;
  }
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  const gone = new Promise<void>((resolve) => res.once('close', resolve));
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), gone.then(() => undefined)]);
      if (next === undefined || next.done) break;
      if (!res.write(next.value)) {
        await Promise.race([new Promise((resolve) => res.once('drain', resolve)), gone]);
      }
      if (res.destroyed) break;
    }
  } finally {
    if (res.destroyed) await reader.cancel().catch(() => undefined);
    else res.end();
  }
}

/** Options of {@link attachWebSocket}. */
export interface WebSocketOptions {
  /** Bytes buffered on a socket before its pump waits for it to drain (default 1 MiB). */
  readonly highWaterMark?: number | undefined;
}

const RUN_EVENTS = /^\/runs\/([^/]+)\/events$/;

/**
 * Serves run streams over WebSocket on `httpServer`: a client connects to `…/runs/ID/events?after=SEQ` (the
 * WebSocket form of `Last-Event-ID`; `access_token=` when a token is set) and receives the same frames as the SSE
 * stream, one JSON text message per frame, then a normal close after the terminal frame. Upgrades to other paths are
 * left to other listeners. Needs the `ws` package (an optional peer dependency). Resolves when listening for upgrades.
 *
 * @example
 * const httpServer = http.createServer(toNodeListener(server));
 * await attachWebSocket(httpServer, server);
 */
export async function attachWebSocket(
  httpServer: Server,
  server: AgentServer,
  options: WebSocketOptions = {},
): Promise<void> {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const highWaterMark = options.highWaterMark ?? 1_048_576;
  const { basePath, authToken, heartbeatMs } = server.settings;
  httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!url.pathname.startsWith(basePath)) return;
    const match = RUN_EVENTS.exec(url.pathname.slice(basePath.length));
    if (match === null) return;
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    };
    void (async () => {
      if (!(await isAuthorized(req.headers.authorization ?? null, url, authToken))) return refuse(401, 'Unauthorized');
      let runId: string;
      try {
        runId = decodeURIComponent(match[1]!);
      } catch {
        return refuse(400, 'Bad Request');
      }
      const log = server.registry.log(runId);
      const after = Number(url.searchParams.get('after') ?? '0');
      if (!Number.isSafeInteger(after) || after < 0) return refuse(400, 'Bad Request');
      if (log === undefined) return refuse(404, 'Not Found');
      if (log.after(after) === undefined) return refuse(410, 'Gone');
      wss.handleUpgrade(req, socket, head, (ws) => {
        let leave!: () => void;
        const left = new Promise<void>((resolve) => (leave = resolve));
        ws.once('close', leave);
        ws.on('message', () => undefined);
        void (async () => {
          try {
            for await (const item of frameBatches(log, after, left, heartbeatMs)) {
              if (item === 'heartbeat') {
                ws.ping();
                continue;
              }
              for (const { json } of item) ws.send(json);
              while (ws.bufferedAmount > highWaterMark && ws.readyState === ws.OPEN) {
                await Promise.race([new Promise((resolve) => setTimeout(resolve, 5)), left]);
              }
            }
            if (ws.readyState === ws.OPEN) ws.close(log.ended ? 1000 : 1012, log.ended ? 'run ended' : 'restarting');
          } catch {
            if (ws.readyState === ws.OPEN) ws.close(1011, 'resume gone');
          }
        })();
      });
    })();
  });
}
