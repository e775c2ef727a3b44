/**
 * `fromAgentEvents`: one run's events from a cubepi server as an Observable, over SSE (fetch) or WebSocket,
 * reconnecting with backoff and resuming after the last seq seen.
 * @module
 */
import { Observable } from 'rxjs';
import { DeltaDecoder } from '../wire/compact-deltas.js';
import { parseFrame, type SequencedEvent, type WireFrame } from '../wire/frames.js';
import { SseParser } from '../wire/sse-parser.js';
import {
  AgentServerError,
  LimitExceededError,
  RemoteRunError,
  RunLostError,
  StreamBrokenError,
  type LimitErrorCode,
} from './errors.js';

/** Reconnection of a broken stream. */
export interface RetryOptions {
  /** The first wait before reconnecting, in ms (default 250); doubled per failed attempt, with jitter. */
  readonly initialDelayMs?: number | undefined;
  /** The longest wait, in ms (default 5,000). */
  readonly maxDelayMs?: number | undefined;
  /** Failed connections in a row (no frame received) before giving up with `StreamBrokenError` (default 8). */
  readonly maxAttempts?: number | undefined;
}

/** How the client reaches the server. */
export interface ClientOptions {
  /** Sent as `Authorization: Bearer …` (and as `access_token` on WebSocket URLs, which cannot carry headers). */
  readonly token?: string | undefined;
  /** The `fetch` to use (default: the global one). */
  readonly fetch?: typeof fetch | undefined;
  /** The WebSocket constructor for `ws:` URLs (default: the global one; on Node < 22 pass `ws`'s). */
  readonly WebSocket?: WebSocketConstructor | undefined;
  readonly retry?: RetryOptions | undefined;
}

/** Options of {@link fromAgentEvents}. */
export interface AgentEventsOptions extends ClientOptions {
  /** Start after this seq (default 0: the run from its first event). */
  readonly after?: number | undefined;
}

/**
 * A WebSocket constructor: the browser's, Node 22's global, or the `ws` package's `WebSocket`. The client uses
 * `onmessage` (text frames), `onclose`, `onerror` and `close()` ({@link WebSocketLike}).
 */
export type WebSocketConstructor = new (url: string) => object;

/** @internal */
export interface WebSocketLike {
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  close(code?: number): void;
}

/**
 * One connection attempt: resolves when the stream ends without a terminal frame (`'ended'` when the server said the
 * run had ended before `after`: SSE 204, a WebSocket's normal close), rejects when it cannot go on.
 */
type Connect = (after: number, onFrame: (frame: WireFrame) => void, signal: AbortSignal) => Promise<void | 'ended'>;

/**
 * The events of one run, read from `url` — the run's events URL, `http(s)://…/runs/ID/events` (Server-Sent Events
 * over `fetch`) or `ws(s)://…/runs/ID/events` (WebSocket) — each with its `seq`. Cold: subscribing connects.
 *
 * - **Resumes.** When the connection breaks before the run's end, it reconnects (backoff with jitter, see
 *   {@link RetryOptions}) asking for what comes after the last seq it delivered: no event is lost or repeated.
 * - **Ends with the run.** Completes after the run's last event when the run completed (or at once when `after` is
 *   at or past the run's end: SSE 204, a WebSocket's normal close); errors with
 *   {@link RemoteRunError} when it failed on the server, {@link RunLostError} (a `RemoteRunError`, code `run_lost`)
 *   when the server restarted mid-run and the run will never finish (the run's stored messages on it; the thread is
 *   repaired and takes a new prompt), {@link AgentServerError} when the server refuses the stream
 *   (401 token, 404 unknown or expired run, 410 resume point no longer held), {@link StreamBrokenError} after
 *   `maxAttempts` failed connections in a row or on a frame it cannot read.
 * - **Watching only.** Unsubscribing closes the connection and nothing else: the run goes on (to cancel a run you
 *   started, unsubscribe from {@link startRun}'s Observable, or call `cancelRun`).
 *
 * @example
 * fromAgentEvents(`${base}/runs/${runId}/events`).pipe(assembleMessages()).subscribe(render);
 */
