// Bundles the chat page of `cubepi serve` (page/app.ts, TypeScript + RxJS + cubepi/client, for browsers) into
// dist/page with esbuild, next to its HTML and CSS. Run by `npm run build`, after tsc. No source map: it would point
// into node_modules, which the package does not ship.
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = `${root}dist/page`;
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: [`${root}page/app.ts`],
  outfile: `${out}/app.js`,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  tsconfig: `${root}page/tsconfig.json`,
  logLevel: 'warning',
});
copyFileSync(`${root}page/index.html`, `${out}/index.html`);
copyFileSync(`${root}page/app.css`, `${out}/app.css`);
