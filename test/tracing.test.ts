// cubepi/tracing through the real OpenTelemetry SDK: spans into an InMemorySpanExporter, metrics through a
// MetricReader, every run driven by FauxProvider through the public API.
import { readFileSync } from 'node:fs';
import { context, metrics, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, MetricReader, type HistogramMetricData } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  agentTool,
  childRunOptions,
  Compaction,
  COMPACTION_KEY,
  DEFAULT_COMPACTION_INSTRUCTIONS,
  defineTool,
  fallback,
  retry,
  runAgentLoop,
  textOf,
  ToolGuard,
  userMessage,
  type AgentEvent,
  type AnyAgentTool,
  type Message,
  type Middleware,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxCallContext } from 'cubepi/testing';
import { toolCallContext, traceAgent, traceEvents, withToolCallContext } from 'cubepi/tracing';
import { CUBEPI_VERSION } from '../src/tracing/version.js';
import { collect, deferred, tick, waitingTool } from './helpers.js';

class TestReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** A tracer and a meter of the real SDK, recording into memory. */
function otel(processor?: (exporter: InMemorySpanExporter) => SpanProcessor) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [processor?.(exporter) ?? new SimpleSpanProcessor(exporter)],
  });
  const reader = new TestReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test');
  return {
    tracer: provider.getTracer('test'),
    meter,
    spans: () => exporter.getFinishedSpans(),
    /** The histograms recorded so far, by name: each data point's attributes, count and sum. */
    histograms: async () => {
      const { resourceMetrics } = await reader.collect();
      const out: Record<string, { attributes: Attributes; count: number; sum: number }[]> = {};
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics as HistogramMetricData[]) {
          out[metric.descriptor.name] = metric.dataPoints.map((p) => ({
            attributes: p.attributes,
            count: p.value.count,
            sum: p.value.sum ?? 0,
          }));
        }
      }
      return out;
    },
  };
}

