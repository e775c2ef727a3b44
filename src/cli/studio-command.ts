/**
 * `cubepi studio`: the studio (cubepi/studio) over the threads the other commands keep, a JSONL trace file, and an
 * agent server on `/api` like `cubepi serve`'s — same model choice, same token rules — whose runs are traced into
 * that file, so a run started from the studio shows in its timeline once it ended.
 * @module
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { attachWebSocket, createAgentServer } from '../server/index.js';
import { createStudio, studioNodeListener } from '../studio/index.js';
import type { Agent } from '../index.js';
import { parseDelay } from './agent-setup.js';
import { chooseModel } from './choose-model.js';
import { EXIT } from './cli-error.js';
import type { Command, CommandContext } from './command.js';
import { openCheckpointer, storeSpec } from './open-checkpointer.js';
import { parseCommandArgs } from './parse-options.js';
import { serveAgent } from './serve-agent.js';
import {
  listen,
  noAuthWarning,
  resolveServingFlags,
  SERVING_OPTIONS,
  tokenFragment,
  untilSignal,
} from './serve-shared.js';

const HELP = `Usage: cubepi studio [options]

A local web app to see and steer runs: threads (search, forks), a thread as a conversation with tool calls, thinking,
approvals, state patches, compactions and forks; a run's timeline, tokens and cost from a trace file; live runs
streamed, stopped and approved; retry or edit from any message, and two branches compared side by side.

Options:
  --port <n>            port (default 8787; 0 picks a free one)
  --host <addr>         address to bind (default 127.0.0.1)
  --db <path|url>       SQLite file (default .cubepi/threads.db), postgres://…, or memory (also CUBEPI_DB)
  --trace <file>        the JSONL trace file to read (default traces.jsonl when it exists); the runs the studio
                        starts are traced into it (needs @opentelemetry/api and @opentelemetry/sdk-trace-base)
  --provider <p>        anthropic | openai | openai-responses | faux (default: from the environment, else the demo)
  --model <id>          the model id (default: the provider's current one)
  --auth-token <token>  required by every request (also CUBEPI_AUTH_TOKEN); open the studio as
                        http://host:port/#token=<token>. Without it, a random token is made at start and the
                        studio's URL printed with it
  --no-auth             no token (loopback only)
  --delay <ms>          pause between streamed chunks of the offline demo model (default 25)
  -h, --help            show this help`;

/** Attaches a tracer writing to `file` to each agent, when the OpenTelemetry SDK is installed. */
async function jsonlTracing(
  file: string,
  context: CommandContext,
): Promise<{ trace: (agent: Agent, threadId: string) => void; close: () => Promise<void> } | undefined> {
  try {
    const [{ BasicTracerProvider, SimpleSpanProcessor }, { traceAgent }, { JsonlSpanExporter }] = await Promise.all([
      import('@opentelemetry/sdk-trace-base'),
      import('../tracing/index.js'),
      import('../tracing/jsonl.js'),
    ]);
    const exporter = new JsonlSpanExporter(file);
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer('cubepi');
    return {
      trace: (agent, threadId) => void traceAgent(agent, { tracer, threadId }),
      close: async () => {
        await provider.forceFlush();
        await provider.shutdown();
      },
    };
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    context.stderr.write(
      'cubepi studio: runs started here are not traced: install @opentelemetry/api and @opentelemetry/sdk-trace-base\n',
    );
    return undefined;
  }
}

/** `cubepi studio`: resolves with the exit code once the server stopped (SIGINT: 130, SIGTERM: 0). */
export const studioCommand: Command = async (args, context) => {
  const { values } = parseCommandArgs(
    'studio',
    args,
    {
      ...SERVING_OPTIONS,
      trace: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    false,
  );
  if (values.help) {
    context.stdout.write(`${HELP}\n`);
    return EXIT.ok;
  }
  const delayMs = parseDelay(values.delay) ?? 25;
  const serving = resolveServingFlags('studio', values, context.env);
  const defaultTrace = resolve(context.cwd, 'traces.jsonl');
  const traceFile =
    values.trace !== undefined
      ? resolve(context.cwd, values.trace)
      : existsSync(defaultTrace)
        ? defaultTrace
        : undefined;
  const choice = await chooseModel({ provider: values.provider, model: values.model, delayMs }, context.env);
  const store = await openCheckpointer(storeSpec(values.db, context.env), context.cwd);
  const checkpointer = store.checkpointer;
  const tracing = traceFile === undefined ? undefined : await jsonlTracing(traceFile, context);
  const server = createAgentServer({
    agent: (threadId) => {
      const agent = serveAgent(choice, checkpointer, threadId, delayMs, context.cwd);
      tracing?.trace(agent, threadId);
      return agent;
    },
    checkpointer,
    authToken: serving.token,
    basePath: '/api',
  });
  const studio = createStudio({ checkpointer, server, traceFile });
  const http = createServer(studioNodeListener(studio));
  await attachWebSocket(http, server).catch((error: unknown) => {
    if ((error as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
  });
  const origin = await listen(http, values.host, serving.port);
  if (choice.notice !== undefined) context.stderr.write(`${choice.notice}\n`);
  if (serving.token === undefined) context.stderr.write(noAuthWarning('studio'));
  const model = choice.demo ? 'the offline demo' : `${choice.providerName} ${choice.model}`;
  const traces = traceFile === undefined ? 'no trace file' : `traces: ${traceFile}`;
  context.stdout.write(
    `cubepi studio: ${origin}/${tokenFragment(serving)} (model: ${model}; threads: ${store.description}; ${traces})\n`,
  );
  return untilSignal(async () => {
    studio.close();
    server.close();
    http.closeAllConnections();
    await new Promise<void>((closed) => http.close(() => closed()));
    await tracing?.close();
    await checkpointer.close?.();
  });
};
