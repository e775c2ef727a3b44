// The built `cubepi` command in a tmux pane, for what only a real terminal shows: what is on screen now
// (`capture-pane`), after the command's redraws. Each session has its own tmux server (its own socket), killed at the
// end; the pane stays after the command exits, so its last screen can be read, ending in `[exit <code>]`.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MAIN, workdir } from './cli-harness.js';

const run = promisify(execFile);
export const TMUX = '/usr/bin/tmux';

let sessions = 0;

/** A command running in a tmux pane. */
export interface TmuxPane {
  /** The screen as it is now (text only), trailing blank lines dropped. */
  screen(): Promise<string>;
  /** Resolves with the screen once it matches `pattern`; rejects (with the screen) if it does not within `timeoutMs`. */
  waitForScreen(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  /** Types keys as tmux names them (`'y'`, `'Enter'`, `'C-c'`). */
  keys(...keys: string[]): Promise<void>;
  /** Kills the pane's tmux server (and the command if it still runs). */
  close(): Promise<void>;
}

/** Starts `cubepi args…` in `cwd` in a fresh 160×40 tmux pane, with `env` (it replaces the environment). */
export async function startInTmux(
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<TmuxPane> {
  const socket = `cubepi-test-${process.pid}-${sessions++}`;
  const config = join(workdir(), 'tmux.conf');
  // The pane outlives the command; no status line, so the screen is the command's alone.
  writeFileSync(config, 'set -g remain-on-exit on\nset -g status off\n');
  const env = Object.entries(options.env)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => `${name}=${value}`);
  const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;
  // A shell waits for the command and prints its exit code: tmux's own notice of a dead pane can come late (or, under
  // load in a sandboxed kernel, not at all), a shell's wait does not.
  const command = [
    'sh',
    '-c',
    '"$@"; echo "[exit $?]"',
    'sh',
    ...['env', '-i', ...env, 'TERM=xterm', process.execPath, MAIN, ...args],
  ]
    .map(quote)
    .join(' ');
  const tmux = (...tmuxArgs: string[]) => run(TMUX, ['-L', socket, '-f', config, ...tmuxArgs], { cwd: options.cwd });
  await tmux('new-session', '-d', '-s', 'cli', '-x', '160', '-y', '40', '-c', options.cwd, command);
  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'cli')).stdout.trimEnd();
  return {
    screen,
    async waitForScreen(pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = await screen();
        if (typeof pattern === 'string' ? now.includes(pattern) : pattern.test(now)) return now;
        if (Date.now() > deadline) throw new Error(`the screen never showed ${String(pattern)}:\n${now}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async keys(...keys) {
      await tmux('send-keys', '-t', 'cli', ...keys);
    },
    async close() {
      await tmux('kill-server').catch(() => undefined);
    },
  };
}