/** The span tree as indented names, children in start order. */
function tree(spans: readonly ReadableSpan[]): string[] {
  const byParent = new Map<string | undefined, ReadableSpan[]>();
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId;
    const key = parent !== undefined && ids.has(parent) ? parent : undefined;
    byParent.set(key, [...(byParent.get(key) ?? []), span]);
  }
  const out: string[] = [];
  const walk = (parent: string | undefined, depth: number): void => {
    const children = [...(byParent.get(parent) ?? [])].sort((a, b) => hrMs(a.startTime) - hrMs(b.startTime));
    for (const child of children) {
      out.push(`${'  '.repeat(depth)}${child.name}`);
      walk(child.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return out;
}

const hrMs = ([s, ns]: readonly [number, number]) => s * 1e3 + ns / 1e6;

function named(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

function one(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = named(spans, name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
}

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text',
  parameters: z.object({ text: z.string() }),
  execute: (_id, { text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
});

const fast = { backoff: { initialMs: 1, jitter: 0 } } as const;
const transient = (kind: 'rate_limited' | 'unavailable') =>
  fauxMessage([], { stopReason: 'error', errorKind: kind, errorMessage: `${kind}!` });
const usage = (input: number, output: number, cacheRead = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite: 0,
  reasoning: 0,
  totalTokens: input + output + cacheRead,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

afterEach(() => {
  context.disable(); // a test that registered a context manager leaves none behind
});

describe('traceAgent: the span tree and its attributes', () => {
  it('a tool run: invoke_agent → turn → chat and execute_tool, with the GenAI attributes and metrics', async () => {
    const { tracer, meter, spans, histograms } = otel();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('echo', { text: 'hi' }, { id: 'call_1' })], {
            usage: usage(100, 20, 30),
            responseId: 'resp_1',
          }),
          fauxMessage('Done.', { usage: usage(150, 5) }),
        ],
      }),
      model: 'faux',
      tools: [echo],
    });
    const detach = traceAgent(agent, { tracer, meter, agentName: 'helper', threadId: 'thread-7' });
    await agent.prompt('Say hi');
    detach();

    const all = spans();
    expect(tree(all)).toEqual([
      'invoke_agent helper',
      '  turn 0',
      '    chat faux',
      '    execute_tool echo',
      '  turn 1',
      '    chat faux',
    ]);
    expect(new Set(all.map((s) => s.spanContext().traceId)).size).toBe(1);

    const run = one(all, 'invoke_agent helper');
    const runId = run.attributes['cubepi.run_id'];
    expect(runId).toMatch(/^run_/);
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'helper',
      'gen_ai.conversation.id': 'thread-7',
      'cubepi.thread_id': 'thread-7',
      'gen_ai.provider.name': 'faux',
      'gen_ai.request.model': 'faux',
      'gen_ai.response.model': 'faux',
      'cubepi.run.outcome': 'completed',
      'gen_ai.usage.input_tokens': 280, // 100 + 30 cached + 150
      'gen_ai.usage.output_tokens': 25,
      'gen_ai.usage.cache_read.input_tokens': 30,
    });
    expect(run.attributes['cubepi.prompt.hash']).toMatch(/^[0-9a-f]{16}$/);
    expect(run.status.code).toBe(SpanStatusCode.UNSET);

    const [first, second] = named(all, 'chat faux').sort((a, b) => hrMs(a.startTime) - hrMs(b.startTime));
    expect(first!.kind).toBe(2); // SpanKind.CLIENT
    expect(first!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'faux',
      'gen_ai.request.model': 'faux',
      'gen_ai.response.model': 'faux',
      'gen_ai.response.id': 'resp_1',
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': 130,
      'gen_ai.usage.output_tokens': 20,
      'gen_ai.usage.cache_read.input_tokens': 30,
      'cubepi.run_id': runId,
      'cubepi.turn_index': 0,
      'cubepi.attempt': 1,
      'cubepi.attempt_id': `${String(runId)}.0.1`,
      'cubepi.invocation_id': `${String(runId)}.0`,
      'cubepi.stop_reason': 'toolUse',
    });
    expect(first!.attributes['cubepi.time_to_first_chunk_ms']).toBeGreaterThanOrEqual(0);
    expect(first!.attributes['cubepi.prompt.hash']).toBe(run.attributes['cubepi.prompt.hash']);
    expect(second!.attributes).toMatchObject({ 'gen_ai.response.finish_reasons': ['stop'], 'cubepi.turn_index': 1 });
    expect(second!.attributes['cubepi.prompt.hash']).toBeUndefined(); // its new input is a tool result, not a prompt

    const tool = one(all, 'execute_tool echo');
    expect(tool.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.call.id': 'call_1',
      'gen_ai.tool.type': 'function',
      'cubepi.run_id': runId,
      'cubepi.tool.outcome': 'ok',
    });
    expect(one(all, 'turn 0').attributes).toMatchObject({ 'cubepi.turn_index': 0, 'cubepi.stop_reason': 'toolUse' });

    const metrics = await histograms();
    const duration = metrics['gen_ai.client.operation.duration']!;
    expect(duration).toHaveLength(1);
    expect(duration[0]).toMatchObject({
      count: 2,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'faux',
        'gen_ai.request.model': 'faux',
        'gen_ai.response.model': 'faux',
      },
    });
    const tokens = metrics['gen_ai.client.token.usage']!;
    expect(tokens.map((p) => [p.attributes['gen_ai.token.type'], p.count, p.sum])).toEqual([
      ['input', 2, 280],
      ['output', 2, 25],
    ]);
    expect(metrics['gen_ai.client.operation.time_to_first_chunk']![0]!.count).toBe(2);
  });

  it('a retried call: sibling attempt spans, the failed ones ERROR with their error kind', async () => {
    const { tracer, meter, spans, histograms } = otel();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [transient('rate_limited'), transient('unavailable'), fauxMessage('third time')],
      }),
      model: 'faux',
      middleware: [retry({ maxAttempts: 3, ...fast })],
    });
    traceAgent(agent, { tracer, meter });
    await agent.prompt('go');

    const all = spans();
    expect(tree(all)).toEqual(['invoke_agent', '  turn 0', '    chat faux', '    chat faux', '    chat faux']);
    const attempts = named(all, 'chat faux').sort(
      (a, b) => Number(a.attributes['cubepi.attempt']) - Number(b.attributes['cubepi.attempt']),
    );
    expect(attempts.map((s) => [s.attributes['cubepi.attempt'], s.attributes['error.type'], s.status])).toEqual([
      [1, 'rate_limited', { code: SpanStatusCode.ERROR, message: 'rate_limited!' }],
      [2, 'unavailable', { code: SpanStatusCode.ERROR, message: 'unavailable!' }],
      [3, undefined, { code: SpanStatusCode.UNSET }],
    ]);
    expect(new Set(attempts.map((s) => s.attributes['cubepi.invocation_id'])).size).toBe(1);
    expect(new Set(attempts.map((s) => s.attributes['cubepi.attempt_id'])).size).toBe(3);
    expect(attempts[2]!.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    expect(one(all, 'invoke_agent').attributes['cubepi.run.outcome']).toBe('completed');

    const duration = (await histograms())['gen_ai.client.operation.duration']!;
    expect(Object.fromEntries(duration.map((p) => [String(p.attributes['error.type']), p.count]))).toEqual({
      rate_limited: 1,
      unavailable: 1,
      undefined: 1,
    });
  });

  it('a fallback: the failed attempt and the attempt on the next model, siblings, the move recorded', async () => {
    const { tracer, spans } = otel();
    const backup = new FauxProvider({ id: 'backup', responses: [fauxMessage('from the backup')] });
    const agent = new Agent({
      provider: new FauxProvider({ responses: [transient('rate_limited')] }),
      model: 'faux',
      middleware: [fallback([{ provider: backup, model: { id: 'small', provider: 'backup' } }])],
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');

    const all = spans();
    expect(tree(all)).toEqual(['invoke_agent', '  turn 0', '    chat faux', '    chat small']);
    expect(one(all, 'chat faux').attributes).toMatchObject({ 'error.type': 'rate_limited', 'cubepi.attempt': 1 });
    expect(one(all, 'chat faux').status.code).toBe(SpanStatusCode.ERROR);
    expect(one(all, 'chat small').attributes).toMatchObject({
      'gen_ai.provider.name': 'backup',
      'gen_ai.request.model': 'small',
      'gen_ai.response.model': 'small',
      'cubepi.attempt': 2,
      'cubepi.fallback_from': 'faux/faux',
    });
    expect(one(all, 'chat small').status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a denied call: its execute_tool span has outcome denied, not an error status', async () => {
    const { tracer, spans } = otel();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { text: 'x' }, { id: 'd1' })]), fauxMessage('ok')],
      }),
      model: 'faux',
      tools: [echo],
      middleware: [new ToolGuard({ policy: () => ({ deny: 'not today' }) })],
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');

    const tool = one(spans(), 'execute_tool echo');
    expect(tool.attributes['cubepi.tool.outcome']).toBe('denied');
    expect(tool.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a tool that fails: outcome error, status ERROR', async () => {
    const { tracer, spans } = otel();
    const broken = defineTool({
      name: 'broken',
      description: 'Throws',
      parameters: z.object({}),
      execute: () => {
        throw new Error('disk on fire');
      },
    });
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('broken', {})]), fauxMessage('sorry')] }),
      model: 'faux',
      tools: [broken],
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');
    const tool = one(spans(), 'execute_tool broken');
    expect(tool.attributes).toMatchObject({ 'cubepi.tool.outcome': 'error', 'error.type': 'tool_error' });
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('a failed provider call: chat, turn and run spans ERROR with the error kind', async () => {
    const { tracer, spans } = otel();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([], { stopReason: 'error', errorKind: 'auth', errorMessage: 'bad key' })],
      }),
      model: 'faux',
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');

    const all = spans();
    expect(tree(all)).toEqual(['invoke_agent', '  turn 0', '    chat faux']);
    for (const span of all) {
      expect(span.status, span.name).toEqual({ code: SpanStatusCode.ERROR, message: 'bad key' });
      expect(span.attributes['error.type'], span.name).toBe('auth');
    }
    expect(one(all, 'chat faux').attributes).toMatchObject({
      'cubepi.stop_reason': 'error',
      'gen_ai.response.finish_reasons': ['error'],
    });
    expect(one(all, 'invoke_agent').attributes['cubepi.run.outcome']).toBe('failed');
  });

  it('a cancelled run: every span ends, the run cancelled, the running tool aborted', async () => {
    const { tracer, spans } = otel();
    const wait = waitingTool('wait');
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('wait', {})]), fauxMessage('never')] }),
      model: 'faux',
      tools: [wait.tool],
    });
    traceAgent(agent, { tracer });
    const subscription = agent.prompt$('go').subscribe();
    await wait.started;
    subscription.unsubscribe();
    await agent.waitForIdle();

    const all = spans();
    expect(tree(all)).toEqual(['invoke_agent', '  turn 0', '    chat faux', '    execute_tool wait', '  turn 1']);
    expect(one(all, 'invoke_agent').attributes['cubepi.run.outcome']).toBe('cancelled');
    expect(one(all, 'execute_tool wait').attributes['cubepi.tool.outcome']).toBe('aborted');
    expect(one(all, 'turn 1').attributes['cubepi.stop_reason']).toBe('aborted');
    expect(all.filter((s) => s.status.code === SpanStatusCode.ERROR)).toEqual([]);
  });

  // The loop emits tool_execution_start for a held call (before approval_requested) and no turn_end before the
  // suspended agent_end, unlike what docs/events.md says; the tracer ends both spans at agent_end either way.
  it('a run held for approval: the held call ends pending, the run suspended', async () => {
    const { tracer, spans } = otel();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { text: 'x' })]), fauxMessage('ok')],
      }),
      model: 'faux',
      tools: [echo],
      middleware: [new ToolGuard({ policy: () => ({ ask: 'sure?' }) })],
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');
    const all = spans();
    expect(tree(all)).toEqual(['invoke_agent', '  turn 0', '    chat faux', '    execute_tool echo']);
    const tool = one(all, 'execute_tool echo');
    expect(tool.attributes['cubepi.tool.outcome']).toBe('pending');
    expect(tool.attributes['cubepi.approval.request_id']).toBe(agent.pending[0]!.requestId);
    expect(tool.events.map((e) => e.name)).toEqual(['approval_requested']);
    expect(one(all, 'invoke_agent').attributes['cubepi.run.outcome']).toBe('suspended');
  });

  it("a retried hook's failed attempts are hook_error span events with the attempt and invocation id", async () => {
    const { tracer, spans } = otel();
    let calls = 0;
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
      model: 'faux',
      middleware: [
        {
          name: 'flaky',
          retry: { attempts: 2 },
          transformSystemPrompt: (prompt: string) => {
            if (++calls === 1) throw Object.assign(new Error('503'), { retryable: true });
            return prompt;
          },
        },
      ],
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');
    const [event, ...rest] = one(spans(), 'turn 0').events.filter((e) => e.name === 'hook_error');
    expect(rest).toEqual([]);
    expect(event!.attributes).toMatchObject({
      'cubepi.middleware': 'flaky',
      'cubepi.hook': 'transformSystemPrompt',
      'cubepi.hook.attempt': 1,
      'cubepi.hook.invocation_id': expect.stringMatching(/\.h1$/),
    });
  });
});

