/**
 * Who may do what on a server of `cubepi/server`: the `authenticate`, `authorize` and `onAccessDenied` options, the
 * default "owner only" rule, and the one decision every path (the Fetch handler, `toNodeListener`'s fan-out route,
 * `attachWebSocket`) runs. See `docs/security.md`.
 * @module
 */
import { ANONYMOUS_PRINCIPAL, isPrincipal, type Principal } from '../types/principal.js';
import { HttpError } from './http.js';

/**
 * Tells who sent a request: a {@link Principal}, or `null`/`undefined` for a caller it does not recognise (the
 * server answers 401 and runs nothing). It may throw or reject: that is a 401 too (the error is not sent). It sees
 * the request's method, URL and headers; its body is never read before it has decided (do not read it yourself).
 * Built in: `bearerToken`, `jwtAuthenticator`; any function works.
 */
export type Authenticator = (request: Request) => Principal | null | undefined | Promise<Principal | null | undefined>;

/**
 * What a principal asks to do, as `authorize` is told:
 * - `start_run` (`POST /threads/:id/runs`), `chat` (`POST /chat`), `ag_ui` (`POST /ag-ui`): run on a thread;
 * - `read_thread` (`GET /threads/:id`, `GET /chat/:id/stream`); `list_threads` (each thread `GET /threads` lists);
 * - `watch_run` (`GET /runs/:id/events`, over SSE or WebSocket, resumed with `Last-Event-ID`/`?after=` or not);
 * - `answer_approval` (`POST /threads/:id/approvals/:requestId`); `cancel_run` (`DELETE /runs/:id`);
 * - `fork_thread` (`POST /threads/:id/retry`, on the thread forked; the fork's run is then `start_run` on the fork);
 * - `delete_thread`: reserved for a route that deletes threads.
 */
export type AccessAction =
  | 'start_run'
  | 'read_thread'
  | 'list_threads'
  | 'watch_run'
  | 'answer_approval'
  | 'cancel_run'
  | 'fork_thread'
  | 'delete_thread'
  | 'chat'
  | 'ag_ui';

/**
 * What an action is on: a thread, or a run (which belongs to its thread's owner). `owner` is the `id` of the
 * principal that created the thread; `null` for a thread stored before threads had owners; `undefined` for a thread
 * that does not exist yet (a `start_run` creates it, owned by the caller).
 */
export type AccessResource =
  | { readonly type: 'thread'; readonly threadId: string; readonly owner: string | null | undefined }
  | {
      readonly type: 'run';
      readonly runId: string;
      readonly threadId: string | undefined;
      readonly owner: string | null | undefined;
    };

/**
 * Decides whether `principal` may do `action` on `resource`. The default is {@link ownerOnly}. A refusal is answered
 * exactly as a missing resource would be (404, same body), so ids cannot be probed; a throw or rejection is a refusal.
 * With an `authorize` of your own, `GET /threads` asks it about each thread of a page (the page may come back shorter
 * than `limit`: follow `nextCursor`).
 */
export type Authorize = (
  principal: Principal,
  action: AccessAction,
  resource: AccessResource,
) => boolean | Promise<boolean>;

/** One refused request, as `onAccessDenied` and the server's metrics see it. Never carries message content. */
export interface AccessDenied {
  /** The authenticated caller; `undefined` for a 401 (nobody was recognised). */
  readonly principal: Principal | undefined;
  /** What was asked; `undefined` for a 401 (refused before any route). */
  readonly action: AccessAction | undefined;
  /** What it was asked on; `undefined` for a 401. */
  readonly resource: AccessResource | undefined;
  /** The status answered: 401 unauthenticated, 404 forbidden (answered as missing), 429 over a limit. */
  readonly status: number;
}

/** Denials counted by a server: `server.metrics()`. */
export interface AccessMetrics {
  /** Requests refused with 401 (no principal). */
  readonly unauthenticated: number;
  /** Requests refused because `authorize` said no (answered 404, as a missing resource). */
  readonly forbidden: number;
  /** Requests refused over a limit of their principal (429; `limits`, docs/limits.md). */
  readonly limited: number;
}

