/**
 * The studio page's files (`dist/page/studio`: index.html, studio.js, studio.css, timeline.css), found next to the package's code
 * and served as they are.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'studio.js': 'text/javascript; charset=utf-8',
  'studio.css': 'text/css; charset=utf-8',
  'timeline.css': 'text/css; charset=utf-8',
};

/**
 * Where the built page is: `dist/page/studio` two levels above this file in the package (`dist/src/studio`); from the
 * sources (tests, `tsx`), the repository's `dist/page/studio`. @internal
 */
export function studioPageDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [resolve(here, '../../page/studio'), resolve(here, '../../dist/page/studio')];
  return candidates.find((dir) => existsSync(`${dir}/studio.js`)) ?? candidates[0]!;
}

/**
 * The response for the page file `name` (`''` is index.html), or `undefined` when it is none of the page's files. A
 * page that was not built is a 500 saying so. @internal
 */
export function pageFile(dir: string, name: string, method: string): Response | undefined {
  const file = name === '' ? 'index.html' : name;
  const type = TYPES[file];
  if (type === undefined || (method !== 'GET' && method !== 'HEAD')) return undefined;
  let body: Buffer;
  try {
    body = readFileSync(`${dir}/${file}`);
  } catch {
    return new Response('the studio page is not built: run npm run build', {
      status: 500,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
  }
  return new Response(method === 'HEAD' ? null : new Uint8Array(body), {
    status: 200,
    headers: {
      'content-type': type,
      'cache-control': 'no-cache',
      // The page reads its token from the URL's fragment; it must never leak in a Referer.
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    },
  });
}
