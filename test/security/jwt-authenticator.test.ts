// jwtAuthenticator on Web Crypto: HS256 with a secret, RS256 and ES256 with a key set given or fetched from a local
// HTTP server; a token is a principal only when its signature, exp, nbf, iss and aud all hold.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jwtAuthenticator, type JsonWebKeySet, type Jwk } from 'cubepi/server';

type CryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

const SECRET = 'a-shared-secret-of-32-characters';
const now = () => Math.floor(Date.now() / 1000);

function b64url(bytes: Uint8Array | string): string {
  const data = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes;
  return Buffer.from(data).toString('base64url');
}

async function sign(
  alg: 'HS256' | 'RS256' | 'ES256',
  key: CryptoKey,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const head = b64url(JSON.stringify({ alg, typ: 'JWT', ...header }));
  const body = b64url(JSON.stringify(claims));
  const params = alg === 'HS256' ? 'HMAC' : alg === 'RS256' ? 'RSASSA-PKCS1-v1_5' : { name: 'ECDSA', hash: 'SHA-256' };
  const signature = await crypto.subtle.sign(params, key, new TextEncoder().encode(`${head}.${body}`));
  return `${head}.${body}.${b64url(new Uint8Array(signature))}`;
}

const hmacKey = () =>
  crypto.subtle.importKey('raw', new TextEncoder().encode(SECRET), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);

async function rsaPair(kid: string) {
  const pair = await crypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true,
    ['sign', 'verify'],
  );
  const jwk = { ...(await crypto.subtle.exportKey('jwk', pair.publicKey)), kid, alg: 'RS256' } as Jwk;
  return { privateKey: pair.privateKey, jwk };
}

async function ecPair(kid: string) {
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const jwk = { ...(await crypto.subtle.exportKey('jwk', pair.publicKey)), kid } as Jwk;
  return { privateKey: pair.privateKey, jwk };
}

const request = (token: string | undefined, where: 'header' | 'query' = 'header') =>
  where === 'header'
    ? new Request(
        'http://api.test/threads',
        token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
      )
    : new Request(`http://api.test/runs/r/events?access_token=${encodeURIComponent(token ?? '')}`);

let http: Server | undefined;
afterEach(async () => {
  if (http !== undefined) await new Promise<void>((resolve) => http!.close(() => resolve()));
  http = undefined;
});