describe('traceEvents: a bare runAgentLoop', () => {
  const loop = (responses: ReturnType<typeof fauxMessage>[], tools: readonly AnyAgentTool[] = [echo]) =>
    runAgentLoop({
      provider: new FauxProvider({ responses }),
      model: { id: 'faux', provider: 'faux' },
      tools,
      prompts: [userMessage('go')],
    });

  it('passes every event through unchanged and records the same tree', async () => {
    const { tracer, spans } = otel();
    const responses = () => [fauxMessage([fauxToolCall('echo', { text: 'a' }, { id: 'e1' })]), fauxMessage('done')];
    const traced = await collect(loop(responses()).pipe(traceEvents({ tracer })));
    const plain = await collect(loop(responses()));
    expect(traced.map((e) => e.type)).toEqual(plain.map((e) => e.type));
    expect(tree(spans())).toEqual([
      'invoke_agent',
      '  turn 0',
      '    chat faux',
      '    execute_tool echo',
      '  turn 1',
      '    chat faux',
    ]);
  });

  it('unsubscribing mid-run (cancelling it) ends the open spans: the run cancelled, the tool interrupted', async () => {
    const { tracer, spans } = otel();
    const started = deferred();
    const wait = defineTool({
      name: 'wait',
      description: 'Waits',
      parameters: z.object({}),
      execute: () => (started.resolve(), new Promise<string>(() => {})),
    });
    const subscription = loop([fauxMessage([fauxToolCall('wait', {})])], [wait])
      .pipe(traceEvents({ tracer }))
      .subscribe();
    await started.promise;
    expect(spans()).toHaveLength(1); // the chat span ended; the run, the turn and the tool are open
    subscription.unsubscribe();
    const all = spans();
    expect(tree(all)).toEqual(['invoke_agent', '  turn 0', '    chat faux', '    execute_tool wait']);
    expect(one(all, 'invoke_agent').attributes['cubepi.run.outcome']).toBe('cancelled');
    expect(one(all, 'execute_tool wait').attributes['cubepi.tool.outcome']).toBe('interrupted');
  });
});