export function fromAgentEvents(url: string, options: AgentEventsOptions = {}): Observable<SequencedEvent> {
  const connect = /^wss?:/i.test(url) ? webSocketConnect(url, options) : sseConnect(url, options);
  const retry = options.retry ?? {};
  const initialDelay = retry.initialDelayMs ?? 250;
  const maxDelay = retry.maxDelayMs ?? 5000;
  const maxAttempts = retry.maxAttempts ?? 8;
  return new Observable<SequencedEvent>((subscriber) => {
    let last = options.after ?? 0;
    const decoder = new DeltaDecoder();
    let failures = 0;
    let done = false;
    let controller: AbortController | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onFrame = (frame: WireFrame) => {
      if (done || frame.seq <= last) return;
      last = frame.seq;
      failures = 0;
      if (frame.kind === 'event') {
        let event: SequencedEvent;
        try {
          event = decoder.decode(frame.event);
        } catch (error) {
          fail(new StreamBrokenError(`an unreadable frame from ${url}`, { cause: error }));
          return;
        }
        subscriber.next(event);
      } else {
        done = true;
        controller?.abort();
        if (frame.kind === 'end') subscriber.complete();
        else if (frame.kind === 'lost') subscriber.error(new RunLostError(frame.runId, frame.threadId, frame.messages));
        else subscriber.error(new RemoteRunError(frame.runId, frame.error));
      }
    };
    const attempt = () => {
      controller = new AbortController();
      const signal = controller.signal;
      connect(last, onFrame, signal).then(
        (result) => {
          if (result !== 'ended') retryLater(undefined, signal);
          else if (!done) {
            // Resumed at or past the run's end: nothing more will come.
            done = true;
            subscriber.complete();
          }
        },
        (error: unknown) => {
          if (error instanceof AgentServerError && !retryable(error.status)) fail(error);
          else if (error instanceof StreamBrokenError) fail(error);
          else retryLater(error, signal);
        },
      );
    };
    const fail = (error: unknown) => {
      if (done) return;
      done = true;
      subscriber.error(error);
    };
    const retryLater = (cause: unknown, signal: AbortSignal) => {
      if (done || signal.aborted) return;
      failures++;
      if (failures > maxAttempts) {
        fail(new StreamBrokenError(`the stream of ${url} broke ${failures} times in a row`, { cause }));
        return;
      }
      const delay = Math.min(maxDelay, initialDelay * 2 ** (failures - 1)) * (0.5 + Math.random() / 2);
      timer = setTimeout(attempt, failures === 1 ? 0 : delay);
    };
    attempt();
    return () => {
      done = true;
      clearTimeout(timer);
      controller?.abort();
    };
  });
}

function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

function sseConnect(url: string, options: ClientOptions): Connect {
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  return async (after, onFrame, signal) => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (after > 0) headers['last-event-id'] = String(after);
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    const response = await fetchImpl(url, { headers, signal });
    if (!response.ok) throw await serverError(response);
    if (response.status === 204) return 'ended';
    if (response.body === null) return;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SseParser();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        for (const record of parser.push(value)) {
          const frame = parseFrame(record.data);
          if (frame === undefined) throw new StreamBrokenError(`an unreadable frame from ${url}: ${record.data}`);
          onFrame(frame);
        }
      }
    } catch (error) {
      // An abort (ours) or a broken connection: the caller decides whether to go on.
      if (signal.aborted) return;
      throw error;
    } finally {
      void reader.cancel().catch(() => undefined);
    }
  };
}

function webSocketConnect(url: string, options: ClientOptions): Connect {
  return (after, onFrame, signal) =>
    new Promise<void | 'ended'>((resolve, reject) => {
      const Socket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
      if (Socket === undefined) {
        reject(new StreamBrokenError('no WebSocket implementation: pass options.WebSocket (e.g. the ws package)'));
        return;
      }
      const target = new URL(url);
      target.searchParams.set('after', String(after));
      if (options.token !== undefined) target.searchParams.set('access_token', options.token);
      const socket = new Socket(target.toString()) as WebSocketLike;
      const close = () => socket.close(1000);
      signal.addEventListener('abort', close, { once: true });
      let frames = 0;
      socket.onmessage = (message) => {
        frames++;
        const frame = typeof message.data === 'string' ? parseFrame(message.data) : undefined;
        if (frame === undefined) {
          socket.close(1003);
          reject(new StreamBrokenError(`an unreadable frame from ${url}`));
          return;
        }
        onFrame(frame);
      };
      socket.onerror = () => undefined;
      socket.onclose = (event) => {
        signal.removeEventListener('abort', close);
        // A normal close (1000) with no frame at all: the server had nothing after `after`, the run having ended
        // (it closes 1012 when it restarts mid-run). With frames, the terminal one decides, not the close.
        resolve(event.code === 1000 && frames === 0 ? 'ended' : undefined);
      };
    });
}

/** The server's refusal as an {@link AgentServerError} (its JSON `error` body when it has one). */
export async function serverError(response: Response): Promise<AgentServerError> {
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText}`;
  let body: { error?: { code?: unknown; message?: unknown; retryAfterMs?: unknown; limit?: unknown } } = {};
  try {
    body = (await response.json()) as typeof body;
    if (typeof body.error?.code === 'string') code = body.error.code;
    if (typeof body.error?.message === 'string') message = body.error.message;
  } catch {
    // Not JSON: keep the status line.
  }
  if (response.status === 429 && LIMIT_CODES.has(code)) {
    const header = Number(response.headers.get('retry-after') ?? Number.NaN);
    const fromBody = body.error?.retryAfterMs;
    const retryAfterMs =
      typeof fromBody === 'number' && fromBody >= 0 ? fromBody : Number.isFinite(header) ? header * 1000 : 1000;
    const limit = typeof body.error?.limit === 'string' ? body.error.limit : undefined;
    return new LimitExceededError(code as LimitErrorCode, message, retryAfterMs, limit);
  }
  return new AgentServerError(response.status, code, message);
}

const LIMIT_CODES: ReadonlySet<string> = new Set(['rate_limited', 'budget_exceeded', 'too_many_runs']);
