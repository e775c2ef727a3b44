/**
 * `jwtAuthenticator`: an authenticator of JSON Web Tokens (HS256 with a shared secret, RS256 and ES256 with a JSON
 * Web Key Set given or fetched), on Web Crypto only — no `node:` import, so it runs on edge runtimes too.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import { isPrincipal, type Principal } from '../types/principal.js';
import type { Authenticator } from './access.js';
import { presentedToken } from './auth.js';

/** A JSON Web Key Set: `{ keys: [...] }` (what an identity provider serves at its `jwks_uri`). */
export interface JsonWebKeySet {
  readonly keys: readonly Jwk[];
}

/** One JSON Web Key (RFC 7517): `kty`, `kid`, `alg` and the key's own members (`n`/`e`, `crv`/`x`/`y`). */
export interface Jwk {
  readonly kty?: string | undefined;
  readonly kid?: string | undefined;
  readonly alg?: string | undefined;
  readonly [member: string]: unknown;
}

/** A key Web Crypto imported (the global `VerifyKey`, named without the DOM library). */
type VerifyKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** Where the verification keys come from: one of `secret`, `jwks`, `jwksUrl`. */
export type JwtKeys =
  | { readonly secret: string | Uint8Array; readonly jwks?: undefined; readonly jwksUrl?: undefined }
  | { readonly jwks: JsonWebKeySet; readonly secret?: undefined; readonly jwksUrl?: undefined }
  | { readonly jwksUrl: string | URL; readonly secret?: undefined; readonly jwks?: undefined };

/** Options of {@link jwtAuthenticator}. */
export type JwtAuthenticatorOptions = JwtKeys & {
  /** The `iss` a token must carry, when given. */
  readonly issuer?: string | undefined;
  /** An `aud` a token must carry (one of these, when several), when given. */
  readonly audience?: string | readonly string[] | undefined;
  /** Seconds of clock skew allowed on `exp` and `nbf` (default 30). */
  readonly clockToleranceSec?: number | undefined;
  /** How long a fetched key set is used before it is fetched again (default 600,000 ms; `jwksUrl` only). */
  readonly jwksCacheMs?: number | undefined;
  /**
   * The principal of a verified token's claims (default: `{ id: sub, roles, claims }`, with `roles` from a string
   * array claim `roles`; no principal for a token without `sub`). Return `null` to refuse the token.
   */
  readonly principal?: ((claims: Readonly<Record<string, unknown>>) => Principal | null | undefined) | undefined;
  /** The `fetch` the key set is fetched with (default: the global one). */
  readonly fetch?: typeof fetch | undefined;
};

type Algorithm = 'HS256' | 'RS256' | 'ES256';

const IMPORT = {
  HS256: { name: 'HMAC', hash: 'SHA-256' },
  RS256: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
  ES256: { name: 'ECDSA', namedCurve: 'P-256' },
} as const;
const VERIFY = {
  HS256: 'HMAC',
  RS256: 'RSASSA-PKCS1-v1_5',
  ES256: { name: 'ECDSA', hash: 'SHA-256' },
} as const;
const KEY_TYPE: Record<Algorithm, string> = { HS256: 'oct', RS256: 'RSA', ES256: 'EC' };
/** Fetch an unknown `kid` again at most this often (a rotated key shows up; a flood of bad kids does not DoS the IdP). */
const REFETCH_MS = 30_000;
/**
 * Tokens whose signature verified are remembered this long (at most `VERIFIED_MAX`, the oldest forgotten first), so a
 * client's many requests with one token — the 100 watchers of a fan-out, an `EventSource`'s reconnects — cost one
 * signature check, not one each. The claims (`exp`, `nbf`, `iss`, `aud`) are still checked at every request.
 */
const VERIFIED_MS = 60_000;
const VERIFIED_MAX = 1024;