describe('a nested agent: a run started inside a tool is a child of its execute_tool span', () => {
  function nested(tracer: Tracer, start: (toolCallId: string, question: string) => Promise<Message[]>) {
    const ask = defineTool({
      name: 'ask_researcher',
      description: 'Asks another agent',
      parameters: z.object({ question: z.string() }),
      execute: async (toolCallId, { question }) => textOf((await start(toolCallId, question)).at(-1)!),
    });
    const outer = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('ask_researcher', { question: 'why?' })]), fauxMessage('Because.')],
      }),
      model: 'faux',
      tools: [ask],
    });
    traceAgent(outer, { tracer, agentName: 'outer' });
    return outer;
  }

  const expected = [
    'invoke_agent outer',
    '  turn 0',
    '    chat faux',
    '    execute_tool ask_researcher',
    '      invoke_agent researcher',
    '        turn 0',
    '          chat faux',
    '  turn 1',
    '    chat faux',
  ];

  it('through the active context (withToolCallContext, with an async context manager)', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const { tracer, spans } = otel();
    const researcher = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Research says so.')] }),
      model: 'faux',
    });
    traceAgent(researcher, { tracer, agentName: 'researcher' });
    const outer = nested(tracer, (id, question) => withToolCallContext(id, () => researcher.prompt(question)));
    await outer.prompt('go');
    const all = spans();
    expect(tree(all)).toEqual(expected);
    expect(new Set(all.map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it('through the parent option (toolCallContext), with no context manager', async () => {
    const { tracer, spans } = otel();
    const outer = nested(tracer, (id, question) => {
      const researcher = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('Research says so.')] }),
        model: 'faux',
      });
      const parent = toolCallContext(id);
      expect(parent).toBeDefined();
      traceAgent(researcher, { tracer, agentName: 'researcher', parent });
      return researcher.prompt(question);
    });
    await outer.prompt('go');
    expect(tree(spans())).toEqual(expected);
    expect(toolCallContext('anything')).toBeUndefined(); // ended calls are forgotten
  });

  it('a sub-agent of agentTool (its agent_start names the call) nests by itself: no context manager, no parent option', async () => {
    const { tracer, spans } = otel();
    const ask = agentTool({
      name: 'ask_researcher',
      description: 'Asks another agent',
      createAgent: () => {
        const researcher = new Agent({
          provider: new FauxProvider({ responses: [fauxMessage('Research says so.')] }),
          model: 'faux',
        });
        traceAgent(researcher, { tracer, agentName: 'researcher' });
        return researcher;
      },
    });
    const outer = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('ask_researcher', { prompt: 'why?' })]), fauxMessage('Because.')],
      }),
      model: 'faux',
      tools: [ask],
    });
    traceAgent(outer, { tracer, agentName: 'outer' });
    await outer.prompt('go');
    const all = spans();
    expect(tree(all)).toEqual(expected);
    expect(new Set(all.map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it("a run a hook started (childRunOptions) is a child of the parent run's invoke_agent span", async () => {
    const { tracer, spans } = otel();
    const reviewer = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Looks fine.')] }),
      model: 'faux',
    });
    traceAgent(reviewer, { tracer, agentName: 'reviewer' });
    const review: Middleware = {
      name: 'review',
      afterModelResponse: async (_response, ctx) => {
        await reviewer.prompt('review it', childRunOptions(ctx, { hook: 'afterModelResponse', middleware: 'review' }));
        return undefined;
      },
    };
    const outer = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Done.')] }),
      model: 'faux',
      middleware: [review],
    });
    traceAgent(outer, { tracer, agentName: 'outer' });
    await outer.prompt('go');
    const all = spans();
    const child = one(all, 'invoke_agent reviewer');
    expect(child.parentSpanContext?.spanId).toBe(one(all, 'invoke_agent outer').spanContext().spanId);
    expect(new Set(all.map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it('without either, the nested run is a trace of its own', async () => {
    const { tracer, spans } = otel();
    const researcher = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Research says so.')] }),
      model: 'faux',
    });
    traceAgent(researcher, { tracer, agentName: 'researcher' });
    await nested(tracer, (_id, question) => researcher.prompt(question)).prompt('go');
    const all = spans();
    expect(new Set(all.map((s) => s.spanContext().traceId)).size).toBe(2);
  });
});

