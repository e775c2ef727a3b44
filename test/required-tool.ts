// A system tool a test file needs (Chromium, tmux), installed from Debian by .ci/run: with CI set, a missing one is a
// failing test that says how to install it; elsewhere the file's tests do not run and a warning says so.
import { existsSync } from 'node:fs';
import { it } from 'vitest';

const inCI = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';

/** Whether `path` exists; if not, registers the failure (CI) or prints the warning (elsewhere) for `what`. */
export function requireTool(what: string, path: string, debianPackage: string): boolean {
  if (existsSync(path)) return true;
  if (inCI) {
    it(`finds ${path} for ${what} (required when CI is set)`, () => {
      throw new Error(`No ${path}: apt-get install -y ${debianPackage} (.ci/run does it).`);
    });
  } else {
    console.warn(`\n⚠ ${what} NOT RUN: no ${path}. Install it with apt-get install -y ${debianPackage}.\n`);
  }
  return false;
}
