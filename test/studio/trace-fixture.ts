// A real trace file for the studio's tests: FauxProvider agents traced with traceAgent through the OpenTelemetry SDK
// into JsonlSpanExporter. Two runs on thread `t1`: the first retried once, a tool call, a hook that fails (skipped),
// with usage and cost; the second falls back to a backup model, then holds a tool call for approval (suspended).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { Agent, defineTool, fallback, retry, ToolGuard, type AgentEvent, type Middleware } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { traceAgent } from 'cubepi/tracing';
import { JsonlSpanExporter } from 'cubepi/tracing/jsonl';

export const echo = defineTool({
  name: 'echo',
  description: 'Echoes',
  parameters: z.object({ text: z.string() }),
  execute: (_id, { text }) => text,
});

const usage = (input: number, output: number, cacheRead: number, reasoning: number, cost: number) => ({
  input,
  output,
  cacheRead,
  cacheWrite: 0,
  reasoning,
  totalTokens: input + output + cacheRead,
  cost: { input: cost / 2, output: cost / 2, cacheRead: 0, cacheWrite: 0, total: cost },
});

const transient = () =>
  fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited', errorMessage: 'rate_limited!' });

/** A hook that fails every time, skipped (`onError: 'skip'`): a `hook_error` span event. */
const analytics: Middleware = {
  name: 'Analytics',
  version: '0.9.0',
  onError: 'skip',
  transformSystemPrompt: () => {
    throw new Error('analytics down');
  },
};

export interface TraceFixture {
  readonly file: string;
  readonly first: string;
  readonly second: string;
  /** Every event of both runs, in order (for comparing live spans with the recorded ones). */
  readonly events: readonly AgentEvent[];
}

/** Writes the two runs into a fresh `traces.jsonl`; resolves once every span is in the file. */
export async function writeFixtureTrace(): Promise<TraceFixture> {
  const file = join(mkdtempSync(join(tmpdir(), 'cubepi-studio-traces-')), 'traces.jsonl');
  const exporter = new JsonlSpanExporter(file);
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('cubepi');
  const events: AgentEvent[] = [];

  const one = new Agent({
    provider: new FauxProvider({
      responses: [
        transient(),
        fauxMessage(
          [fauxToolCall('echo', { text: 'a' }, { id: 'c1' }), fauxToolCall('echo', { text: 'b' }, { id: 'c2' })],
          {
            usage: usage(120, 30, 40, 10, 0.0021),
          },
        ),
        fauxMessage('done', { usage: usage(200, 12, 0, 0, 0.0013) }),
      ],
    }),
    model: 'faux',
    tools: [echo],
    middleware: [retry({ maxAttempts: 3, backoff: { initialMs: 1, jitter: 0 } }), analytics],
  });
  one.events$.subscribe((event) => events.push(event));
  traceAgent(one, { tracer, threadId: 't1' });
  await one.prompt('go');

  const backup = new FauxProvider({
    id: 'backup',
    responses: [fauxMessage([fauxToolCall('echo', { text: 'x' }, { id: 'c3' })], { usage: usage(50, 5, 0, 0, 0) })],
  });
  const two = new Agent({
    provider: new FauxProvider({ responses: [transient()] }),
    model: 'faux',
    tools: [echo],
    middleware: [
      fallback([{ provider: backup, model: { id: 'small', provider: 'backup' } }]),
      new ToolGuard({ policy: () => ({ ask: 'sure?' }) }),
    ],
  });
  two.events$.subscribe((event) => events.push(event));
  traceAgent(two, { tracer, threadId: 't1' });
  await two.prompt('again');

  await provider.forceFlush();
  await exporter.forceFlush();
  const runIds = events.filter((e) => e.type === 'agent_start').map((e) => e.runId);
  return { file, first: runIds[0]!, second: runIds[1]!, events };
}