describe('privacy', () => {
  const SECRET_PROMPT = 'prompt-canary-4711';
  const SECRET_ARG = 'argument-canary-0815';
  const SECRET_RESULT = 'echo: argument-canary-0815';
  const SECRET_ANSWER = 'answer-canary-1234';

  async function contentRun(options: Parameters<typeof traceAgent>[1] = {}) {
    const { tracer, spans } = otel();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { text: SECRET_ARG })]), fauxMessage(SECRET_ANSWER)],
      }),
      model: 'faux',
      tools: [echo],
      middleware: [new ToolGuard({ policy: () => 'allow' })],
    });
    traceAgent(agent, { tracer, ...options });
    await agent.prompt(SECRET_PROMPT);
    return spans();
  }

  /** Every attribute of every span and span event, as `name key=value` strings. */
  function everything(spans: readonly ReadableSpan[]): string[] {
    const out: string[] = [];
    for (const span of spans) {
      for (const [key, value] of Object.entries(span.attributes)) out.push(`${span.name} ${key}=${String(value)}`);
      for (const event of span.events) {
        for (const [key, value] of Object.entries(event.attributes ?? {}))
          out.push(`${event.name} ${key}=${String(value)}`);
      }
      if (span.status.message !== undefined) out.push(`${span.name} status=${span.status.message}`);
    }
    return out;
  }

  it('records no prompt, completion, argument or result by default; the prompt is identified by a hash', async () => {
    const recorded = everything(await contentRun());
    expect(recorded.length).toBeGreaterThan(30);
    for (const canary of [SECRET_PROMPT, SECRET_ARG, SECRET_RESULT, SECRET_ANSWER]) {
      expect(recorded.filter((line) => line.includes(canary))).toEqual([]);
    }
    expect(
      recorded.filter((line) => /gen_ai\.(input|output)\.messages|gen_ai\.tool\.call\.(arguments|result)/.test(line)),
    ).toEqual([]);
    expect(recorded.filter((line) => line.startsWith('invoke_agent cubepi.prompt.hash='))).toHaveLength(1);
  });

  it('the same prompt gets the same hash; another prompt another', async () => {
    const hashOf = async (prompt: string) => {
      const { tracer, spans } = otel();
      const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('ok')] }), model: 'faux' });
      traceAgent(agent, { tracer });
      await agent.prompt(prompt);
      return one(spans(), 'invoke_agent').attributes['cubepi.prompt.hash'];
    };
    expect(await hashOf('hello')).toBe(await hashOf('hello'));
    expect(await hashOf('hello')).not.toBe(await hashOf('hello!'));
  });

  it('records content with recordContent, through redact', async () => {
    const keys: string[] = [];
    const all = await contentRun({
      recordContent: true,
      redact: (key, value) => {
        keys.push(key);
        if (key === 'gen_ai.tool.call.result') return '[redacted]';
        if (key === 'gen_ai.tool.call.arguments') return undefined; // not recorded at all
        return value;
      },
    });
    const chats = named(all, 'chat faux').sort((a, b) => hrMs(a.startTime) - hrMs(b.startTime));
    expect(JSON.parse(String(chats[0]!.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: SECRET_PROMPT }] },
    ]);
    expect(JSON.parse(String(chats[1]!.attributes['gen_ai.input.messages']))).toEqual([
      {
        role: 'tool',
        parts: [{ type: 'tool_call_response', id: expect.any(String), response: [SECRET_RESULT] }],
      },
    ]);
    expect(JSON.parse(String(chats[1]!.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: SECRET_ANSWER }], finish_reason: 'stop' },
    ]);
    expect(JSON.parse(String(chats[0]!.attributes['gen_ai.output.messages']))).toEqual([
      {
        role: 'assistant',
        parts: [{ type: 'tool_call', id: expect.any(String), name: 'echo', arguments: { text: SECRET_ARG } }],
        finish_reason: 'tool_call',
      },
    ]);
    const tool = one(all, 'execute_tool echo');
    expect(tool.attributes['gen_ai.tool.call.result']).toBe('[redacted]');
    expect(tool.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(new Set(keys)).toEqual(
      new Set([
        'gen_ai.input.messages',
        'gen_ai.output.messages',
        'gen_ai.tool.call.arguments',
        'gen_ai.tool.call.result',
      ]),
    );
  });

  it('a redactor that throws records nothing for that attribute, and the run goes on', async () => {
    const all = await contentRun({
      recordContent: true,
      redact: () => {
        throw new Error('redactor bug');
      },
    });
    expect(everything(all).filter((line) => /canary/.test(line))).toEqual([]);
    expect(one(all, 'invoke_agent').attributes['cubepi.run.outcome']).toBe('completed');
  });
});

