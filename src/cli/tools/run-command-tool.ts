import { spawn } from 'node:child_process';
import { z } from 'zod';
import { defineTool } from '../../index.js';
import { clipOutput } from './clip-output.js';
import type { Workspace } from './workspace.js';

/**
 * `run_command`: runs a shell command (`sh -c`) in the workspace directory and answers its exit code and output.
 * Offered only with `--allow-shell`; each call is confirmed by the user unless `--yes`. Progress: the output so far,
 * as it comes. Cancelling the run kills the command's process group; so does a timeout (default 120 s).
 * The command runs with the user's rights: the workspace confines the built-in file tools, not a shell.
 */
export function runCommandTool(workspace: Workspace) {
  return defineTool({
    name: 'run_command',
    description: 'Run a shell command in the working directory; answers its exit code, stdout and stderr.',
    executionMode: 'sequential',
    parameters: z.object({
      command: z.string().min(1).describe('The command line, run by sh -c'),
      timeoutSeconds: z.number().int().min(1).max(3600).default(120),
    }),
    execute: (_id, { command, timeoutSeconds }, { signal, onUpdate }) =>
      new Promise((resolve, reject) => {
        signal.throwIfAborted();
        // Its own process group, so cancelling kills the whole command line (`sleep` in `a; sleep 9`), not only sh.
        const child = spawn('sh', ['-c', command], {
          cwd: workspace.root,
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const killGroup = () => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // Already gone.
          }
        };
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          killGroup();
        }, timeoutSeconds * 1000);
        signal.addEventListener('abort', killGroup, { once: true });
        let output = '';
        const collect = (chunk: Buffer) => {
          output += chunk.toString('utf8');
          onUpdate({ content: [{ type: 'text', text: clipOutput(output, 2_000) }] });
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        const settle = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', killGroup);
        };
        child.once('error', (error) => {
          settle();
          reject(error);
        });
        child.once('close', (code, killedBy) => {
          settle();
          if (signal.aborted) return reject(signal.reason as Error);
          const status = timedOut
            ? `timed out after ${timeoutSeconds} s`
            : code === null
              ? `killed by ${killedBy}`
              : `exit code ${code}`;
          resolve({
            content: [{ type: 'text', text: `${status}\n${clipOutput(output)}` }],
            details: { exitCode: code, signal: killedBy },
            isError: code !== 0,
          });
        });
      }),
  });
}
