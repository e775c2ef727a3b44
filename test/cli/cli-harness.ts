// Running the built `cubepi` command as a user does: with pipes (`runCli`, `startCli`), or in a pseudo-terminal
// (`startInPty`: util-linux `script`, which every Debian system has, so CI needs nothing more).
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const MAIN = join(root, 'dist/src/cli/main.js');

/** Builds dist/ once if a test file runs before `npm run build`. */
export async function ensureBuilt(): Promise<void> {
  if (!existsSync(MAIN)) await promisify(execFile)('npm', ['run', 'build'], { cwd: root });
}

/** A fresh empty working directory. */
export function workdir(): string {
  return mkdtempSync(join(tmpdir(), 'cubepi-cli-'));
}

/** The environment without any provider variable (so the tests never reach a real API), plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of [
    'ANTHROPIC_API_KEY',
    'ANTHROPIC_AUTH_TOKEN',
    'ANTHROPIC_BASE_URL',
    'OPENAI_API_KEY',
    'OPENAI_BASE_URL',
    'CUBEPI_DB',
  ]) {
    delete env[name];
  }
  return { ...env, ...extra };
}

/** What a finished command printed and its exit code. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A command running with pipes: its output so far, a way to wait for some of it, and its end. */
export interface RunningCli {
  readonly child: ChildProcessWithoutNullStreams;
  readonly output: { stdout: string; stderr: string };
  /** Resolves when stdout + stderr match `pattern`; rejects if the process ends first. */
  waitFor(pattern: RegExp | string): Promise<void>;
  readonly done: Promise<CliResult>;
}

/** Starts `cubepi args…` with pipes in `cwd` (`main`: another copy of the built command, default {@link MAIN}). */
export function startCli(
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; main?: string },
): RunningCli {
  return track(
    spawn(process.execPath, [options.main ?? MAIN, ...args], {
      cwd: options.cwd,
      env: options.env ?? cleanEnv(),
      stdio: 'pipe',
    }),
  );
}

/**
 * Starts `cubepi args…` in a pseudo-terminal (stdin, stdout and stderr are a TTY); what is written to `child.stdin`
 * is typed at the terminal (`\x03` is Ctrl-C). The output is the terminal's (stdout and stderr together).
 */
export function startInPty(args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): RunningCli {
  const command = [process.execPath, MAIN, ...args].map((arg) => `'${arg.replace(/'/g, `'\\''`)}'`).join(' ');
  // -q quiet, -f flush at once, -e the child's exit code, -c the command; no typescript file.
  return track(
    spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: options.cwd,
      env: { ...(options.env ?? cleanEnv()), TERM: 'xterm' },
      stdio: 'pipe',
    }),
  );
}

/** Runs `cubepi args…` to the end, with `input` on stdin. */
export function runCli(
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; input?: string; main?: string },
): Promise<CliResult> {
  const running = startCli(args, options);
  running.child.stdin.end(options.input ?? '');
  return running.done;
}

function track(child: ChildProcessWithoutNullStreams): RunningCli {
  const output = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  const notify = () => waiters.forEach((check) => check());
  child.stdout.on('data', (chunk: Buffer) => ((output.stdout += chunk.toString('utf8')), notify()));
  child.stderr.on('data', (chunk: Buffer) => ((output.stderr += chunk.toString('utf8')), notify()));
  let exited = false;
  // A missing executable (no `script` on this system) fails the test with its cause, not an unhandled 'error'.
  child.once('error', (error) => {
    output.stderr += `spawn failed: ${error.message}\n`;
    notify();
  });
  const done = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => {
      exited = true;
      resolve({ code, ...output });
      notify();
    }),
  );
  return {
    child,
    output,
    done,
    waitFor: (pattern) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          const all = output.stdout + output.stderr;
          if (typeof pattern === 'string' ? all.includes(pattern) : pattern.test(all)) {
            waiters.delete(check);
            resolve();
          } else if (exited) {
            waiters.delete(check);
            reject(new Error(`the command ended before printing ${String(pattern)}:\n${all}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}
