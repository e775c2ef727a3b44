import { spawn } from 'node:child_process';
import { z } from 'zod';
import { defineTool } from '../../index.js';
import { clipOutput } from './clip-output.js';
import type { Workspace } from './workspace.js';

/**
 * `run_command`: runs a shell command (`sh -c`) in the workspace directory and answers its exit code and output.
 * Offered only with `--allow-shell`; each call is confirmed by the user unless `--yes`. Progress: the output so far,
 * as it comes. Cancelling the run kills the process (the spawn's signal); a timeout (default 120 s) does too.
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
        const child = spawn('sh', ['-c', command], {
          cwd: workspace.root,
          signal,
          timeout: timeoutSeconds * 1000,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        const collect = (chunk: Buffer) => {
          output += chunk.toString('utf8');
          onUpdate({ content: [{ type: 'text', text: clipOutput(output, 2_000) }] });
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        child.once('error', reject);
        child.once('close', (code, killedBy) => {
          if (signal.aborted) return reject(signal.reason as Error);
          const status = code === null ? `killed by ${killedBy}` : `exit code ${code}`;
          resolve({
            content: [{ type: 'text', text: `${status}\n${clipOutput(output)}` }],
            details: { exitCode: code, signal: killedBy },
            isError: code !== 0,
          });
        });
      }),
  });
}
