/**
 * The HTTP surface shared by every server of `cubepi/server` (`createAgentServer`, `createQueueServer`): the options
 * about serving (token, CORS, body limit, base path, heartbeat), the route table of docs/ui.md ("The wire
 * protocol"), and the checks every route makes. A server supplies the handlers; this file decides which one runs.
 * @module
 */
import { threadIdProblem } from '../checkpoint/check-arguments.js';
import { ConfigurationError } from '../types/errors.js';
import type { Principal } from '../types/principal.js';
import { createAccess, type Access, type AccessMetrics, type AccessOptions } from './access.js';
import { bearerToken } from './auth.js';
import { sseChunk, type RunStreamReader } from './frame-pump.js';
import { DEFAULT_SERVER_MAX_FILE_BYTES } from './file-input.js';
import { errorResponse, HEARTBEAT, HttpError, SSE_HEADERS } from './http.js';
import { checkHost, checkJsonType, checkOrigin, hostPolicy, type HostPolicy } from './request-guards.js';

/** How a server is served over HTTP: the options `createAgentServer` and `createQueueServer` share. */
export interface ServingOptions extends AccessOptions {
  /**
   * Who sent each request (`bearerToken`, `jwtAuthenticator`, or any function): a request it gives no principal is
   * answered 401 on every route, WebSocket upgrades included, and nothing runs. Without it (and without `authToken`)
   * every caller is the anonymous principal, owner of everything: bind the server to loopback. See docs/security.md.
   */
  readonly authenticate?: AccessOptions['authenticate'];
  /**
   * Whether a principal may do an action on a thread or run (default `ownerOnly`: its own threads and their runs). A
   * refusal is answered as a missing resource (404, same body).
   */
  readonly authorize?: AccessOptions['authorize'];
  /** Told of every refused request (401, 404-as-forbidden) with principal, action and resource, never content. */
  readonly onAccessDenied?: AccessOptions['onAccessDenied'];
  /**
   * A secret every request must present, as `Authorization: Bearer <token>` or the `access_token` query parameter
   * (for `EventSource` and browser WebSockets, which cannot set headers). Compared in constant time. Sugar for
   * `authenticate: bearerToken(authToken)`: everyone with the token is one principal (the anonymous one). Not with
   * `authenticate`.
   */
  readonly authToken?: string | undefined;
  /** The largest request body accepted, in bytes (default 1 MiB); larger ones get 413 and nothing runs. */
  readonly maxBodyBytes?: number | undefined;
  /**
   * The largest file a client may send in a user message, in decoded bytes (default 10 MiB): a file over it is
   * refused with 413 `file_too_large` naming the part, and nothing runs. A file travels base64 in the JSON body, so
   * `maxBodyBytes` must leave room for it (about 4/3 of its size). See docs/files-surfaces.md.
   */
  readonly maxFileBytes?: number | undefined;
  /**
   * Cross-origin access for these origins (exact match, e.g. `https://app.example.com`); none by default. Other
   * origins cannot start, answer or cancel anything, nor open a WebSocket (403), CORS or not.
   */
  readonly cors?: { readonly origins: readonly string[] } | undefined;
  /**
   * The `Host` names served (without port; `["*"]` for any). By default a server without `authToken` or `authenticate` answers only
   * loopback names (`localhost`, `127.0.0.1`, `[::1]`), so a page on a DNS name rebound to 127.0.0.1 reads nothing
   * (403); with credentials required, any host. Set it when a token-less server is reached by another name (a proxy, a container).
   */
  readonly allowedHosts?: readonly string[] | undefined;
  /** A path prefix the routes live under, e.g. `/api/agent` (default: none). */
  readonly basePath?: string | undefined;
  /** A comment line sent on an idle SSE stream this often, so proxies keep it open (default 15,000 ms). */
  readonly heartbeatMs?: number | undefined;
}