/**
 * An {@link Authenticator} of JSON Web Tokens, presented as `Authorization: Bearer <jwt>` (or `?access_token=`). A
 * token is accepted when its signature verifies (HS256 against `secret`; RS256 or ES256 against the key of the set
 * whose `kid` it names, or any key of the right type when it names none), its `exp` has not passed and its `nbf` has
 * (with `clockToleranceSec`), and its `iss` and `aud` match the options that name them. Anything else (`alg: none`,
 * an algorithm the keys are not for, a malformed token, a key set that cannot be fetched) gives no principal: 401.
 * A token whose signature verified is remembered for a minute (1,024 tokens at most), so its next requests skip the
 * signature check; its claims are checked again at every request, so it expires on time.
 *
 * Throws {@link ConfigurationError} for options without exactly one key source.
 *
 * @example
 * createAgentServer({
 *   agent,
 *   authenticate: jwtAuthenticator({ jwksUrl: 'https://issuer.example/.well-known/jwks.json', audience: 'chat' }),
 * });
 */
export function jwtAuthenticator(options: JwtAuthenticatorOptions): Authenticator {
  const sources = [options?.secret, options?.jwks, options?.jwksUrl].filter((source) => source !== undefined);
  if (typeof options !== 'object' || options === null || sources.length !== 1) {
    throw new ConfigurationError('jwtAuthenticator: give exactly one of `secret`, `jwks` and `jwksUrl`');
  }
  if (options.secret !== undefined && options.secret.length < 16) {
    throw new ConfigurationError('jwtAuthenticator: `secret` must be at least 16 bytes');
  }
  if (options.principal !== undefined && typeof options.principal !== 'function') {
    throw new ConfigurationError('jwtAuthenticator: `principal` must be a function of the claims');
  }
  const tolerance = (options.clockToleranceSec ?? 30) * 1000;
  const audiences = options.audience === undefined ? undefined : [options.audience].flat();
  const toPrincipal = options.principal ?? defaultPrincipal;
  const keys = keySource(options);
  const verified = new Map<string, { readonly at: number; readonly holds: Promise<boolean> }>();
  /** Whether the token's signature verifies against the keys: checked once per token, then remembered. */
  const signatureHolds = (
    token: string,
    alg: Algorithm,
    kid: string | undefined,
    signed: string,
    signature: Uint8Array<ArrayBuffer>,
  ): Promise<boolean> => {
    const now = Date.now();
    const hit = verified.get(token);
    if (hit !== undefined && now - hit.at < VERIFIED_MS) return hit.holds;
    const data = new TextEncoder().encode(signed);
    const holds = (async () => {
      for (const key of await keys(alg, kid)) {
        if (await crypto.subtle.verify(VERIFY[alg], key, signature, data).catch(() => false)) {
          return true;
        }
      }
      return false;
    })();
    const entry = { at: now, holds };
    verified.delete(token);
    verified.set(token, entry);
    if (verified.size > VERIFIED_MAX) verified.delete(verified.keys().next().value!);
    // Only good signatures are remembered (a key set that could not be fetched is asked again next time).
    void holds.then((ok) => {
      if (!ok && verified.get(token) === entry) verified.delete(token);
    });
    return holds;
  };

  return async (request) => {
    const token = presentedToken(request);
    if (token === null) return null;
    const parts = token.split('.');
    if (parts.length !== 3) return null;
    const header = decodeJson(parts[0]!);
    const claims = decodeJson(parts[1]!);
    const signature = decodeBase64Url(parts[2]!);
    if (header === undefined || claims === undefined || signature === undefined) return null;
    const alg = header.alg;
    if (alg !== 'HS256' && alg !== 'RS256' && alg !== 'ES256') return null;
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    if (!(await signatureHolds(token, alg, kid, `${parts[0]}.${parts[1]}`, signature))) return null;
    if (!claimsHold(claims, tolerance, options.issuer, audiences)) return null;
    const principal = toPrincipal(claims);
    return isPrincipal(principal) ? principal : null;
  };
}

/** `{ id: sub, roles, claims }`; `null` without a string `sub`. */
function defaultPrincipal(claims: Readonly<Record<string, unknown>>): Principal | null {
  if (typeof claims.sub !== 'string' || claims.sub === '') return null;
  const roles = Array.isArray(claims.roles) && claims.roles.every((r) => typeof r === 'string') ? claims.roles : [];
  return { id: claims.sub, roles: roles, claims };
}

