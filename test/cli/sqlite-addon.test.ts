// The default thread store when better-sqlite3's native addon is not there: npm 11 installs the package but skips its
// install script (which builds the addon) until the project approves it. `cubepi run` then says so in one line, with
// the command that fixes it, instead of the bindings package's list of every path it tried. A copy of the built
// command is run next to a node_modules whose better-sqlite3 has no build/ (or a broken addon), everything else linked
// to the real packages.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, ensureBuilt, root, runCli, workdir } from './cli-harness.js';

/** An install of the built command whose better-sqlite3 is a copy without its build/ directory. */
function installWithoutAddon(): { dir: string; main: string; addonDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-no-addon-'));
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === 'better-sqlite3') continue;
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  const sqlite = join(modules, 'better-sqlite3');
  mkdirSync(sqlite);
  for (const part of ['package.json', 'lib']) {
    cpSync(join(root, 'node_modules/better-sqlite3', part), join(sqlite, part), { recursive: true });
  }
  return { dir, main: join(dir, 'dist/src/cli/main.js'), addonDir: join(sqlite, 'build/Release') };
}

describe('better-sqlite3 without its native addon', () => {
  let install: ReturnType<typeof installWithoutAddon>;
  beforeAll(async () => {
    await ensureBuilt();
    install = installWithoutAddon();
  }, 120_000);
  afterAll(() => rmSync(install.dir, { recursive: true, force: true }));

  it('an addon never built: one line naming the cause and the command that builds it', async () => {
    const result = await runCli(['run', 'hi', '--provider', 'faux'], {
      cwd: workdir(),
      env: cleanEnv(),
      main: install.main,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "cubepi: the default thread store (SQLite) needs better-sqlite3's native addon, which is not built (npm 11 skips " +
        'its install script until you approve it): npm install-scripts approve better-sqlite3 && npm rebuild ' +
        'better-sqlite3 (or pass --db memory)\n',
    );
  });

  it('an addon that does not load (built for another Node.js): one line saying to rebuild it', async () => {
    mkdirSync(install.addonDir, { recursive: true });
    writeFileSync(join(install.addonDir, 'better_sqlite3.node'), 'not a shared library');
    try {
      const result = await runCli(['run', 'hi', '--provider', 'faux'], {
        cwd: workdir(),
        env: cleanEnv(),
        main: install.main,
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /^cubepi: the default thread store \(SQLite\) cannot load better-sqlite3's native addon \(.{1,200}\): npm rebuild better-sqlite3 \(or pass --db memory\)\n$/,
      );
    } finally {
      rmSync(join(install.addonDir, '..'), { recursive: true, force: true });
    }
  });
});
