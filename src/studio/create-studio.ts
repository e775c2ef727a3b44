/**
 * `createStudio`: the studio's page and its JSON API (src/studio/api.ts) over a thread store, a trace file and an
 * agent server, as one Fetch handler.
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { createAccess, type Access, type Authenticator } from '../server/access.js';
import { bearerToken } from '../server/auth.js';
import { errorResponse, HttpError } from '../server/http.js';
import { createOwnership } from '../server/ownership.js';
import { checkHost, hostPolicy, type HostPolicy } from '../server/request-guards.js';
import type { HttpAgentServer } from '../server/routes.js';
import { threadOwners } from '../server/thread-owners.js';
import { ConfigurationError } from '../types/errors.js';
import { pageFile, studioPageDir } from './page-files.js';
import { studioApi } from './studio-api.js';
import { createTraceReader } from './traces.js';

/** Options of {@link createStudio}. */
export interface StudioOptions {
  /** The thread store the studio reads (the agent server's checkpointer, when there is one). */
  readonly checkpointer: Checkpointer;
  /**
   * The agent server whose runs the studio streams, stops, answers and retries: its routes (requests under its
   * `basePath`, which must then be set) are handed to its `fetch`, and the studio authenticates and authorizes every
   * request exactly as it does (its `authenticate`/`authToken`, `authorize`, `allowedHosts`).
   */
  readonly server?: HttpAgentServer | undefined;
  /** A JSONL trace file written by `JsonlSpanExporter` (cubepi/tracing/jsonl): the runs' timelines. */
  readonly traceFile?: string | undefined;
  /** The path prefix of the studio's page and `studio-api/` routes (default: none), e.g. `/studio`. */
  readonly basePath?: string | undefined;
  /**
   * Without a `server`: a secret every `studio-api/` request must present (`Authorization: Bearer`, or
   * `?access_token=`), at least 16 characters. Not with `authenticate`. Ignored with a `server` (its own is used).
   */
  readonly authToken?: string | undefined;
  /** Without a `server`: who sent each request (`bearerToken`, `jwtAuthenticator`, …), as `ServingOptions` says. */
  readonly authenticate?: Authenticator | undefined;
  /**
   * Without a `server`: the `Host` names answered (default: loopback only without credentials, any with them), as
   * `ServingOptions.allowedHosts`.
   */
  readonly allowedHosts?: readonly string[] | undefined;
}

/** A studio: mount {@link Studio.fetch} in a server (on Node, `toNodeListener({ fetch })`-style or by hand). */
export interface Studio {
  /** Handles one request: the page, `studio-api/…`, and (with a `server`) the agent server's routes. Never rejects. */
  fetch(request: Request): Promise<Response>;
  /** Releases what the studio holds (its caches); the server and the checkpointer stay open (they are yours). */
  close(): void;
  /** @internal The agent server mounted, for `studioNodeListener` (its streams served on the socket). */
  readonly server: HttpAgentServer | undefined;
}

/**
 * The studio over `options.checkpointer`: its page at `<basePath>/`, its JSON API at `<basePath>/studio-api/` (the
 * routes of `cubepi/studio`'s `StudioConfig`, `StudioThreadPage`, … types), and the agent server's routes at the
 * server's `basePath`. Every API request is authenticated (401 `unauthorized` without credentials) and each thread
 * and run checked for `read_thread` (another principal's answers 404, as a missing one); a `Host` not served is 403.
 * The page itself carries no data and is served to anyone who reaches it; it reads the token from `#token=`.
 * Failures are JSON `{ "error": { "code", "message" } }`.
 *
 * Throws `ConfigurationError` for invalid options (a server without a `basePath`, a short `authToken`, both
 * `authToken` and `authenticate`).
 *
 * @example
 * const server = createAgentServer({ agent, checkpointer, authToken, basePath: '/api' });
 * const studio = createStudio({ checkpointer, server, traceFile: 'traces.jsonl' });
 * http.createServer(studioNodeListener(studio)).listen(8790, '127.0.0.1'); // the studio at /, the agent at /api
 */
export function createStudio(options: StudioOptions): Studio {
  if (typeof options !== 'object' || options === null || typeof options.checkpointer?.load !== 'function') {
    throw new ConfigurationError('createStudio: `checkpointer` must be a Checkpointer');
  }
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  if (basePath !== '' && !basePath.startsWith('/')) {
    throw new ConfigurationError('createStudio: `basePath` must start with "/"');
  }
  const server = options.server;
  if (server !== undefined && server.settings.basePath === '') {
    throw new ConfigurationError(
      'createStudio: the agent server needs a `basePath` (e.g. "/api") so its routes and the studio\'s do not collide',
    );
  }
  const { access, hosts } = server === undefined ? ownAccess(options) : serverAccess(server);
  const ownership = createOwnership(access, threadOwners(options.checkpointer), options.checkpointer);
  const traces = options.traceFile === undefined ? undefined : createTraceReader(options.traceFile);
  const api = studioApi({ checkpointer: options.checkpointer, server, traces, access, ownership });
  const pageDir = studioPageDir();

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname;
    if (
      server !== undefined &&
      (path === server.settings.basePath || path.startsWith(`${server.settings.basePath}/`))
    ) {
      return server.fetch(request);
    }
    checkHost(request.headers.get('host') ?? url.host, hosts);
    if (path === basePath && basePath !== '') {
      return new Response(null, { status: 308, headers: { location: `${basePath}/${url.search}` } });
    }
    if (!path.startsWith(`${basePath}/`)) throw new HttpError(404, 'not_found', `no route ${path}`);
    const rest = path.slice(basePath.length + 1);
    if (rest === 'studio-api' || rest.startsWith('studio-api/')) {
      const principal = await access.authenticate(request);
      const segments = rest
        .split('/')
        .slice(1)
        .filter((part) => part !== '')
        .map(decodeSegment);
      return api(principal, request, url, segments);
    }
    const file = pageFile(pageDir, rest, request.method);
    if (file === undefined) throw new HttpError(404, 'not_found', `no route ${request.method} ${path}`);
    return file;
  }

  return {
    fetch: async (request) => {
      try {
        return await handle(request);
      } catch (error) {
        return errorResponse(error);
      }
    },
    close: () => undefined,
    server,
  };
}

function serverAccess(server: HttpAgentServer): { access: Access; hosts: HostPolicy } {
  return { access: server.settings.access, hosts: server.settings.hosts };
}

function ownAccess(options: StudioOptions): { access: Access; hosts: HostPolicy } {
  const { authToken, authenticate } = options;
  if (authToken !== undefined && (typeof authToken !== 'string' || authToken.length < 16)) {
    throw new ConfigurationError('createStudio: `authToken` must be a string of at least 16 characters');
  }
  if (authToken !== undefined && authenticate !== undefined) {
    throw new ConfigurationError('createStudio: give `authenticate` or `authToken`, not both');
  }
  if (authenticate !== undefined && typeof authenticate !== 'function') {
    throw new ConfigurationError('createStudio: `authenticate` must be a function');
  }
  const credentials = authToken !== undefined || authenticate !== undefined;
  return {
    access: createAccess({ authenticate }, authToken === undefined ? undefined : bearerToken(authToken)),
    hosts: hostPolicy('createStudio', options.allowedHosts, credentials),
  };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'invalid_input', `malformed path segment: ${segment}`);
  }
}
