/**
 * `bearerToken`: the authenticator of shared secrets — a request presents a token, the token names its principal.
 * Compared in constant time, on Web Crypto only (edge runtimes run it). `authToken` is this with one token.
 * @module
 */
import { ANONYMOUS_PRINCIPAL, isPrincipal, type Principal } from '../types/principal.js';
import { ConfigurationError } from '../types/errors.js';
import type { Authenticator } from './access.js';

const encoder = new TextEncoder();

/**
 * An {@link Authenticator} of bearer tokens: the request presents `Authorization: Bearer <token>`, else the
 * `access_token` query parameter (for `EventSource` and browser WebSockets, which cannot set headers).
 *
 * - `bearerToken(token)`: one shared secret; whoever has it is the anonymous principal (one owner for everything:
 *   what `authToken` gives), or `principal` when given.
 * - `bearerToken({ [token]: principal })`: a token per principal (or per principal id, given as a string).
 *
 * Every token must be at least 16 characters (`ConfigurationError` otherwise). The presented token and every known one
 * are hashed (SHA-256) and all digests compared byte by byte without an early exit, so the time taken says nothing
 * about which token, or how much of one, matched.
 *
 * @example
 * createAgentServer({ agent, authenticate: bearerToken({ [aliceToken]: { id: 'alice' }, [bobToken]: 'bob' }) });
 */
export function bearerToken(
  tokens: string | Readonly<Record<string, Principal | string>>,
  principal: Principal = ANONYMOUS_PRINCIPAL,
): Authenticator {
  const entries: [string, Principal][] =
    typeof tokens === 'string'
      ? [[tokens, principal]]
      : typeof tokens === 'object' && tokens !== null
        ? Object.entries(tokens).map(([token, who]) => [token, typeof who === 'string' ? { id: who } : who])
        : [];
  if (entries.length === 0) throw new ConfigurationError('bearerToken: give a token, or a map of tokens to principals');
  for (const [token, who] of entries) {
    if (token.length < 16) throw new ConfigurationError('bearerToken: every token must be at least 16 characters');
    if (!isPrincipal(who)) throw new ConfigurationError('bearerToken: every principal needs a non-empty string `id`');
  }
  const known = Promise.all(entries.map(async ([token, who]) => ({ digest: await digest(token), principal: who })));
  return async (request) => {
    const presented = presentedToken(request);
    if (presented === null) return null;
    const [mine, all] = await Promise.all([digest(presented), known]);
    let found: Principal | null = null;
    for (const entry of all) {
      let difference = 0;
      for (let i = 0; i < mine.length; i++) difference |= mine[i]! ^ entry.digest[i]!;
      if (difference === 0) found = entry.principal;
    }
    return found;
  };
}

/** The token a request presents: `Authorization: Bearer <token>`, else `?access_token=`. @internal */
export function presentedToken(request: Request): string | null {
  const header = request.headers.get('authorization');
  if (header?.startsWith('Bearer ') === true) return header.slice(7);
  return new URL(request.url).searchParams.get('access_token');
}

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}
