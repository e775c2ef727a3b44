#!/usr/bin/env node
/**
 * The `cubepi` command: a small dispatcher. Each subcommand lives in its own module, loaded only when it runs; adding
 * one is one line in {@link COMMANDS}. Built on the public API only.
 * @module
 */
import { readFileSync } from 'node:fs';
import { EXIT, reportError, usageError } from './cli-error.js';
import type { Command, CommandContext, CommandEntry } from './command.js';
import { hasDebugFlag } from './parse-options.js';

const entry = (summary: string, load: () => Promise<Command>): CommandEntry => ({ summary, load });

/** The subcommands, in the order `cubepi --help` lists them. */
export const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  chat: entry(
    'interactive chat with the agent (the default on a terminal)',
    async () => (await import('./chat-command.js')).chatCommand,
  ),
  run: entry('one prompt, streamed; --json for JSON lines', async () => (await import('./run-command.js')).runCommand),
  threads: entry(
    'list | show | rm | fork stored conversations',
    async () => (await import('./threads-command.js')).threadsCommand,
  ),
  demo: entry(
    'an offline demo run (what npm start shows)',
    async () => (await import('./demo-command.js')).demoCommand,
  ),
  mcp: entry(
    'serve an example agent as an MCP server over stdio',
    async () => (await import('./mcp-command.js')).mcpCommand,
  ),
  trace: entry('list | show traces from a local trace file', async () => (await import('./trace-command.js')).traceCli),
  eval: entry(
    'run | compare evals (cubepi/evals): a table per run, or what changed',
    async () => (await import('./eval-command.js')).evalCli,
  ),
  serve: entry(
    'a chat page and the agent server behind it (HTTP, SSE, WebSocket); --queue: on a run queue',
    async () => (await import('./serve-command.js')).serveCommand,
  ),
  studio: entry(
    'a local web app to see and steer runs: threads, timelines, live runs, retry/edit, compare',
    async () => (await import('./studio-command.js')).studioCommand,
  ),
  worker: entry(
    'run the agent for runs queued on PostgreSQL (cubepi serve --queue)',
    async () => (await import('./worker-command.js')).workerCommand,
  ),
};

function help(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`);
  return `Usage: cubepi <command> [options]

cubepi runs LLM agents from the terminal: offline with a demo model, or with Anthropic, OpenAI or any
OpenAI-compatible server (from ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENAI_BASE_URL). Threads are kept in
.cubepi/threads.db (or --db / CUBEPI_DB).

Commands:
${lines.join('\n')}

cubepi <command> --help shows a command's options. Docs: docs/cli.md. Exit codes: 0 ok, 1 failed, 2 bad usage,
130 interrupted.`;
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Runs the command line `argv` (without `node` and the script); resolves with the exit code. */
export async function main(argv: readonly string[], context: CommandContext): Promise<number> {
  const [name, ...rest] = argv;
  try {
    if (name === undefined) {
      // On a terminal, no command means chat; otherwise say how to use it.
      if (context.stdin.isTTY === true && context.stdout.isTTY === true)
        return await (
          await COMMANDS.chat!.load()
        )([], context);
      context.stdout.write(`${help()}\n`);
      return EXIT.ok;
    }
    if (name === '--help' || name === '-h' || name === 'help') {
      context.stdout.write(`${help()}\n`);
      return EXIT.ok;
    }
    if (name === '--version' || name === '-v') {
      context.stdout.write(`${version()}\n`);
      return EXIT.ok;
    }
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command === undefined) {
      const hint = name.startsWith('-')
        ? 'options go after a command'
        : `to run a prompt: cubepi run ${JSON.stringify(name)}`;
      throw usageError(`unknown command "${name}" (${hint}; cubepi --help lists the commands)`);
    }
    return await (
      await command.load()
    )(rest, context);
  } catch (error) {
    return reportError(error, (text) => void context.stderr.write(text), hasDebugFlag(argv));
  }
}

// A closed pipe (`cubepi run --json … | head`) is the reader leaving, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(EXIT.ok);
  throw error;
});

const context: CommandContext = {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
};
main(process.argv.slice(2), context).then(
  (code) => {
    // Exit now: a driver's pool or a reader on stdin must not keep a finished command alive.
    process.stdout.write('', () => process.exit(code));
  },
  (error: unknown) => {
    process.exit(reportError(error, (t) => void process.stderr.write(t), true));
  },
);
