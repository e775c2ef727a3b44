/**
 * `cubepi serve`: a chat page and the agent server behind it (`cubepi/server`), threads stored in SQLite (or
 * PostgreSQL). Loopback by default; any other address needs `--auth-token`. Offline, a scripted demo model streams
 * its answers slowly enough to watch, reports tool progress, and asks for approval before its guarded tool.
 * @module
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { Agent, defineTool, ToolGuard, type Checkpointer, type Message } from '../index.js';
import { attachWebSocket, createAgentServer, toNodeListener } from '../server/index.js';
import { FauxProvider, fauxMessage, fauxToolCall } from '../testing/index.js';

const HELP = `Usage: cubepi serve [options]

Serves a chat page and the agent server behind it: threads on the left, answers streamed token by token, tool calls
with live progress, Stop, approvals for guarded tools, and a reload mid-run that resumes the stream.

Options:
  --port <n>            port (default 8787; 0 picks a free one)
  --host <addr>         address to bind (default 127.0.0.1)
  --db <path|url>       SQLite file (default .cubepi/threads.db) or postgres://… (also CUBEPI_DB)
  --auth-token <token>  required by every request (also CUBEPI_AUTH_TOKEN); mandatory off loopback; open the page
                        as http://host:port/#token=<token>
  --cors-origin <url>   allow this page origin to call the API (repeatable)
  --delay <ms>          pause between streamed chunks of the offline demo model (default 25)
  -h, --help            show this help`;

/** Where `app.js`, `app.css` and `index.html` were built (`dist/page`, two levels above `dist/src/cli`). */
const PAGE = resolve(dirname(fileURLToPath(import.meta.url)), '../../page');

