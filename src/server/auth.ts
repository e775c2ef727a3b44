/**
 * The bearer-token check of the agent server, in constant time (Web Crypto only, so edge runtimes can run it).
 * @module
 */

const encoder = new TextEncoder();

/**
 * True when no token is configured, or the request presents it: `Authorization: Bearer <token>`, else the
 * `access_token` query parameter. Both sides are hashed (SHA-256) and the digests compared byte by byte without an
 * early exit, so the time taken says nothing about how much of the token matched.
 * @internal
 */
export async function isAuthorized(header: string | null, url: URL, token: string | undefined): Promise<boolean> {
  if (token === undefined) return true;
  const presented = header?.startsWith('Bearer ') === true ? header.slice(7) : url.searchParams.get('access_token');
  if (presented === null) return false;
  const [a, b] = await Promise.all([digest(presented), digest(token)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)));
}