describe('jwtAuthenticator', () => {
  it('HS256: a valid token is its sub with roles and claims; header or ?access_token=', async () => {
    const authenticate = jwtAuthenticator({ secret: SECRET, issuer: 'https://issuer.test', audience: 'chat' });
    const claims = { sub: 'alice', roles: ['admin'], iss: 'https://issuer.test', aud: ['chat', 'x'], exp: now() + 60 };
    const token = await sign('HS256', await hmacKey(), claims);
    expect(await authenticate(request(token))).toEqual({ id: 'alice', roles: ['admin'], claims });
    expect(await authenticate(request(token, 'query'))).toMatchObject({ id: 'alice' });
    expect(await authenticate(request(undefined))).toBeNull();
  });

  it('refuses expired, not-yet-valid, wrong issuer, wrong audience, no sub, tampered, alg none and malformed tokens', async () => {
    const authenticate = jwtAuthenticator({ secret: SECRET, issuer: 'iss', audience: 'chat', clockToleranceSec: 0 });
    const key = await hmacKey();
    const good = { sub: 'alice', iss: 'iss', aud: 'chat', exp: now() + 60 };
    expect(await authenticate(request(await sign('HS256', key, good)))).toMatchObject({ id: 'alice' });
    const bad = [
      await sign('HS256', key, { ...good, exp: now() - 5 }),
      await sign('HS256', key, { ...good, nbf: now() + 60 }),
      await sign('HS256', key, { ...good, iss: 'other' }),
      await sign('HS256', key, { ...good, aud: 'other' }),
      await sign('HS256', key, { ...good, exp: 'tomorrow' }),
      await sign('HS256', key, { iss: 'iss', aud: 'chat' }),
    ];
    const valid = await sign('HS256', key, good);
    const [head, , sig] = valid.split('.');
    bad.push(`${head}.${b64url(JSON.stringify({ ...good, sub: 'mallory' }))}.${sig}`); // tampered claims
    bad.push(`${b64url(JSON.stringify({ alg: 'none' }))}.${b64url(JSON.stringify(good))}.`);
    bad.push('not-a-jwt', 'a.b', `${head}.!!!.${sig}`, '...');
    const wrongSecret = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode('another-secret-of-32-characters!'),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    bad.push(await sign('HS256', wrongSecret, good));
    for (const token of bad) expect(await authenticate(request(token)), token).toBeNull();
  });

  it('RS256 and ES256 against a key set: the key its kid names; an HS256 token signed with a public key is refused', async () => {
    const rsa = await rsaPair('r1');
    const ec = await ecPair('e1');
    const jwks: JsonWebKeySet = { keys: [rsa.jwk, ec.jwk] };
    const authenticate = jwtAuthenticator({ jwks });
    const claims = { sub: 'bob', exp: now() + 60 };
    expect(await authenticate(request(await sign('RS256', rsa.privateKey, claims, { kid: 'r1' })))).toMatchObject({
      id: 'bob',
    });
    expect(await authenticate(request(await sign('ES256', ec.privateKey, claims, { kid: 'e1' })))).toMatchObject({
      id: 'bob',
    });
    expect(await authenticate(request(await sign('ES256', ec.privateKey, claims)))).toMatchObject({ id: 'bob' });
    // The wrong kid, a key from elsewhere, and the classic confusion: HS256 "signed" with the RSA public key's text.
    expect(await authenticate(request(await sign('RS256', rsa.privateKey, claims, { kid: 'e1' })))).toBeNull();
    const stranger = await rsaPair('r1');
    expect(await authenticate(request(await sign('RS256', stranger.privateKey, claims, { kid: 'r1' })))).toBeNull();
    const confused = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(JSON.stringify(rsa.jwk)),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    expect(await authenticate(request(await sign('HS256', confused, claims, { kid: 'r1' })))).toBeNull();
  });

  it('jwksUrl: fetches the set once, caches it, and a custom principal mapping decides the id', async () => {
    const rsa = await rsaPair('k1');
    let fetched = 0;
    http = createServer((_req, res) => {
      fetched++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [rsa.jwk] }));
    });
    await new Promise<void>((resolve) => http!.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    const authenticate = jwtAuthenticator({
      jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
      principal: (claims) => (typeof claims.uid === 'string' ? { id: `tenant:${claims.uid}` } : null),
    });
    const token = await sign('RS256', rsa.privateKey, { uid: '7', exp: now() + 60 }, { kid: 'k1' });
    expect(await authenticate(request(token))).toEqual({ id: 'tenant:7' });
    expect(await authenticate(request(token))).toEqual({ id: 'tenant:7' });
    expect(fetched).toBe(1);
    expect(await authenticate(request(await sign('RS256', rsa.privateKey, { exp: now() + 60 })))).toBeNull();
  });

  it('gives no principal when the key set cannot be fetched', async () => {
    http = createServer((_req, res) => res.writeHead(500).end('down'));
    await new Promise<void>((resolve) => http!.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    const rsa = await rsaPair('k1');
    const authenticate = jwtAuthenticator({ jwksUrl: `http://127.0.0.1:${port}/jwks.json` });
    expect(await authenticate(request(await sign('RS256', rsa.privateKey, { sub: 'a' }, { kid: 'k1' })))).toBeNull();
  });

  it("verifies a token's signature once for its many requests, yet checks its exp at every one", async () => {
    const authenticate = jwtAuthenticator({ secret: SECRET, clockToleranceSec: 0 });
    const key = await hmacKey();
    const token = await sign('HS256', key, { sub: 'alice', exp: now() + 2 });
    const verify = vi.spyOn(crypto.subtle, 'verify');
    try {
      // 100 watchers of one run, arriving together: one signature check.
      const principals = await Promise.all(Array.from({ length: 100 }, async () => authenticate(request(token))));
      expect(principals.every((p) => p?.id === 'alice')).toBe(true);
      expect(verify).toHaveBeenCalledTimes(1);
      // A tampered token is another string: checked (and refused), never taken for the remembered one.
      const [head, , sig] = token.split('.');
      const tampered = `${head}.${b64url(JSON.stringify({ sub: 'mallory', exp: now() + 60 }))}.${sig}`;
      expect(await authenticate(request(tampered))).toBeNull();
      expect(await authenticate(request(tampered))).toBeNull();
      expect(verify).toHaveBeenCalledTimes(3); // a bad signature is not remembered
      // Past its exp the remembered token is refused (the claims are checked at every request).
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 3000 });
      expect(await authenticate(request(token))).toBeNull();
    } finally {
      vi.useRealTimers();
      verify.mockRestore();
    }
  });

  it('refuses options without exactly one key source, or a short secret', () => {
    expect(() => jwtAuthenticator({} as never)).toThrow(/exactly one/);
    expect(() => jwtAuthenticator({ secret: SECRET, jwks: { keys: [] } } as never)).toThrow(/exactly one/);
    expect(() => jwtAuthenticator({ secret: 'short' })).toThrow(/16 bytes/);
  });
});