const STATIC: Record<string, string> = {
  '/': 'index.html',
  '/index.html': 'index.html',
  '/app.js': 'app.js',
  '/app.css': 'app.css',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** Runs `cubepi serve` with `argv` (after `serve`); resolves with the exit code once the server stopped. */
export async function serveCommand(argv: readonly string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        port: { type: 'string', default: '8787' },
        host: { type: 'string', default: '127.0.0.1' },
        db: { type: 'string' },
        'auth-token': { type: 'string' },
        'cors-origin': { type: 'string', multiple: true },
        delay: { type: 'string', default: '25' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    process.stderr.write(`cubepi serve: ${(error as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const port = Number(values.port);
  const delayMs = Number(values.delay);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usage(`--port must be 0-65535, got ${values.port}`);
  if (!Number.isFinite(delayMs) || delayMs < 0) return usage(`--delay must be milliseconds, got ${values.delay}`);
  const token = values['auth-token'] ?? process.env.CUBEPI_AUTH_TOKEN;
  if (token !== undefined && token.length < 16) return usage('--auth-token must be at least 16 characters');
  if (!isLoopback(values.host) && token === undefined) {
    return usage(`binding ${values.host} exposes the agent to the network: set --auth-token (16+ characters)`);
  }

  const checkpointer = await openCheckpointer(values.db ?? process.env.CUBEPI_DB ?? '.cubepi/threads.db');
  const server = createAgentServer({
    agent: (threadId) => demoAgent(checkpointer, threadId, delayMs),
    checkpointer,
    authToken: token,
    cors: { origins: values['cors-origin'] ?? [] },
    basePath: '/api',
  });
  const api = toNodeListener(server);
  const http = createServer((req, res) => {
    if (req.url?.startsWith('/api/') === true) api(req, res);
    else serveStatic(req, res);
  });
  await attachWebSocket(http, server);
  await new Promise<void>((ready, fail) => {
    http.once('error', fail);
    http.listen(port, values.host, ready);
  });
  const { port: bound } = http.address() as AddressInfo;
  const host = values.host.includes(':') ? `[${values.host}]` : values.host;
  process.stdout.write(
    `cubepi serve: http://${host}:${bound}/${token === undefined ? '' : '#token=…'} ` +
      '(demo model: offline and scripted; threads in ' +
      `${values.db ?? process.env.CUBEPI_DB ?? '.cubepi/threads.db'})\n`,
  );
  return new Promise<number>((done) => {
    const stop = (code: number) => () => {
      server.close();
      http.closeAllConnections();
      http.close(() => void Promise.resolve(checkpointer.close?.()).then(() => done(code)));
    };
    process.once('SIGINT', stop(130));
    process.once('SIGTERM', stop(0));
  });
}

function usage(message: string): number {
  process.stderr.write(`cubepi serve: ${message}\n`);
  return 2;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function serveStatic(req: IncomingMessage, res: ServerResponse): void {
  const file = STATIC[new URL(req.url ?? '/', 'http://localhost').pathname];
  if (file === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  let body: Buffer;
  try {
    body = readFileSync(`${PAGE}/${file}`);
  } catch {
    res.writeHead(500, { 'content-type': 'text/plain' }).end('the page is not built: run npm run build');
    return;
  }
  res.writeHead(200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': 'no-cache',
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

async function openCheckpointer(where: string): Promise<Checkpointer> {
  if (/^postgres(ql)?:\/\//.test(where)) {
    const { PostgresCheckpointer } = await import('../checkpoint/postgres.js');
    return new PostgresCheckpointer(where);
  }
  mkdirSync(dirname(resolve(where)), { recursive: true });
  const { SQLiteCheckpointer } = await import('../checkpoint/sqlite.js');
  return new SQLiteCheckpointer(where);
}

/** A tool that reports progress three times, then answers; cancellable at any moment. */
const research = defineTool({
  name: 'research',
  description: 'Looks a topic up in the local notes',
  parameters: z.object({ topic: z.string() }),
  execute: async (_id, { topic }, { signal, onUpdate }) => {
    for (const step of ['searching', 'reading', 'summarising']) {
      onUpdate({ content: [{ type: 'text', text: `${step} ${topic}` }] });
      await sleep(150, signal);
    }
    return { content: [{ type: 'text', text: `Notes on ${topic}: three entries found.` }] };
  },
});

/** A tool that changes things: the page must approve each call. */
const deleteNotes = defineTool({
  name: 'delete_notes',
  description: 'Deletes the notes on a topic',
  parameters: z.object({ topic: z.string() }),
  execute: async (_id, { topic }, { signal }) => {
    await sleep(50, signal);
    return { content: [{ type: 'text', text: `Deleted the notes on ${topic}.` }] };
  },
});

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done, fail) => {
    if (signal.aborted) return fail(signal.reason as Error);
    const onAbort = () => (clearTimeout(timer), fail(signal.reason as Error));
    const timer = setTimeout(() => (signal.removeEventListener('abort', onAbort), done()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The last user prompt's text. */
function lastPrompt(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    return typeof message.content === 'string'
      ? message.content
      : message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  }
  return '';
}

/**
 * The demo model, whatever the prompt: a prompt mentioning "delete" calls the guarded `delete_notes`; any other calls
 * `research` on it, then streams a long answer (about 100 chunks, `delayMs` apart: time to press Stop or reload).
 */
function demoProvider(delayMs: number): FauxProvider {
  const script = (messages: readonly Message[]) => {
    const last = messages.at(-1);
    const prompt = lastPrompt(messages);
    const topic = prompt.slice(0, 40) || 'cubepi';
    if (last?.role === 'user') {
      const tool = /delete/i.test(prompt) ? 'delete_notes' : 'research';
      return fauxMessage([fauxToolCall(tool, { topic })]);
    }
    const result =
      last?.role === 'toolResult' ? last.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';
    const paragraphs = Array.from(
      { length: 6 },
      (_, i) => `Point ${i + 1}: this is the scripted demo model answering "${topic}", one small chunk at a time.`,
    );
    return fauxMessage(`${result}\n\n${paragraphs.join('\n')}\n\nDone.`);
  };
  // Enough turns for a long conversation: each prompt takes two model calls.
  return new FauxProvider({ delayMs, chunkSize: 4, responses: Array.from({ length: 200 }, () => script) });
}

function demoAgent(checkpointer: Checkpointer, threadId: string, delayMs: number): Agent {
  return new Agent({
    provider: demoProvider(delayMs),
    model: 'faux',
    systemPrompt: 'You are the cubepi demo assistant.',
    tools: [research, deleteNotes],
    middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['delete_notes'] }) })],
    checkpointer,
    threadId,
  });
}