/** @internal */
export interface ServerSettings {
  /** Who may do what: the one decision of every path (Fetch, the Node adapters). */
  readonly access: Access;
  readonly basePath: string;
  readonly heartbeatMs: number;
  readonly maxBodyBytes: number;
  /** The largest file a client may send, in decoded bytes. */
  readonly maxFileBytes: number;
  /** The `Host` names answered (`allowedHosts`, resolved). */
  readonly hosts: HostPolicy;
}

/**
 * What the Node adapters (`toNodeListener`, `attachWebSocket`) serve: a server of `cubepi/server`, whichever runs
 * its agents (`createAgentServer` in this process, `createQueueServer` on a run queue).
 */
export interface HttpAgentServer {
  /** Handles one request: the routes in docs/ui.md ("The wire protocol"). Never rejects: failures are responses. */
  fetch(request: Request): Promise<Response>;
  /** Ends every stream the server is sending (and, in process, stops every live run). */
  close(): void;
  /** Denials so far: requests refused unauthenticated (401) and forbidden (404). */
  metrics(): AccessMetrics;
  /** @internal Resolved options, for the Node adapters. */
  readonly settings: ServerSettings;
  /**
   * @internal The run stream of `GET /runs/:id/events` (the Node adapters serve it without Fetch objects): a reader
   * of the frames after `lastEventId`, for `principal` (authenticated by `settings.access`). Throws (or rejects with)
   * an `HttpError`: 404 unknown run (or one `principal` may not watch), 400 bad position, 410 resume point gone.
   * `threadHint` (the `thread` query parameter) is where a run lost with a previous process is looked for.
   */
  readonly openRunStream: (
    runId: string,
    lastEventId: string | null,
    principal: Principal,
    threadHint?: string | null,
  ) => RunStreamReader | Promise<RunStreamReader>;
  /** @internal The CORS headers for a request from `origin`, when it is allowed. */
  readonly corsFor: (origin: string | null) => Record<string, string> | undefined;
}

/** The handlers of the routes, one per route (a server without a route answers it with its own error). @internal */
export interface RouteHandlers {
  /** `POST /threads/:id/runs` */
  startRun(principal: Principal, request: Request, threadId: string): Promise<Response>;
  /** `POST /threads/:id/retry`: fork the thread before a message and run from there (the studio's retry / edit). */
  retryFrom(principal: Principal, request: Request, threadId: string): Promise<Response>;
  /** `POST /threads/:id/approvals/:requestId` */
  answerApproval(principal: Principal, request: Request, threadId: string, requestId: string): Promise<Response>;
  /** `GET /threads/:id` */
  getThread(principal: Principal, threadId: string): Promise<Response>;
  /** `GET /threads` */
  listThreads(principal: Principal, url: URL): Promise<Response>;
  /** `DELETE /runs/:id` */
  cancelRun(principal: Principal, runId: string): Response | Promise<Response>;
  /** `GET /runs/:id/events` */
  streamRun(principal: Principal, request: Request, url: URL, runId: string): Response | Promise<Response>;
  /** `POST /chat` (the AI SDK's chat protocol) */
  chat(principal: Principal, request: Request): Promise<Response>;
  /** `GET /chat/:id/stream` */
  resumeChat(principal: Principal, threadId: string): Response | Promise<Response>;
  /** `POST /ag-ui` */
  agUi(principal: Principal, request: Request): Promise<Response>;
}

/**
 * The options a server shares, checked (`ConfigurationError` naming `owner`, e.g. `createAgentServer`) and resolved.
 * @internal
 */
