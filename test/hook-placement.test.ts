// Hook placement (hookPhase, hookOrder): what construction refuses, the phase a HookError names, and the chain an
// Agent tells at start (agent_start.middleware, the invoke_agent span's cubepi.middleware.chain, versions).
import { InMemorySpanExporter, BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import {
  Agent,
  composeMiddleware,
  ConfigurationError,
  HookError,
  runAgentLoop,
  userMessage,
  type AgentEvent,
  type AgentStartEvent,
  type Middleware,
} from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { traceAgent } from 'cubepi/tracing';
import { frameJson, parseFrame } from '../src/wire/frames.js';
import { collect } from './helpers.js';

const noop = () => undefined;

function refusal(middleware: readonly Middleware[]): string {
  try {
    composeMiddleware(middleware);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as Error).message;
  }
  throw new Error('composeMiddleware accepted it');
}

describe('hook placement: what construction refuses', () => {
  it('two middlewares declaring the same hook at the same phase and order conflict, both named', () => {
    expect(
      refusal([
        { name: 'ToolGuard', hookPhase: 'tool', hookOrder: 10, beforeToolCall: noop },
        { name: 'Audit', hookPhase: 'tool', hookOrder: 10, beforeToolCall: noop },
      ]),
    ).toBe(
      'middlewares "ToolGuard" and "Audit" both declare beforeToolCall at phase tool, order 10; give one a different hookOrder',
    );
  });

  it('the conflict is found across an undeclared neighbour in the same slot, and at the default phase', () => {
    expect(
      refusal([
        { name: 'A', hookOrder: 0, transformContext: (m) => m },
        { name: 'B', transformContext: (m) => m },
        { name: 'C', hookOrder: 0, transformContext: (m) => m },
      ]),
    ).toMatch(/"A" and "C" both declare transformContext at phase context, order 0/);
  });

  it('no conflict when only one declares the order, the phases differ, or the hooks differ', () => {
    expect(() =>
      composeMiddleware([
        { name: 'declared', hookPhase: 'tool', hookOrder: 0, beforeToolCall: noop, afterToolCall: noop },
        { name: 'undeclared', hookPhase: 'tool', beforeToolCall: noop },
        { name: 'otherPhase', hookPhase: 'final', hookOrder: 0, beforeToolCall: noop },
        { name: 'otherHook', hookPhase: 'tool', hookOrder: 0, onRunEnd: noop },
      ]),
    ).not.toThrow();
  });

  it('refuses an unknown phase, a non-finite or non-numeric order and an empty version, naming the middleware', () => {
    const bad = (fields: Record<string, unknown>) => refusal([{ name: 'M', onRunEnd: noop, ...fields }]);
    expect(bad({ hookPhase: 'tools' })).toBe(
      'middleware "M": unknown hookPhase "tools" (one of run, context, model, tool, state, final)',
    );
    expect(bad({ hookPhase: 'observe' })).toMatch(/unknown hookPhase "observe"/); // a wrapper phase is not a hook phase
    expect(bad({ hookOrder: Number.NaN })).toBe('middleware "M": hookOrder must be a finite number');
    expect(bad({ hookOrder: Infinity })).toBe('middleware "M": hookOrder must be a finite number');
    expect(bad({ hookOrder: '1' })).toBe('middleware "M": hookOrder must be a finite number');
    expect(bad({ version: '' })).toBe('middleware "M": version must be a non-empty string');
    expect(bad({ version: 2 })).toBe('middleware "M": version must be a non-empty string');
  });

  it('checks the placement of a middleware with no hooks too (a mistake is a mistake before it matters)', () => {
    expect(refusal([{ name: 'empty', hookPhase: 'later' as never }])).toMatch(/middleware "empty": unknown hookPhase/);
  });

  it('refuses duplicate names among hooks-only middlewares', () => {
    expect(
      refusal([
        { name: 'Audit', hookPhase: 'run', onRunStart: noop },
        { name: 'Audit', hookPhase: 'final', onRunEnd: noop },
      ]),
    ).toBe('two middlewares are named "Audit"; give one a distinct `name`');
  });

  it('refuses at Agent construction, not at the first call', () => {
    expect(
      () =>
        new Agent({
          provider: new FauxProvider(),
          model: 'faux',
          middleware: [
            { name: 'a', hookOrder: 1, shouldStopAfterTurn: () => false },
            { name: 'b', hookOrder: 1, shouldStopAfterTurn: () => false },
          ],
        }),
    ).toThrow(ConfigurationError);
  });
});

describe('a HookError names the phase', () => {
  it('the failing middleware’s hookPhase, or context when it declares none', () => {
    const composed = composeMiddleware([
      {
        name: 'Guard',
        hookPhase: 'tool',
        transformSystemPrompt: () => {
          throw new Error('boom');
        },
      },
    ]);
    const fail = () => composed.hooks.transformSystemPrompt!('', {} as never);
    expect(fail).toThrow(HookError);
    try {
      fail();
    } catch (error) {
      expect(error).toMatchObject({ middleware: 'Guard', hook: 'transformSystemPrompt', phase: 'tool' });
      expect((error as HookError).inputHash).toMatch(/\S/);
    }
    const plain = composeMiddleware([
      {
        name: 'Plain',
        transformSystemPrompt: () => {
          throw new Error('boom');
        },
      },
    ]);
    expect(() => plain.hooks.transformSystemPrompt!('', {} as never)).toThrow(
      expect.objectContaining({ middleware: 'Plain', phase: 'context' }),
    );
  });

  it('through a run: prompt() rejects with the phase', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('hi')] }),
      model: 'faux',
      middleware: [
        {
          name: 'Final',
          hookPhase: 'final',
          onRunEnd: () => Promise.reject(new Error('late')),
        },
      ],
    });
    await expect(agent.prompt('go')).rejects.toMatchObject({ middleware: 'Final', hook: 'onRunEnd', phase: 'final' });
  });
});

