// A TypeScript fixture a test runs as a child process, bundled once per test file by esbuild into plain ESM. Started
// as `node --import tsx fixture.ts`, each child spent ~1 s (more on a loaded machine) compiling the fixture and the
// sources it imports before its first line ran; the bundle starts in a fraction of that. The fixture's own code and
// the sources it imports are in the bundle; packages stay imports, resolved from the repository's node_modules (the
// bundle lives under `.tmp/scripts/`, inside the repository). The bundle keeps the fixture's file name (`x.ts` →
// `x.mjs`), so a fixture that checks it was started directly (`import.meta.url` against `process.argv[1]`) still sees
// it.
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const bundles = new Map<string, Promise<string>>();

/**
 * The path of `entry` (a .ts file) bundled to plain ESM for `node <path>`: built on the first call in this process
 * (from the sources as they are now), the same promise after. Each entry has one bundle path, in a folder named after
 * the entry's path: a build writes a file of its own and renames it into place, so test files running at once never
 * see half a bundle, and `.tmp/scripts/` holds one bundle per fixture, however many runs.
 */
export function bundledScript(entry: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (bundle === undefined) {
    const folder = createHash('sha256').update(relative(root, entry)).digest('hex').slice(0, 12);
    const outfile = join(root, '.tmp', 'scripts', folder, basename(entry).replace(/\.ts$/, '.mjs'));
    bundle = esbuild
      .build({
        entryPoints: [entry],
        outfile,
        write: false,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        logLevel: 'silent',
      })
      .then((result) => {
        const [file] = result.outputFiles;
        if (file === undefined) throw new Error(`esbuild gave no output for ${entry}`);
        mkdirSync(join(root, '.tmp', 'scripts', folder), { recursive: true });
        const temporary = `${outfile}.${process.pid}.${Math.random().toString(36).slice(2)}`;
        writeFileSync(temporary, file.contents);
        renameSync(temporary, outfile);
        return outfile;
      });
    bundles.set(entry, bundle);
  }
  return bundle;
}