export function resolveServing(owner: string, options: ServingOptions): ServerSettings {
  positiveOption(owner, 'maxBodyBytes', options.maxBodyBytes, 1);
  positiveOption(owner, 'maxFileBytes', options.maxFileBytes, 1);
  positiveOption(owner, 'heartbeatMs', options.heartbeatMs, 1);
  if (options.authToken !== undefined && (typeof options.authToken !== 'string' || options.authToken.length < 16)) {
    throw new ConfigurationError(`${owner}: \`authToken\` must be a string of at least 16 characters`);
  }
  for (const name of ['authenticate', 'authorize', 'onAccessDenied'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') {
      throw new ConfigurationError(`${owner}: \`${name}\` must be a function`);
    }
  }
  if (options.authToken !== undefined && options.authenticate !== undefined) {
    throw new ConfigurationError(`${owner}: give \`authenticate\` or \`authToken\`, not both`);
  }
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  if (basePath !== '' && !basePath.startsWith('/')) {
    throw new ConfigurationError(`${owner}: \`basePath\` must start with "/"`);
  }
  return {
    access: createAccess(options, options.authToken === undefined ? undefined : bearerToken(options.authToken)),
    basePath,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    maxBodyBytes: options.maxBodyBytes ?? 1_048_576,
    maxFileBytes: options.maxFileBytes ?? DEFAULT_SERVER_MAX_FILE_BYTES,
    hosts: hostPolicy(
      owner,
      options.allowedHosts,
      options.authToken !== undefined || options.authenticate !== undefined,
    ),
  };
}

/** Throws `ConfigurationError` unless `value` is absent or a finite number `>= min`. @internal */
export function positiveOption(owner: string, name: string, value: number | undefined, min: number): void {
  if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value >= min)) {
    throw new ConfigurationError(`${owner}: \`${name}\` must be a number >= ${min}, got ${String(value)}`);
  }
}

/** The CORS headers of a request from `origin`, when `origins` allows it. @internal */
export function corsPolicy(options: ServingOptions): (origin: string | null) => Record<string, string> | undefined {
  const origins = new Set(options.cors?.origins ?? []);
  return (origin) => (origin !== null && origins.has(origin) ? corsHeaders(origin) : undefined);
}

/** The Fetch handlers `createFetchHandler` made: the Node adapters' fast paths apply only to these. */
const ownHandlers = new WeakSet<object>();

/**
 * True when `fetch` is a server's own handler, not one an application wrapped around it (to deny callers, log, …):
 * then the Node adapters may serve `GET /runs/:id/events` without it, since they make the same access decision.
 * @internal
 */
export function isOwnFetch(fetch: unknown): boolean {
  return typeof fetch === 'function' && ownHandlers.has(fetch);
}

/**
 * The Fetch handler of a server: the base path, CORS (preflight included), the caller's principal (401 without one),
 * then the route table; any
 * failure becomes its error response (`errorResponse`). @internal
 */