class Audit implements Middleware {
  readonly name = 'Audit';
  readonly version = '2.0.1';
  readonly hookPhase = 'final';
  afterToolCall() {
    return undefined;
  }
  transformSystemPrompt(prompt: string) {
    return prompt;
  }
}

const guard: Middleware = {
  name: 'ToolGuard',
  version: '1.2.0',
  hookPhase: 'tool',
  hookOrder: -5,
  transformSystemPrompt: (prompt) => prompt,
  wrapToolCall: (call, _ctx, next) => next(call),
};

describe('the chain told at start', () => {
  it('agent_start carries the composed chain: per hook, in order, with phase, order and version', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] }),
      model: 'faux',
      middleware: [new Audit(), guard, { name: 'Plain', transformSystemPrompt: (p: string) => p }],
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    await agent.prompt('a');
    await agent.prompt('b');
    const starts = events.filter((event): event is AgentStartEvent => event.type === 'agent_start');
    expect(starts).toHaveLength(2);
    expect(starts[0]!.middleware).toEqual({
      transformSystemPrompt: [
        { name: 'Plain', phase: 'context', order: 0 },
        { name: 'ToolGuard', phase: 'tool', order: -5, version: '1.2.0' },
        { name: 'Audit', phase: 'final', order: 0, version: '2.0.1' },
      ],
      afterToolCall: [{ name: 'Audit', phase: 'final', order: 0, version: '2.0.1' }],
      wrapToolCall: [{ name: 'ToolGuard', phase: 'context', order: 0, version: '1.2.0' }],
    });
    // Built once per Agent: every run gets the same frozen object, the one describeMiddleware() describes.
    expect(starts[1]!.middleware).toBe(starts[0]!.middleware);
    expect(Object.isFrozen(starts[0]!.middleware)).toBe(true);
    expect(Object.isFrozen(starts[0]!.middleware!.transformSystemPrompt)).toBe(true);
    expect(starts[0]!.middleware!.transformSystemPrompt).toBe(agent.describeMiddleware().transformSystemPrompt.links);
    expect(agent.describeMiddleware().wrapToolCall.layers[0]).toMatchObject({ name: 'ToolGuard', version: '1.2.0' });
  });

  it('an Agent without middleware tells an empty chain; a hook given to the Agent is listed as agent options', async () => {
    const bare = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
    expect((await collect(bare.prompt$('go')))[0]).toEqual({
      type: 'agent_start',
      runId: expect.any(String),
      seq: expect.any(Number),
      middleware: {},
    });
    const explicit = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('x')] }),
      model: 'faux',
      middleware: [guard],
      transformSystemPrompt: (p) => p,
    });
    const [start] = await collect(explicit.prompt$('go'));
    expect((start as AgentStartEvent).middleware?.transformSystemPrompt).toEqual([
      { name: 'agent options', phase: 'context', order: 0 },
    ]);
  });

  it('runAgentLoop tells the chain only when given one', async () => {
    const loop = (extra: object) =>
      collect(
        runAgentLoop({
          provider: new FauxProvider({ responses: [fauxMessage('x')] }),
          model: { id: 'faux', provider: 'faux' },
          prompts: [userMessage('go')],
          ...extra,
        }),
      );
    const [without] = await loop({});
    expect(without).not.toHaveProperty('middleware');
    const { chain } = composeMiddleware([guard]);
    const [withChain] = await loop({ middlewareChain: chain });
    expect((withChain as AgentStartEvent).middleware).toBe(chain);
  });

  it('travels over the wire unchanged (an event frame is the event’s JSON)', () => {
    const event = { type: 'agent_start', runId: 'r', seq: 1, middleware: composeMiddleware([guard]).chain } as const;
    expect(parseFrame(frameJson({ kind: 'event', seq: 1, event }))).toEqual({ kind: 'event', seq: 1, event });
  });

  it('the invoke_agent span gets cubepi.middleware.chain; spans naming a middleware get its version', async () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('t');
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('x')] }),
      model: 'faux',
      middleware: [
        new Audit(),
        guard,
        {
          name: 'Analytics',
          version: '0.9.0',
          onError: 'skip',
          transformSystemPrompt: () => {
            throw new Error('analytics down');
          },
        },
      ],
    });
    traceAgent(agent, { tracer });
    await agent.prompt('go');
    const run = exporter.getFinishedSpans().find((span) => span.name === 'invoke_agent')!;
    expect(run.attributes['cubepi.middleware.chain']).toBe(
      'transformSystemPrompt=Analytics@0.9.0,ToolGuard@1.2.0,Audit@2.0.1;afterToolCall=Audit@2.0.1;' +
        'wrapToolCall=ToolGuard@1.2.0',
    );
    const hookErrors = exporter
      .getFinishedSpans()
      .flatMap((span) => span.events)
      .filter((event) => event.name === 'hook_error');
    expect(hookErrors.map((event) => event.attributes)).toEqual([
      {
        'cubepi.middleware': 'Analytics',
        'cubepi.middleware.version': '0.9.0',
        'cubepi.hook': 'transformSystemPrompt',
      },
    ]);
  });
});
