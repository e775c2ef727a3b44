// Bundles the chat page of `cubepi serve` (page/app.ts, TypeScript + RxJS + cubepi/client, for browsers) into
// dist/page, and the studio's page (page/studio/main.ts, for `cubepi studio` and `createStudio`) into dist/page/studio,
// with esbuild, each next to its HTML and CSS. Run by `npm run build`, after tsc. No source map: it would point
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

const studio = `${out}/studio`;
mkdirSync(studio, { recursive: true });
await esbuild.build({
  entryPoints: [`${root}page/studio/main.ts`],
  outfile: `${studio}/studio.js`,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  tsconfig: `${root}page/tsconfig.json`,
  logLevel: 'warning',
});
copyFileSync(`${root}page/studio/index.html`, `${studio}/index.html`);
copyFileSync(`${root}page/studio/studio.css`, `${studio}/studio.css`);
copyFileSync(`${root}page/studio/timeline.css`, `${studio}/timeline.css`);
