/**
 * `cubepi serve`: a chat page and the agent server behind it (`cubepi/server`), threads stored where the other
 * commands keep them (`--db`, `CUBEPI_DB`, else SQLite at `.cubepi/threads.db`). With `--queue postgres://…` it is an
 * API node on a run queue instead (`createQueueServer`): `cubepi worker` processes run the agent. Loopback by default;
 * every request needs a token: `--auth-token`, else a random one printed in the page's URL (`--no-auth`: none, loopback
 * only). The model is chosen like `cubepi run`'s; offline, a scripted demo model streams its
 * answers slowly enough to watch, reports tool progress, and asks for approval before its guarded tool.
 * @module
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dirname, extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  attachWebSocket,
  createAgentServer,
  createQueueServer,
  toNodeListener,
  type HttpAgentServer,
} from '../server/index.js';
import { parseDelay } from './agent-setup.js';
import { chooseModel } from './choose-model.js';
import { EXIT, usageError } from './cli-error.js';
import {
  listen,
  noAuthWarning,
  resolveServingFlags,
  SERVING_OPTIONS,
  tokenFragment,
  untilSignal,
} from './serve-shared.js';
import type { Command } from './command.js';
import { openCheckpointer, storeSpec } from './open-checkpointer.js';
import { openQueue } from './open-queue.js';
import { parseCommandArgs } from './parse-options.js';
import { serveAgent } from './serve-agent.js';

const HELP = `Usage: cubepi serve [options]

Serves a chat page and the agent server behind it: threads on the left, answers streamed token by token, tool calls
with live progress, Stop, approvals for guarded tools, and a reload mid-run that resumes the stream.

Options:
  --port <n>            port (default 8787; 0 picks a free one)
  --host <addr>         address to bind (default 127.0.0.1)
  --db <path|url>       SQLite file (default .cubepi/threads.db), postgres://…, or memory (also CUBEPI_DB)
  --provider <p>        anthropic | openai | openai-responses | faux (default: from the environment, else the demo)
  --model <id>          the model id (default: the provider's current one)
  --auth-token <token>  required by every request (also CUBEPI_AUTH_TOKEN); open the page as
                        http://host:port/#token=<token>. Without it, a random token is made at start and the
                        page's URL printed with it
  --no-auth             no token (loopback only): any program on this machine can then run the agent, read every
                        thread and answer its approvals (web pages still cannot: Origin and Host are checked)
  --cors-origin <url>   allow this page origin to call the API (repeatable)
  --delay <ms>          pause between streamed chunks of the offline demo model (default 25)
  --queue <url>         serve runs queued on PostgreSQL (postgres://…[?schema=<name>]) instead of running the
                        agent here: cubepi worker runs them; no --db, --provider, --model or --delay then
  --agent <name>        with --queue, the agent name runs are queued for (default "default")
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

/**
 * The page attaches files (base64 in the JSON body): a request may carry 10 MiB of files, a third larger as base64,
 * plus the prompt.
 */
const FILE_LIMITS = { maxFileBytes: 10 * 1_048_576, maxBodyBytes: 16 * 1_048_576 } as const;

/** `cubepi serve`: resolves with the exit code once the server stopped (SIGINT: 130, SIGTERM: 0). */
export const serveCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs(
    'serve',
    args,
    {
      ...SERVING_OPTIONS,
      'cors-origin': { type: 'string', multiple: true },
      queue: { type: 'string' },
      agent: { type: 'string' },
      debug: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    false,
  );
  if (values.help) {
    context.stdout.write(`${HELP}\n`);
    return EXIT.ok;
  }
  const delayMs = parseDelay(values.delay) ?? 25;
  const serving = resolveServingFlags('serve', values, context.env);
  const token = serving.token;
  const cors = { origins: values['cors-origin'] ?? [] };
  let server: HttpAgentServer;
  let served: string;
  let closeStore: () => Promise<void>;
  let notice: string | undefined;
  if (values.queue !== undefined) {
    for (const option of ['db', 'provider', 'model', 'delay'] as const) {
      if (values[option] !== undefined) {
        throw usageError(`serve: --${option} configures the agent, which runs in cubepi worker with --queue`);
      }
    }
    const agent = values.agent ?? 'default';
    if (agent === '') throw usageError('serve: --agent must not be empty');
    const opened = await openQueue('serve', values.queue, context.cwd);
    server = createQueueServer({
      queue: opened.queue,
      agent,
      checkpointer: opened.store.checkpointer,
      authToken: token,
      cors,
      basePath: '/api',
      ...FILE_LIMITS,
    });
    served = `runs of "${agent}" queued on ${opened.description}, run by cubepi worker`;
    closeStore = () => opened.close();
  } else {
    if (values.agent !== undefined) throw usageError('serve: --agent names the queued agent: use it with --queue');
    const choice = await chooseModel({ provider: values.provider, model: values.model, delayMs }, context.env);
    const store = await openCheckpointer(storeSpec(values.db, context.env), context.cwd);
    const checkpointer = store.checkpointer;
    server = createAgentServer({
      agent: (threadId) => serveAgent(choice, checkpointer, threadId, delayMs, context.cwd),
      checkpointer,
      authToken: token,
      cors,
      basePath: '/api',
      ...FILE_LIMITS,
    });
    served = `model: ${choice.demo ? 'the offline demo' : `${choice.providerName} ${choice.model}`}; threads: ${store.description}`;
    closeStore = async () => {
      await checkpointer.close?.();
    };
    notice = choice.notice;
  }
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
  const origin = await listen(http, values.host, serving.port);
  if (notice !== undefined) context.stderr.write(`${notice}\n`);
  if (token === undefined) context.stderr.write(noAuthWarning('serve'));
  context.stdout.write(`cubepi serve: ${origin}/${tokenFragment(serving)} (${served})\n`);
  return untilSignal(async () => {
    server.close();
    http.closeAllConnections();
    await new Promise<void>((closed) => http.close(() => closed()));
    await closeStore();
  });
};

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
