/**
 * The agent server on Node's `http`: a request listener over the Fetch handler, and the same run streams over
 * WebSocket (with the `ws` package).
 * @module
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { jsonOf, sseChunk, type RunStreamReader } from './frame-pump.js';
import { errorResponse, HEARTBEAT, HttpError, SSE_HEADERS } from './http.js';
import type { Principal } from '../types/principal.js';
import { requestBody, settleUnreadBody } from './request-body.js';
import { checkHost, checkOrigin } from './request-guards.js';
import { isOwnFetch, type HttpAgentServer } from './routes.js';
import type { WebSocket } from 'ws';

/**
 * A Node `http` request listener serving `server` (`createAgentServer`'s or `createQueueServer`'s): each request becomes a Fetch `Request` (its body streamed, its
 * signal aborted when the client goes away) and the `Response` is written back with the socket's back-pressure
 * respected (a stream waits for `drain`, so a slow client costs memory nowhere but in its own socket buffer). When the
 * client disconnects, its stream is cancelled.
 *
 * @example
 * http.createServer(toNodeListener(server)).listen(8787, '127.0.0.1');
 */
export function toNodeListener(server: HttpAgentServer): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // A request Node parsed but Fetch refuses (a host header that makes no URL, …) gets 400; never a crash.
    serve(server, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' }).end('bad request');
      else res.destroy();
    });
  };
}

async function serve(server: HttpAgentServer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // The fan-out route, served straight on the socket: no Request, Headers, Response or stream per watcher. Only for
  // the server's own `fetch`: one an application wrapped (to deny a caller) must see every request.
  if (req.method === 'GET' && isOwnFetch(Reflect.get(server, 'fetch'))) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const { basePath } = server.settings;
    const match = url.pathname.startsWith(basePath) ? RUN_EVENTS.exec(url.pathname.slice(basePath.length)) : null;
    if (match !== null) return serveRunEvents(server, req, res, url, match[1]!);
  }
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const init: RequestInit = { method, headers, signal: controller.signal };
  if (hasBody) Object.assign(init, { body: requestBody(req), duplex: 'half' });
  const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, init);
  const response = await server.fetch(request);
  if (res.destroyed) {
    await response.body?.cancel();
    return;
  }
  if (hasBody) settleUnreadBody(req, res);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  // The client leaving cancels the body: a pending read ends, and the stream's own cancel stops its reader.
  const onClose = () => void reader.cancel().catch(() => undefined);
  res.once('close', onClose);
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done || res.destroyed) break;
      if (!res.write(next.value)) await drained(res);
    }
  } finally {
    res.off('close', onClose);
    if (!res.destroyed) res.end();
  }
}

/** `GET /runs/:id/events` as Server-Sent Events, written to the socket at its pace (the Fetch handler's route). */
async function serveRunEvents(
  server: HttpAgentServer,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  segment: string,
): Promise<void> {
  const cors = server.corsFor(req.headers.origin ?? null);
  let reader: RunStreamReader;
  try {
    checkHost(req.headers.host, server.settings.hosts);
    const principal = await server.settings.access.authenticate(headRequest(req));
    let runId: string;
    try {
      runId = decodeURIComponent(segment);
    } catch {
      throw new HttpError(400, 'invalid_input', `malformed path segment: ${segment}`);
    }
    const lastEventId = req.headers['last-event-id'];
    reader = await server.openRunStream(
      runId,
      (Array.isArray(lastEventId) ? lastEventId[0] : lastEventId) ?? url.searchParams.get('after'),
      principal,
      url.searchParams.get('thread'),
    );
  } catch (error) {
    const response = errorResponse(error);
    res.writeHead(response.status, { ...Object.fromEntries(response.headers), ...cors });
    res.end(await response.text());
    return;
  }
  if (reader.atEnd === true) {
    res.writeHead(204, { ...cors }).end();
    return;
  }
  res.writeHead(200, { ...SSE_HEADERS, ...cors });
  res.flushHeaders();
  const stop = () => reader.stop();
  res.once('close', stop);
  try {
    for (let item = await reader.next(); item !== null && !res.destroyed; item = await reader.next()) {
      if (!res.write(item === 'heartbeat' ? HEARTBEAT : sseChunk(item))) await drained(res);
    }
  } finally {
    res.off('close', stop);
    if (!res.destroyed) res.end();
  }
}

/**
 * The request's method, URL and headers as a Fetch `Request` without a body: what `authenticate` is given on the
 * paths that do not go through the server's `fetch` (the fan-out route, WebSocket upgrades), so they decide alike.
 */
function headRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const path = req.url ?? '/';
  let url: string;
  try {
    url = new URL(path, `http://${req.headers.host ?? 'localhost'}`).href;
  } catch {
    url = new URL(path, 'http://localhost').href;
  }
  return new Request(url, { method: 'GET', headers });
}

/** Resolves when `res` can take more (`drain`) or is gone (`close`), leaving no listener behind. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** Options of {@link attachWebSocket}. */
export interface WebSocketOptions {
  /** Bytes buffered on a socket before its pump waits for it to drain (default 1 MiB). */
  readonly highWaterMark?: number | undefined;
}

const RUN_EVENTS = /^\/runs\/([^/]+)\/events$/;

/** The reason phrases of the statuses an upgrade is refused with. */
const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  410: 'Gone',
  503: 'Service Unavailable',
};

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
  server: HttpAgentServer,
  options: WebSocketOptions = {},
): Promise<void> {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const highWaterMark = options.highWaterMark ?? 1_048_576;
  const { basePath, access } = server.settings;
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A client that resets mid-handshake must not end the process (a socket without an 'error' listener throws).
    socket.on('error', () => socket.destroy());
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    };
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      socket.destroy(); // not a URL: not ours, and nobody else's either
      return;
    }
    const match = url.pathname.startsWith(basePath) ? RUN_EVENTS.exec(url.pathname.slice(basePath.length)) : null;
    if (match === null) {
      // Not ours. Left unanswered, the socket would stay open forever (one file descriptor per client that left):
      // when no other listener can answer it, say 404 and close.
      if (httpServer.listeners('upgrade').every((listener) => listener === onUpgrade)) refuse(404, 'Not Found');
      return;
    }
    void (async () => {
      try {
        checkHost(req.headers.host, server.settings.hosts);
      } catch {
        return refuse(403, 'Forbidden');
      }
      let principal: Principal;
      try {
        principal = await access.authenticate(headRequest(req));
      } catch {
        return refuse(401, 'Unauthorized');
      }
      // A WebSocket is not subject to CORS: the page of any origin may open one, so its Origin is checked here.
      try {
        checkOrigin(req.headers.origin, req.headers.host, server.corsFor(req.headers.origin ?? null) !== undefined);
      } catch {
        return refuse(403, 'Forbidden');
      }
      // A `fetch` the application wrapped decides too: the same path over SSE must be one it answers with 200.
      if (!isOwnFetch(Reflect.get(server, 'fetch'))) {
        const response = await server.fetch(headRequest(req)).catch(() => undefined);
        await response?.body?.cancel().catch(() => undefined);
        if (response?.status !== 200)
          return refuse(response?.status ?? 500, REASONS[response?.status ?? 500] ?? 'Error');
      }
      let runId: string;
      try {
        runId = decodeURIComponent(match[1]!);
      } catch {
        return refuse(400, 'Bad Request');
      }
      let reader: RunStreamReader;
      try {
        reader = await server.openRunStream(
          runId,
          url.searchParams.get('after'),
          principal,
          url.searchParams.get('thread'),
        );
      } catch (error) {
        if (error instanceof HttpError) return refuse(error.status, REASONS[error.status] ?? 'Error');
        return refuse(500, 'Internal Server Error');
      }
      // The client left while the stream was being opened.
      if (socket.destroyed) return reader.stop();
      wss.handleUpgrade(req, socket, head, (ws) => {
        // A malformed frame (over maxPayload, invalid UTF-8, unmasked) is an 'error' here: with a listener, ws closes
        // with 1009, 1007 or 1002; without one, it would throw and end the process.
        ws.on('error', () => reader.stop());
        ws.once('close', () => reader.stop());
        ws.on('message', () => undefined);
        void (async () => {
          try {
            for (let item = await reader.next(); item !== null; item = await reader.next()) {
              if (item === 'heartbeat') {
                ws.ping();
                continue;
              }
              for (const sent of item) ws.send(jsonOf(sent));
              if (ws.bufferedAmount > highWaterMark) await sendQueueDrained(ws, highWaterMark);
            }
            if (ws.readyState === ws.OPEN) {
              ws.close(reader.finished ? 1000 : 1012, reader.finished ? 'run ended' : 'restarting');
            }
          } catch {
            reader.stop();
            if (ws.readyState === ws.OPEN) ws.close(1011, 'resume gone');
          }
        })();
      });
    })();
  };
  httpServer.on('upgrade', onUpgrade);
}

/** Resolves when `ws` has sent all but `highWaterMark` bytes, or is closed (polled: ws has no drain event). */
async function sendQueueDrained(ws: WebSocket, highWaterMark: number): Promise<void> {
  while (ws.bufferedAmount > highWaterMark && ws.readyState === ws.OPEN) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
