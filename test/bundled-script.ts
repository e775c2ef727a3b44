// A TypeScript fixture a test runs as a child process, bundled once per test file by esbuild into plain ESM. Started
// as `node --import tsx fixture.ts`, each child spent ~1 s (more on a loaded machine) compiling the fixture and the
// sources it imports before its first line ran; the bundle starts in a fraction of that. The fixture's own code and
// the sources it imports are in the bundle; packages stay imports, resolved from the repository's node_modules (the
// bundle lives under `.tmp/`, inside the repository). The bundle keeps the fixture's file name (`x.ts` → `x.mjs`),
// so a fixture that checks it was started directly (`import.meta.url` against `process.argv[1]`) still sees it.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const bundles = new Map<string, Promise<string>>();
let dir: string | undefined;

/**
 * The path of `entry` (a .ts file) bundled to plain ESM for `node <path>`: built on the first call in this process,
 * the same promise after. The bundles are removed when the process exits.
 */
export function bundledScript(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (bundle === undefined) {
    if (dir === undefined) {
      mkdirSync(join(root, '.tmp'), { recursive: true });
      const made = mkdtempSync(join(root, '.tmp', 'scripts-'));
      dir = made;
      process.once('exit', () => rmSync(made, { recursive: true, force: true }));
    }
    // A folder per entry: two fixtures of the same name do not overwrite each other.
    const outfile = join(dir, String(bundles.size), basename(entry).replace(/\.ts$/, '.mjs'));
    bundle = esbuild
      .build({
        entryPoints: [entry],
        outfile,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        logLevel: 'silent',
      })
      .then(() => outfile);
    bundles.set(entry, bundle);
  }
  return bundle;
}
