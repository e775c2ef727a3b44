/**
 * The checks that keep a browser from being used against the server (docs/security.md, "Browsers and CSRF"): a page
 * on another origin must not start, answer or cancel anything (a `text/plain` or form POST needs no preflight, and a
 * WebSocket is not subject to CORS), and a page on a rebound DNS name must not read a token-less loopback server.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import { HttpError } from './http.js';

/** Host names a token-less server answers without `allowedHosts`: the loopback ones. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * The `Host` names a server answers (resolved from `allowedHosts`): `'any'`, or a set of lower-case host names
 * without port. @internal
 */
export type HostPolicy = 'any' | ReadonlySet<string>;

/**
 * The host policy of a server: `allowedHosts` when given (the loopback names always included; `'*'` allows any);
 * otherwise any host when a token is required (a rebound name does not carry the token), else loopback names only.
 * Throws `ConfigurationError` naming `owner` for a list that is not host names.
 * @internal
 */
export function hostPolicy(
  owner: string,
  allowedHosts: readonly string[] | undefined,
  tokenRequired: boolean,
): HostPolicy {
  if (allowedHosts === undefined) return tokenRequired ? 'any' : LOOPBACK;
  const given: unknown = allowedHosts;
  if (!Array.isArray(given) || given.some((host: unknown) => typeof host !== 'string' || host === '')) {
    throw new ConfigurationError(`${owner}: \`allowedHosts\` must be a list of host names (or ["*"])`);
  }
  const names = given as readonly string[];
  if (names.includes('*')) return 'any';
  return new Set([...LOOPBACK, ...names.map((host) => host.toLowerCase())]);
}

/**
 * Throws 403 `host_not_allowed` when `host` (a `Host` header, with or without port) is not one the policy answers: a
 * page whose DNS name was rebound to 127.0.0.1 sends its own name, and must read nothing.
 * @internal
 */
export function checkHost(host: string | null | undefined, policy: HostPolicy): void {
  if (policy === 'any') return;
  const name = hostName(host ?? '');
  if (name === undefined || !(policy.has(name) || (policy.has('127.0.0.1') && /^127\.\d+\.\d+\.\d+$/.test(name)))) {
    throw new HttpError(
      403,
      'host_not_allowed',
      `the Host ${JSON.stringify(host ?? '')} is not served: this server answers ${[...policy].join(', ')} (allowedHosts)`,
    );
  }
}

/**
 * Throws 403 `origin_not_allowed` when a browser request comes from another origin than the server's own (`host`)
 * and that origin is not in the CORS list. A request without `Origin` (curl, a server) passes: only browsers send it,
 * and they always do on POST, DELETE and WebSocket. `Origin: null` (a sandboxed frame, a `file:` page) never passes.
 * @internal
 */
export function checkOrigin(
  origin: string | null | undefined,
  host: string | null | undefined,
  corsAllowed: boolean,
): void {
  if (origin === null || origin === undefined || corsAllowed) return;
  let originHost: string | undefined;
  try {
    originHost = origin === 'null' ? undefined : new URL(origin).host;
  } catch {
    originHost = undefined;
  }
  if (originHost === undefined || host === null || host === undefined || originHost !== host.toLowerCase()) {
    throw new HttpError(
      403,
      'origin_not_allowed',
      `requests from ${origin} are not allowed: only the server's own origin and the CORS origins are`,
    );
  }
}

/**
 * Throws 415 `unsupported_media_type` unless a request with a body declares `application/json`: an HTML form or a
 * `text/plain` fetch is a "simple" cross-origin request a browser sends without asking, a JSON one it preflights.
 * A `DELETE` may have no body (and then no type).
 * @internal
 */
export function checkJsonType(method: string, contentType: string | null): void {
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return;
  if (method === 'DELETE' && contentType === null) return;
  const type = contentType?.split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `${method} needs content-type: application/json, got ${contentType === null ? 'none' : JSON.stringify(contentType)}`,
    );
  }
}

/** The host name of a `Host` header, lower case, without port; `undefined` when it is not one. */
function hostName(host: string): string | undefined {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}