describe('tracing never affects a run', () => {
  const script = () => [fauxMessage([fauxToolCall('echo', { text: 'x' }, { id: 'c1' })]), fauxMessage('done')];
  const shape = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);

  async function run(
    trace?: (agent: Agent) => void,
  ): Promise<{ messages: Message[]; events: AgentEvent[]; ms: number }> {
    const agent = new Agent({ provider: new FauxProvider({ responses: script() }), model: 'faux', tools: [echo] });
    trace?.(agent);
    const events: AgentEvent[] = [];
    agent.subscribe((e) => void events.push(e)); // a listener after the tracer sees every event
    const start = performance.now();
    const messages = await agent.prompt('go');
    return { messages, events, ms: performance.now() - start };
  }

  it('with an exporter that throws', async () => {
    const throwing: SpanExporter = {
      export: () => {
        throw new Error('exporter down');
      },
      shutdown: () => Promise.resolve(),
    };
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(throwing)] });
    const plain = await run();
    const traced = await run((agent) => traceAgent(agent, { tracer: provider.getTracer('t') }));
    expect(shape(traced.messages)).toEqual(shape(plain.messages));
    expect(traced.events.map((e) => e.type)).toEqual(plain.events.map((e) => e.type));
  });

  it('with an exporter that never answers (simple and batch processors)', async () => {
    let exports = 0;
    const hanging: SpanExporter = { export: () => void exports++, shutdown: () => new Promise<void>(() => {}) };
    for (const processor of [
      new SimpleSpanProcessor(hanging),
      new BatchSpanProcessor(hanging, { maxExportBatchSize: 1, scheduledDelayMillis: 1 }),
    ]) {
      const provider = new BasicTracerProvider({ spanProcessors: [processor] });
      const plain = await run();
      const traced = await run((agent) => traceAgent(agent, { tracer: provider.getTracer('t') }));
      expect(shape(traced.messages)).toEqual(shape(plain.messages));
      expect(traced.events.map((e) => e.type)).toEqual(plain.events.map((e) => e.type));
      expect(traced.ms).toBeLessThan(2_000);
    }
    await tick(10);
    expect(exports).toBeGreaterThan(0); // the exporter was called, and never answered
  });

  it('with a span processor and a tracer that throw', async () => {
    const processor: SpanProcessor = {
      onStart: () => {
        throw new Error('onStart');
      },
      onEnd: () => {
        throw new Error('onEnd');
      },
      forceFlush: () => Promise.resolve(),
      shutdown: () => Promise.resolve(),
    };
    const sdkTracer = new BasicTracerProvider({ spanProcessors: [processor] }).getTracer('t');
    const brokenTracer = {
      startSpan: () => {
        throw new Error('tracer down');
      },
      startActiveSpan: () => {
        throw new Error('tracer down');
      },
    } as unknown as Tracer;
    const plain = await run();
    for (const tracer of [sdkTracer, brokenTracer]) {
      const traced = await run((agent) => traceAgent(agent, { tracer }));
      expect(shape(traced.messages)).toEqual(shape(plain.messages));
      expect(traced.events.map((e) => e.type)).toEqual(plain.events.map((e) => e.type));
    }
  });
});