function claimsHold(
  claims: Record<string, unknown>,
  tolerance: number,
  issuer: string | undefined,
  audiences: readonly string[] | undefined,
): boolean {
  const now = Date.now();
  if (claims.exp !== undefined && !(typeof claims.exp === 'number' && now < claims.exp * 1000 + tolerance)) {
    return false;
  }
  if (claims.nbf !== undefined && !(typeof claims.nbf === 'number' && now >= claims.nbf * 1000 - tolerance)) {
    return false;
  }
  if (issuer !== undefined && claims.iss !== issuer) return false;
  if (audiences !== undefined) {
    const aud = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (!aud.some((a) => audiences.includes(a as string))) return false;
  }
  return true;
}

/** The verification keys for `alg` (and `kid`): imported once, the fetched set kept for `jwksCacheMs`. */
function keySource(
  options: JwtAuthenticatorOptions,
): (alg: Algorithm, kid: string | undefined) => Promise<VerifyKey[]> {
  if (options.secret !== undefined) {
    const raw = typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret;
    const hmac = crypto.subtle.importKey('raw', raw, IMPORT.HS256, false, ['verify']);
    return async (alg) => (alg === 'HS256' ? [await hmac] : []);
  }
  const imported = new Map<Jwk, Map<Algorithm, Promise<VerifyKey | undefined>>>();
  const importOf = (jwk: Jwk, alg: Algorithm): Promise<VerifyKey | undefined> => {
    let byAlg = imported.get(jwk);
    if (byAlg === undefined) imported.set(jwk, (byAlg = new Map<Algorithm, Promise<VerifyKey | undefined>>()));
    let key = byAlg.get(alg);
    if (key === undefined) {
      key = crypto.subtle.importKey('jwk', jwk as never, IMPORT[alg], false, ['verify']).catch(() => undefined);
      byAlg.set(alg, key);
    }
    return key;
  };
  const select = async (set: JsonWebKeySet, alg: Algorithm, kid: string | undefined) => {
    const fitting = set.keys.filter(
      (jwk) =>
        jwk.kty === KEY_TYPE[alg] &&
        alg !== 'HS256' && // a symmetric key in a public key set is not trusted
        (jwk.alg === undefined || jwk.alg === alg) &&
        (kid === undefined || jwk.kid === kid),
    );
    const keys = await Promise.all(fitting.map((jwk) => importOf(jwk, alg)));
    return keys.filter((key): key is VerifyKey => key !== undefined);
  };
  if (options.jwks !== undefined) {
    const set = options.jwks;
    if (!Array.isArray(set?.keys)) throw new ConfigurationError('jwtAuthenticator: `jwks` must be { keys: [...] }');
    return (alg, kid) => select(set, alg, kid);
  }
  const url = String(options.jwksUrl);
  const cacheMs = options.jwksCacheMs ?? 600_000;
  const fetchSet = options.fetch ?? fetch;
  let cached: { set: JsonWebKeySet; at: number } | undefined;
  let inFlight: Promise<JsonWebKeySet | undefined> | undefined;
  const load = (): Promise<JsonWebKeySet | undefined> =>
    (inFlight ??= (async () => {
      try {
        const response = await fetchSet(url, { headers: { accept: 'application/json' } });
        if (!response.ok) return cached?.set;
        const set = (await response.json()) as JsonWebKeySet;
        if (!Array.isArray(set?.keys)) return cached?.set;
        cached = { set, at: Date.now() };
        return set;
      } catch {
        return cached?.set;
      } finally {
        inFlight = undefined;
      }
    })());
  return async (alg, kid) => {
    const fresh = cached !== undefined && Date.now() - cached.at < cacheMs;
    let set = fresh ? cached!.set : await load();
    if (set === undefined) return [];
    let keys = await select(set, alg, kid);
    // A key the set does not have yet (rotated in at the issuer): fetch again, not more often than REFETCH_MS.
    if (keys.length === 0 && kid !== undefined && cached !== undefined && Date.now() - cached.at >= REFETCH_MS) {
      set = await load();
      if (set !== undefined) keys = await select(set, alg, kid);
    }
    return keys;
  };
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  const bytes = decodeBase64Url(part);
  if (bytes === undefined) return undefined;
  try {
    const value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function decodeBase64Url(part: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) return undefined;
  const base64 = part.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (part.length % 4)) % 4);
  try {
    const binary = atob(base64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return undefined;
  }
}
