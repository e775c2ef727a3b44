/**
 * `cubepi serve`: a chat page and the agent server behind it (`cubepi/server`), threads stored where the other
 * commands keep them (`--db`, `CUBEPI_DB`, else SQLite at `.cubepi/threads.db`). Loopback by default; any other
 * address needs `--auth-token`. The model is chosen like `cubepi run`'s; offline, a scripted demo model streams its
 * answers slowly enough to watch, reports tool progress, and asks for approval before its guarded tool.
 * @module
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Agent, defineTool, ToolGuard, type AnyAgentTool, type Checkpointer, type Message } from '../index.js';
import { attachWebSocket, createAgentServer, toNodeListener } from '../server/index.js';
import { FauxProvider, fauxMessage, fauxToolCall } from '../testing/index.js';
import { parseDelay } from './agent-setup.js';
import { chooseModel, type ModelChoice } from './choose-model.js';
import { EXIT, usageError } from './cli-error.js';
import type { Command } from './command.js';
import { openCheckpointer, storeSpec } from './open-checkpointer.js';
import { parseCommandArgs } from './parse-options.js';
import { builtinTools } from './tools/builtin-tools.js';

const HELP = `Usage: cubepi serve [options]

Serves a chat page and the agent server behind it: threads on the left, answers streamed token by token, tool calls
with live progress, Stop, approvals for guarded tools, and a reload mid-run that resumes the stream.

Options:
  --port <n>            port (default 8787; 0 picks a free one)
  --host <addr>         address to bind (default 127.0.0.1)
  --db <path|url>       SQLite file (default .cubepi/threads.db), postgres://…, or memory (also CUBEPI_DB)
  --provider <p>        anthropic | openai | openai-responses | faux (default: from the environment, else the demo)
  --model <id>          the model id (default: the provider's current one)
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

/** `cubepi serve`: resolves with the exit code once the server stopped (SIGINT: 130, SIGTERM: 0). */
export const serveCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs(
    'serve',
    args,
    {
      port: { type: 'string', default: '8787' },
      host: { type: 'string', default: '127.0.0.1' },
      db: { type: 'string' },
      provider: { type: 'string' },
      model: { type: 'string' },
      'auth-token': { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      delay: { type: 'string' },
      debug: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    false,
  );
  if (values.help) {
    context.stdout.write(`${HELP}\n`);
    return EXIT.ok;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw usageError(`serve: --port must be 0-65535, got ${values.port}`);
  const delayMs = parseDelay(values.delay) ?? 25;
  const token = values['auth-token'] ?? (context.env.CUBEPI_AUTH_TOKEN || undefined);
  if (token !== undefined && token.length < 16) throw usageError('serve: --auth-token must be at least 16 characters');
  if (!isLoopback(values.host) && token === undefined) {
    throw usageError(
      `serve: binding ${values.host} exposes the agent to the network: set --auth-token (16+ characters)`,
    );
  }
  const choice = await chooseModel({ provider: values.provider, model: values.model, delayMs }, context.env);
  const store = await openCheckpointer(storeSpec(values.db, context.env), context.cwd);
  const checkpointer = store.checkpointer;
  const server = createAgentServer({
    agent: (threadId) => serveAgent(choice, checkpointer, threadId, delayMs, context.cwd),
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
  // WebSocket is optional (the page streams over SSE): without the `ws` package, say so and serve the rest.
  await attachWebSocket(http, server).catch((error: unknown) => {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    context.stderr.write('cubepi serve: WebSocket streams are off: install the ws package to serve them\n');
  });
  await new Promise<void>((ready, fail) => {
    http.once('error', (error) => fail(new Error(`cannot listen on ${values.host}:${port}: ${error.message}`)));
    http.listen(port, values.host, ready);
  });
  const { port: bound } = http.address() as AddressInfo;
  const host = values.host.includes(':') ? `[${values.host}]` : values.host;
  if (choice.notice !== undefined) context.stderr.write(`${choice.notice}\n`);
  context.stdout.write(
    `cubepi serve: http://${host}:${bound}/${token === undefined ? '' : '#token=<your token>'} ` +
      `(model: ${choice.demo ? 'the offline demo' : `${choice.providerName} ${choice.model}`}; threads: ` +
      `${store.description})\n`,
  );
  return new Promise<number>((done) => {
    const stop = (code: number) => () => {
      server.close();
      http.closeAllConnections();
      http.close(() => void Promise.resolve(checkpointer.close?.()).then(() => done(code)));
    };
    process.once('SIGINT', stop(EXIT.interrupted));
    process.once('SIGTERM', stop(EXIT.ok));
  });
};

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

/**
 * A thread's agent: with the demo model, its two demo tools (`delete_notes` guarded); with a real model, the command's
 * read-only built-in tools confined to the working directory.
 */
function serveAgent(
  choice: ModelChoice,
  checkpointer: Checkpointer,
  threadId: string,
  delayMs: number,
  cwd: string,
): Agent {
  const tools: AnyAgentTool[] = choice.demo ? [research, deleteNotes] : builtinTools({ dir: cwd });
  return new Agent({
    provider: choice.demo ? demoProvider(delayMs) : choice.provider,
    model: choice.demo ? 'faux' : choice.model,
    systemPrompt: choice.demo ? 'You are the cubepi demo assistant.' : `You help with the files in ${cwd}.`,
    tools,
    middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['delete_notes'] }) })],
    checkpointer,
    threadId,
  });
}