describe('setup', () => {
  it('uses the global tracer when none is given: no-op without an SDK, the run unaffected', async () => {
    const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('ok')] }), model: 'faux' });
    const detach = traceAgent(agent);
    expect(shapeOf(await agent.prompt('go'))).toEqual(['user:go', 'assistant:ok']);
    detach();
  });

  it('uses the global tracer and meter an SDK registers later (after traceAgent was called)', async () => {
    const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('ok')] }), model: 'faux' });
    const detach = traceAgent(agent); // before any SDK is registered
    const exporter = new InMemorySpanExporter();
    const reader = new TestReader();
    try {
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
      metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
      await agent.prompt('go');
      expect(exporter.getFinishedSpans().map((s) => [s.name, s.instrumentationScope])).toEqual([
        ['chat faux', { name: 'cubepi', version: CUBEPI_VERSION }],
        ['turn 0', { name: 'cubepi', version: CUBEPI_VERSION }],
        ['invoke_agent', { name: 'cubepi', version: CUBEPI_VERSION }],
      ]);
      const { resourceMetrics } = await reader.collect();
      expect(resourceMetrics.scopeMetrics.map((s) => [s.scope.name, s.metrics.map((m) => m.descriptor.name)])).toEqual([
        [
          'cubepi',
          [
            'gen_ai.client.operation.duration',
            'gen_ai.client.token.usage',
            'gen_ai.client.operation.time_to_first_chunk',
          ],
        ],
      ]);
    } finally {
      detach();
      trace.disable();
      metrics.disable();
    }
  });

  it('detaching mid-run ends the open spans and records nothing more', async () => {
    const { tracer, spans } = otel();
    const gate = deferred();
    const slow = defineTool({
      name: 'slow',
      description: 'Waits for the test',
      parameters: z.object({}),
      execute: async () => (await gate.promise, 'done'),
    });
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('slow', {})]), fauxMessage('ok')] }),
      model: 'faux',
      tools: [slow],
    });
    const detach = traceAgent(agent, { tracer });
    const done = agent.prompt('go');
    await tick(20);
    detach();
    const count = spans().length;
    expect(tree(spans())).toEqual(['invoke_agent', '  turn 0', '    chat faux', '    execute_tool slow']);
    expect(one(spans(), 'invoke_agent').attributes['cubepi.run.outcome']).toBeUndefined();
    gate.resolve();
    await done;
    expect(spans()).toHaveLength(count);
  });

  it('reports the package version as the tracer version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(CUBEPI_VERSION).toBe(pkg.version);
  });
});