export function createFetchHandler(
  settings: ServerSettings,
  corsFor: (origin: string | null) => Record<string, string> | undefined,
  handlers: RouteHandlers,
): (request: Request) => Promise<Response> {
  async function route(principal: Principal, request: Request, url: URL): Promise<Response> {
    const path = url.pathname.slice(settings.basePath.length);
    const parts = path.split('/').filter((part) => part !== '');
    const segments = parts.map(decodeSegment);
    const method = request.method;
    if (segments[0] === 'chat') {
      if (segments.length === 1 && method === 'POST') return handlers.chat(principal, request);
      if (segments.length === 3 && segments[2] === 'stream' && method === 'GET') {
        return handlers.resumeChat(principal, checkThread(segments[1]));
      }
    } else if (segments[0] === 'ag-ui' && segments.length === 1 && method === 'POST') {
      return handlers.agUi(principal, request);
    } else if (segments[0] === 'threads') {
      if (segments.length === 1 && method === 'GET') return handlers.listThreads(principal, url);
      const threadId = segments.length === 1 ? '' : checkThread(segments[1]);
      if (segments.length === 2 && method === 'GET') return handlers.getThread(principal, threadId);
      if (segments.length === 3 && segments[2] === 'runs' && method === 'POST') {
        return handlers.startRun(principal, request, threadId);
      }
      if (segments.length === 3 && segments[2] === 'retry' && method === 'POST') {
        return handlers.retryFrom(principal, request, threadId);
      }
      if (segments.length === 4 && segments[2] === 'approvals' && method === 'POST') {
        return handlers.answerApproval(principal, request, threadId, segments[3]!);
      }
    } else if (segments[0] === 'runs' && segments.length >= 2) {
      const runId = segments[1]!;
      if (segments.length === 3 && segments[2] === 'events' && method === 'GET') {
        return handlers.streamRun(principal, request, url, runId);
      }
      if (segments.length === 2 && method === 'DELETE') return handlers.cancelRun(principal, runId);
    }
    const allow = allowedMethods(segments);
    if (allow !== undefined) {
      throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${path}: use ${allow}`, { allow });
    }
    throw new HttpError(404, 'not_found', `no route ${method} ${path}`);
  }

  const handler = async (request: Request): Promise<Response> => {
    const cors = corsFor(request.headers.get('origin'));
    let response: Response;
    try {
      const url = new URL(request.url);
      if (!url.pathname.startsWith(settings.basePath)) throw new HttpError(404, 'not_found', 'not found');
      const host = request.headers.get('host') ?? url.host;
      checkHost(host, settings.hosts);
      if (request.method === 'OPTIONS' && cors !== undefined) response = new Response(null, { status: 204 });
      else {
        // Who asks first (401 on every route), then the browser checks (403 from another origin, 415 unless JSON).
        const principal = await settings.access.authenticate(request);
        checkBrowserRequest(request, host, cors !== undefined);
        response = await route(principal, request, url);
      }
    } catch (error) {
      response = errorResponse(error);
    }
    if (cors !== undefined) for (const [name, value] of Object.entries(cors)) response.headers.set(name, value);
    return response;
  };
  ownHandlers.add(handler);
  return handler;
}

/** The methods a route path answers (its `Allow` header), or `undefined` for a path that is no route. */
function allowedMethods(segments: readonly string[]): string | undefined {
  const [head, second, third] = segments;
  switch (`${head ?? ''}/${segments.length}`) {
    case 'chat/1':
    case 'ag-ui/1':
      return 'POST';
    case 'chat/3':
      return third === 'stream' ? 'GET' : undefined;
    case 'threads/1':
    case 'threads/2':
      return 'GET';
    case 'threads/3':
      return third === 'runs' || third === 'retry' ? 'POST' : undefined;
    case 'threads/4':
      return third === 'approvals' ? 'POST' : undefined;
    case 'runs/2':
      return 'DELETE';
    case 'runs/3':
      return third === 'events' && second !== undefined ? 'GET' : undefined;
    default:
      return undefined;
  }
}

/** The browser checks of a state-changing request: 403 from another origin, 415 unless JSON. */
function checkBrowserRequest(request: Request, host: string, corsAllowed: boolean): void {
  const method = request.method;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return;
  checkOrigin(request.headers.get('origin'), host, corsAllowed);
  checkJsonType(method, request.headers.get('content-type'));
}

function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
    'access-control-allow-headers': 'authorization, content-type, last-event-id',
    vary: 'origin',
  };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'invalid_input', `malformed path segment: ${segment}`);
  }
}

/** The thread id of a route, checked like the checkpointers check it (400 `invalid_thread_id`). @internal */
export function checkThread(threadId: unknown): string {
  const problem = threadIdProblem(threadId);
  if (problem !== undefined) throw new HttpError(400, 'invalid_thread_id', problem);
  return threadId as string;
}

/** The seq a resume starts after: `Last-Event-ID` or `?after=`, a non-negative integer (0 when absent). @internal */
export function resumePosition(value: string | null): number {
  if (value === null || value === '') return 0;
  // Digits only, no sign, no leading zero: `Number()` alone takes `0x2`, ` 2 `, `-0` and `1e1`.
  const seq = /^(?:0|[1-9][0-9]*)$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(seq)) {
    throw new HttpError(400, 'invalid_input', `Last-Event-ID must be a seq (a non-negative integer), got ${value}`);
  }
  return seq;
}

/** `GET /runs/:id/events` over Fetch: the reader's frames as SSE, heartbeats when idle; cancelling stops it. @internal */
export function sseStreamResponse(reader: RunStreamReader): Response {
  if (reader.atEnd === true) return new Response(null, { status: 204 });
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const item = await reader.next();
      if (item === null) controller.close();
      else controller.enqueue(item === 'heartbeat' ? HEARTBEAT : sseChunk(item));
    },
    cancel() {
      reader.stop();
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}