/**
 * The default authorization: a principal may do anything to what it owns, and nothing else. A thread stored before
 * threads had owners (`owner: null`) belongs to the anonymous principal only (a server without `authenticate` or
 * `authToken` keeps seeing its threads after the upgrade; an authenticated server sees none of them until an
 * `authorize` of yours says otherwise). A thread that does not exist yet may be created (`start_run`, `chat`,
 * `ag_ui`) by anyone.
 */
export function ownerOnly(principal: Principal, action: AccessAction, resource: AccessResource): boolean {
  if (resource.owner === undefined) return action === 'start_run' || action === 'chat' || action === 'ag_ui';
  if (resource.owner === null) return principal.id === ANONYMOUS_PRINCIPAL.id;
  return resource.owner === principal.id;
}

/** The resolved access options of a server, and its denial counters. @internal */
export interface Access {
  /** The caller's principal; throws 401 `HttpError` (counted, reported) when there is none. */
  authenticate(request: Request): Promise<Principal>;
  /** Whether `principal` may; a refusal is counted and reported (as 404). Never throws. */
  allowed(principal: Principal, action: AccessAction, resource: AccessResource): Promise<boolean>;
  /** `authorize`'s verdict, neither counted nor reported (filtering a list is not a refusal). Never throws. */
  permits(principal: Principal, action: AccessAction, resource: AccessResource): Promise<boolean>;
  /** Counts and reports a refusal decided elsewhere (a limit's 429). Never throws. */
  deny(denied: AccessDenied): void;
  /** True when the default rule is in force (so a list can be filtered by owner in the store). */
  readonly ownerOnly: boolean;
  metrics(): AccessMetrics;
}

/** The access options of `ServingOptions`. @internal */
export interface AccessOptions {
  readonly authenticate?: Authenticator | undefined;
  readonly authorize?: Authorize | undefined;
  readonly onAccessDenied?: ((denied: AccessDenied) => void) | undefined;
}

/** The 401 every path answers when nobody is recognised. @internal */
export function unauthenticated(): HttpError {
  return new HttpError(401, 'unauthorized', 'valid credentials are required (Authorization: Bearer …)');
}

/**
 * The access decision of a server: `authenticate` (else `fallback`, the `authToken`'s, else everyone is the
 * anonymous principal), `authorize` (else {@link ownerOnly}), denials counted and given to `onAccessDenied` (whose
 * throw is ignored: auditing never changes an answer).
 * @internal
 */
export function createAccess(options: AccessOptions, fallback: Authenticator | undefined): Access {
  const authenticator = options.authenticate ?? fallback;
  const authorize = options.authorize ?? ownerOnly;
  const counts = { unauthenticated: 0, forbidden: 0, limited: 0 };
  const permits = async (principal: Principal, action: AccessAction, resource: AccessResource) => {
    try {
      return (await authorize(principal, action, resource)) === true;
    } catch {
      return false;
    }
  };
  const report = (denied: AccessDenied) => {
    if (denied.status === 401) counts.unauthenticated++;
    else if (denied.status === 404) counts.forbidden++;
    else if (denied.status === 429) counts.limited++;
    try {
      options.onAccessDenied?.(denied);
    } catch {
      // An audit hook that throws must not turn a 404 into a 500 (nor leak that the resource exists).
    }
  };
  return {
    ownerOnly: options.authorize === undefined,
    async authenticate(request) {
      if (authenticator === undefined) return ANONYMOUS_PRINCIPAL;
      let principal: unknown;
      try {
        principal = await authenticator(request);
      } catch {
        principal = null;
      }
      if (isPrincipal(principal)) return principal;
      report({ principal: undefined, action: undefined, resource: undefined, status: 401 });
      throw unauthenticated();
    },
    permits,
    async allowed(principal, action, resource) {
      const verdict = await permits(principal, action, resource);
      if (!verdict) report({ principal, action, resource, status: 404 });
      return verdict;
    },
    deny: report,
    metrics: () => ({ ...counts }),
  };
}