describe('tracing a compaction', () => {
  it("records the summarising call in a compaction span, and the turn call as the turn's own chat span", async () => {
    const { tracer, spans } = otel();
    const long = 'lorem ipsum dolor sit amet '.repeat(15);
    const faux = new FauxProvider({
      responses: Array.from(
        { length: 30 },
        () => (_m: readonly Message[], _model: unknown, ctx: FauxCallContext) =>
          fauxMessage(ctx.systemPrompt === DEFAULT_COMPACTION_INSTRUCTIONS ? 'SUMMARY' : `answer ${long}`),
      ),
    });
    const agent = new Agent({
      provider: faux,
      model: { id: 'faux', provider: 'faux', contextWindow: 2_000 },
      middleware: [new Compaction({ triggerAt: 0.5, keepRecent: 2 })],
    });
    traceAgent(agent, { tracer });
    for (let i = 0; agent.state.extra[COMPACTION_KEY] === undefined && i < 20; i++) {
      await agent.prompt(`question ${i}: ${long}`);
    }
    const compaction = one(spans(), 'compaction');
    expect(compaction.attributes['cubepi.compaction.outcome']).toBe('stored');
    expect(compaction.attributes['cubepi.compaction.reason']).toBe('threshold');
    expect(compaction.events.map((e) => e.name)).toEqual(['model_attempt']);
    const last = tree(spans()).slice(-3);
    expect(last).toEqual(['  turn 0', '    compaction', '    chat faux']);
    // The turn's call is not taken for a retry of the summary: no chat span failed.
    expect(named(spans(), 'chat faux').every((s) => s.status.code !== SpanStatusCode.ERROR)).toBe(true);
  });
});

function shapeOf(messages: readonly Message[]): string[] {
  return messages.map((m) => `${m.role}:${textOf(m)}`);
}
