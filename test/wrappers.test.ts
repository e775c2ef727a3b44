// Wrappers end to end through the Agent: retry, fallback, cache, declarations, deadlines.
import { firstValueFrom, Observable, of, type Subscription } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  cache,
  composeWrappers,
  ConfigurationError,
  defineTool,
  fallback,
  MessageAssembler,
  retry,
  textOf,
  type AgentEvent,
  type AssistantMessage,
  type Message,
  type Middleware,
  type Model,
  type ModelAttemptEvent,
  type ModelFallbackEvent,
  type Provider,
  type StreamEvent,
  type ToolOutcome,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript, resultText, tick } from './helpers.js';

const fast = { backoff: { initialMs: 1, jitter: 0 } } as const;
const transient = (kind: 'rate_limited' | 'unavailable', retryAfterMs?: number) =>
  fauxMessage([], {
    stopReason: 'error',
    errorKind: kind,
    errorMessage: `${kind}!`,
    ...(retryAfterMs ? { retryAfterMs } : {}),
  });

function record(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.subscribe((e) => void events.push(e));
  return events;
}

describe('retry', () => {
  it('re-sends a call that failed transiently before any content; each attempt has its own id under one invocation', async () => {
    const faux = new FauxProvider({
      responses: [transient('rate_limited'), transient('unavailable'), fauxMessage('third time lucky')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [retry({ maxAttempts: 3, ...fast })] });
    const events = record(agent);
    const added = await agent.prompt('go');
    expect(faux.callCount).toBe(3);
    expect(added.map((m) => `${m.role}:${textOf(m)}`)).toEqual(['user:go', 'assistant:third time lucky']); // failed attempts are not messages
    const attempts = events.filter((e): e is ModelAttemptEvent => e.type === 'model_attempt');
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(new Set(attempts.map((a) => a.invocationId)).size).toBe(1);
    expect(new Set(attempts.map((a) => a.attemptId)).size).toBe(3);
    // Each attempt after the first says how the one before it ended.
    expect(attempts.map((a) => a.previous)).toEqual([
      undefined,
      { attemptId: attempts[0]!.attemptId, errorKind: 'rate_limited', error: 'rate_limited!' },
      { attemptId: attempts[1]!.attemptId, errorKind: 'unavailable', error: 'unavailable!' },
    ]);
    expect(events.filter((e) => e.type === 'message_start' && e.message.role === 'assistant')).toHaveLength(1);
  });

  it('honours retryAfterMs', async () => {
    const faux = new FauxProvider({ responses: [transient('rate_limited', 40), fauxMessage('ok')] });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      middleware: [retry({ backoff: { initialMs: 1, jitter: 0 } })],
    });
    const events = record(agent);
    const started: number[] = [];
    agent.subscribe((e) => void (e.type === 'model_attempt' && started.push(Date.now())));
    await agent.prompt('go');
    expect(events.filter((e) => e.type === 'model_attempt')).toHaveLength(2);
    expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(39);
  });

  it('never replays a stream that already produced text: the error is kept', async () => {
    const failedMidway = fauxMessage('partial answer', {
      stopReason: 'error',
      errorKind: 'unavailable',
      errorMessage: 'connection reset',
    });
    const faux = new FauxProvider({ responses: [failedMidway, fauxMessage('never')] });
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [retry(fast)] });
    const added = await agent.prompt('go');
    expect(faux.callCount).toBe(1);
    expect(added.at(-1)).toMatchObject({
      stopReason: 'error',
      errorMessage: 'connection reset',
      content: [{ type: 'text', text: 'partial answer' }],
    });
  });

  it('does not retry errors that are not transient', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([], { stopReason: 'error', errorKind: 'auth' }), fauxMessage('never')],
    });
    await new Agent({ provider: faux, model: 'faux', middleware: [retry(fast)] }).prompt('go');
    expect(faux.callCount).toBe(1);
  });

  it('a deadline during a backoff wait cancels the run at once', async () => {
    const faux = new FauxProvider({ responses: [transient('rate_limited', 5_000), fauxMessage('never')] });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      deadlineMs: 30,
      middleware: [retry({ backoff: { maxMs: 60_000 } })],
    });
    const started = Date.now();
    const added = await agent.prompt('go');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(faux.callCount).toBe(1);
    expect(added.at(-1)).toMatchObject({
      stopReason: 'aborted',
      errorMessage: 'Run aborted: deadline of 30 ms exceeded',
    });
  });

  it('gives up when the provider asks to wait longer than backoff.maxMs', async () => {
    const faux = new FauxProvider({ responses: [transient('rate_limited', 120_000), fauxMessage('never')] });
    const added = await new Agent({
      provider: faux,
      model: 'faux',
      middleware: [retry({ backoff: { maxMs: 1_000 } })],
    }).prompt('go');
    expect(faux.callCount).toBe(1);
    expect(added.at(-1)).toMatchObject({ stopReason: 'error', errorKind: 'rate_limited', retryAfterMs: 120_000 });
  });

  it('retries an idempotent tool that threw, never one that is not', async () => {
    let flakyRuns = 0;
    let unsafeRuns = 0;
    const flaky = defineTool({
      name: 'flaky',
      description: 'd',
      parameters: z.object({}),
      idempotent: true,
      execute: () => {
        if (++flakyRuns === 1) throw new Error('socket hang up');
        return 'read ok';
      },
    });
    const unsafe = defineTool({
      name: 'unsafe',
      description: 'd',
      parameters: z.object({}),
      execute: () => {
        unsafeRuns++;
        throw new Error('payment gateway timeout');
      },
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('flaky', {}, { id: 'f' }), fauxToolCall('unsafe', {}, { id: 'u' })]),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [flaky, unsafe], middleware: [retry(fast)] });
    const added = await agent.prompt('go');
    expect([flakyRuns, unsafeRuns]).toEqual([2, 1]);
    const results = added.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((r) => [r.toolCallId, r.isError, resultText(r)])).toEqual([
      ['f', false, 'read ok'],
      ['u', true, 'payment gateway timeout'],
    ]);
  });
});

describe('fallback', () => {
  const modelB: Model = { id: 'model-b', provider: 'faux-b', input: ['text'] };

  it('moves a failing call to the next model before any content; the answering model is recorded, with a model_fallback event', async () => {
    const primary = new FauxProvider({ id: 'faux-a', responses: [transient('unavailable')] });
    const backup = new FauxProvider({ id: 'faux-b', responses: [fauxMessage('answer from B')] });
    const agent = new Agent({
      provider: primary,
      model: 'model-a',
      middleware: [fallback([{ provider: backup, model: modelB }])],
    });
    const events = record(agent);
    const added = await agent.prompt('go');
    expect(added.at(-1)).toMatchObject({
      role: 'assistant',
      provider: 'faux-b',
      model: 'model-b',
      content: [{ type: 'text', text: 'answer from B' }],
    });
    const moved = events.find((e): e is ModelFallbackEvent => e.type === 'model_fallback');
    expect(moved).toMatchObject({
      from: { provider: 'faux-a', model: 'model-a' },
      to: { provider: 'faux-b', model: 'model-b' },
      reason: 'unavailable!',
    });
    expect(trace(events)).toEqual(['model_attempt', 'model_fallback', 'model_attempt']);
  });

  it('a model_fallback event is not changed afterwards when the model it moved to fails too', async () => {
    const primary = new FauxProvider({ id: 'faux-a', responses: [transient('unavailable')] });
    const second = new FauxProvider({ id: 'faux-b', responses: [transient('unavailable')] });
    const third = new FauxProvider({ id: 'faux-c', responses: [fauxMessage('answer from C')] });
    const modelC: Model = { id: 'model-c', provider: 'faux-c' };
    const agent = new Agent({
      provider: primary,
      model: 'model-a',
      middleware: [
        fallback([
          { provider: second, model: modelB },
          { provider: third, model: modelC },
        ]),
      ],
    });
    const events = record(agent);
    await agent.prompt('go');
    const moves = events.filter((e): e is ModelFallbackEvent => e.type === 'model_fallback');
    expect(moves.map((e) => e.to)).toStrictEqual([
      { provider: 'faux-b', model: 'model-b' },
      { provider: 'faux-c', model: 'model-c' },
    ]);
    expect(moves[1]!.from).toStrictEqual({ provider: 'faux-b', model: 'model-b' });
  });

  // A model that states no input kinds is not refused on them (the table does not know `text-1` either): only what a
  // model (or the table) says it lacks is refused. So the text-only model says `input: ['text']`.
  it('does not send the request to a target that cannot take it (images for a text-only model)', async () => {
    const primary = new FauxProvider({ id: 'faux-a', responses: [transient('unavailable')] });
    const textOnly = new FauxProvider({ id: 'text-only', responses: [fauxMessage('never')] });
    const vision = new FauxProvider({ id: 'vision', responses: [fauxMessage('I see a cat')] });
    const agent = new Agent({
      provider: primary,
      model: 'model-a',
      middleware: [
        fallback([
          { provider: textOnly, model: { id: 'text-1', provider: 'text-only', input: ['text'] } },
          { provider: vision, model: { id: 'vision-1', provider: 'vision', input: ['text', 'image'] } },
        ]),
      ],
    });
    const photo: Message = {
      role: 'user',
      content: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', data: 'aGk=', mimeType: 'image/png' },
      ],
      timestamp: 1,
    };
    const added = await agent.prompt(photo);
    expect(textOnly.callCount).toBe(0);
    expect(added.at(-1)).toMatchObject({ provider: 'vision', model: 'vision-1' });
  });

  it('keeps the last error when every target failed', async () => {
    const a = new FauxProvider({ id: 'a', responses: [transient('unavailable')] });
    const b = new FauxProvider({ id: 'b', responses: [transient('rate_limited')] });
    const added = await new Agent({
      provider: a,
      model: 'm',
      middleware: [fallback([{ provider: b, model: { id: 'mb', provider: 'b' } }])],
    }).prompt('go');
    expect(added.at(-1)).toMatchObject({ stopReason: 'error', errorKind: 'rate_limited', provider: 'b' });
  });

  it('composes with retry: each retry attempt walks the fallback chain', async () => {
    const a = new FauxProvider({ id: 'a', responses: [transient('unavailable'), fauxMessage('a recovered')] });
    const b = new FauxProvider({ id: 'b', responses: [transient('unavailable')] });
    const agent = new Agent({
      provider: a,
      model: 'm',
      middleware: [fallback([{ provider: b, model: { id: 'mb', provider: 'b' } }]), retry(fast)],
    });
    expect(agent.describeMiddleware().wrapModelCall.runs).toEqual(['retry', 'fallback']);
    const added = await agent.prompt('go');
    expect(textOf(added.at(-1)!)).toBe('a recovered');
  });
});

describe('cache', () => {
  it('answers an identical request from the store without calling the model; errors are never stored', async () => {
    const store = new Map<string, AssistantMessage>();
    const make = (faux: FauxProvider) =>
      new Agent({ provider: faux, model: 'faux', systemPrompt: 's', middleware: [cache({ store })] });

    const failing = new FauxProvider({ responses: [transient('unavailable')] });
    await make(failing).prompt('What is 2+2?');
    expect(store.size).toBe(0);

    const first = new FauxProvider({ responses: [fauxMessage('4')] });
    await make(first).prompt('What is 2+2?');
    expect(store.size).toBe(1);

    const second = new FauxProvider({ responses: [fauxMessage('never')] });
    const added = await make(second).prompt('What is 2+2?');
    expect(second.callCount).toBe(0);
    expect(textOf(added.at(-1)!)).toBe('4');
    expect((added.at(-1) as AssistantMessage).usage.totalTokens).toBe(0);

    const different = new FauxProvider({ responses: [fauxMessage('6')] });
    await make(different).prompt('What is 3+3?');
    expect(different.callCount).toBe(1);
  });

  it('an async store: get may answer with a Promise, awaited before the call', async () => {
    const map = new Map<string, AssistantMessage>();
    const lookups: string[] = [];
    const store = {
      get: async (key: string) => (await tick(1), lookups.push(key), map.get(key)),
      set: (key: string, message: AssistantMessage) => void map.set(key, message),
    };
    const make = (faux: FauxProvider) => new Agent({ provider: faux, model: 'faux', middleware: [cache({ store })] });

    const first = new FauxProvider({ responses: [fauxMessage('4')] });
    await make(first).prompt('What is 2+2?');
    expect([first.callCount, map.size]).toEqual([1, 1]);

    const second = new FauxProvider({ responses: [fauxMessage('never')] });
    const added = await make(second).prompt('What is 2+2?');
    expect(second.callCount).toBe(0);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: '4' }] });
    expect((added.at(-1) as AssistantMessage).usage.totalTokens).toBe(0);
    expect(lookups).toHaveLength(2);
    expect(lookups[1]).toBe(lookups[0]);
  });

  it('a write that rejects neither fails the call nor escapes as an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const writes: string[] = [];
      const store = {
        get: () => undefined,
        set: (key: string) => (writes.push(key), Promise.reject(new Error('disk full'))),
      };
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('4')] }),
        model: 'faux',
        middleware: [cache({ store })],
      });
      const added = await agent.prompt('What is 2+2?');
      expect(writes).toHaveLength(1);
      expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop', content: [{ text: '4' }] });
      expect(agent.state.errorMessage).toBeUndefined();
      await tick(10); // an unhandled rejection is reported once the microtask queue has drained
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a write that throws does not fail the call either', async () => {
    const store = {
      get: () => undefined,
      set: () => {
        throw new Error('read-only store');
      },
    };
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('4')] }),
      model: 'faux',
      middleware: [cache({ store })],
    });
    const added = await agent.prompt('What is 2+2?');
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop', content: [{ text: '4' }] });
    expect(agent.state.errorMessage).toBeUndefined();
  });
});

describe('wrapToolCall', () => {
  it('wraps each execution between beforeToolCall and afterToolCall, and may replace it', async () => {
    const order: string[] = [];
    let executed = 0;
    const lookup = defineTool({
      name: 'lookup',
      description: 'd',
      parameters: z.object({ q: z.string() }),
      execute: (_id, { q }) => (executed++, `fresh ${q}`),
    });
    const memo = new Map<string, string>([['cached', 'from memo']]);
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('lookup', { q: 'cached' }, { id: 'c' }),
          fauxToolCall('lookup', { q: 'new' }, { id: 'n' }),
        ]),
        fauxMessage('ok'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [lookup],
      beforeToolCall: ({ toolCall }) => void order.push(`before ${toolCall.id}`),
      afterToolCall: ({ toolCall }) => void order.push(`after ${toolCall.id}`),
      middleware: [
        {
          name: 'memo',
          phase: 'cache',
          nextCalls: 'at-most-once',
          wrapToolCall: (call, _ctx, next) => {
            order.push(`wrap ${call.toolCall.id}`);
            const hit = memo.get(String(call.args.q));
            return hit === undefined
              ? next(call)
              : new Observable(
                  (s) => (s.next({ result: { content: [{ type: 'text', text: hit }] }, isError: false }), s.complete()),
                );
          },
        },
      ],
    });
    const added = await agent.prompt('go');
    expect(executed).toBe(1);
    expect(added.filter((m): m is ToolResultMessage => m.role === 'toolResult').map(resultText)).toEqual([
      'from memo',
      'fresh new',
    ]);
    expect(order.slice(0, 2)).toEqual(['before c', 'before n']);
    expect(order.indexOf('wrap c')).toBeLessThan(order.indexOf('after c'));
  });

  it('under a wrapper, a tool streams its updates, and a rejection or a throw becomes an error result', async () => {
    const progress = defineTool({
      name: 'progress',
      description: 'd',
      parameters: z.object({}),
      execute: () =>
        new Observable<string>((s) => {
          s.next('25%');
          s.next('50%');
          setTimeout(() => (s.next('done'), s.complete()), 1);
        }),
    });
    const rejects = defineTool({
      name: 'rejects',
      description: 'd',
      parameters: z.object({}),
      execute: () => Promise.reject(new Error('disk on fire')),
    });
    const throws = defineTool({
      name: 'throws',
      description: 'd',
      parameters: z.object({}),
      execute: () => {
        throw new Error('bad input to the tool');
      },
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('progress', {}, { id: 'p' }),
          fauxToolCall('rejects', {}, { id: 'r' }),
          fauxToolCall('throws', {}, { id: 't' }),
        ]),
        fauxMessage('ok'),
      ],
    });
    const wrapped: string[] = [];
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [progress, rejects, throws],
      middleware: [{ name: 'seen', wrapToolCall: (call, _ctx, next) => (wrapped.push(call.toolCall.id), next(call)) }],
    });
    const events = record(agent);
    const added = await agent.prompt('go');

    expect(wrapped.sort()).toEqual(['p', 'r', 't']);
    const updates = events.filter((e) => e.type === 'tool_execution_update');
    expect(updates.map((e) => (e.type === 'tool_execution_update' ? resultText(e.partialResult) : ''))).toEqual([
      '25%',
      '50%',
    ]);
    const results = added.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((m) => [m.toolCallId, resultText(m), m.isError ?? false])).toEqual([
      ['p', 'done', false],
      ['r', expect.stringContaining('disk on fire'), true],
      ['t', expect.stringContaining('bad input to the tool'), true],
    ]);
    expect(textOf(added.at(-1)!)).toBe('ok');
    expectConsistentTranscript(agent.state.messages);
  });

  it('a wrapper that breaks its declaration ends the run with a HookError, the transcript consistent', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('noop', {}, { id: 'x' })])] });
    const noop = defineTool({ name: 'noop', description: 'd', parameters: z.object({}), execute: () => 'ok' });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [noop],
      middleware: [{ name: 'greedy', wrapToolCall: (call, _ctx, next) => (next(call), next(call)) }],
    });
    await expect(agent.prompt('go')).rejects.toMatchObject({
      middleware: 'greedy',
      hook: 'wrapToolCall',
      phase: 'context',
    });
    expectConsistentTranscript(agent.state.messages);
  });
});

describe('wrappers and cancellation', () => {
  it('the signal reaches wrappers, and cancelling tears the layers down, keeping what was streamed', async () => {
    let seen: AbortSignal | undefined;
    let inner: Subscription | undefined;
    let tornDown = false;
    const stalled: Provider = {
      id: 'stalled',
      stream: (model) =>
        new Observable<StreamEvent>((subscriber) => {
          const asm = new MessageAssembler({ provider: 'stalled', model: model.id });
          subscriber.next(asm.start());
          subscriber.next(asm.startText());
          subscriber.next(asm.textDelta(0, 'partial'));
          return () => (tornDown = true);
        }),
    };
    const agent = new Agent({
      provider: stalled,
      model: 'm',
      middleware: [
        {
          name: 'watch',
          phase: 'observe',
          wrapModelCall: (req, ctx, next) => {
            seen = ctx.signal;
            return new Observable<StreamEvent>((s) => {
              inner = next(req).subscribe(s);
              return () => inner?.unsubscribe();
            });
          },
        },
      ],
    });
    const run = agent.prompt('go');
    await tick(5);
    agent.abort();
    const added = await run;
    expect(seen?.aborted).toBe(true);
    expect(inner?.closed).toBe(true);
    expect(tornDown).toBe(true);
    expect(added.at(-1)).toMatchObject({
      role: 'assistant',
      stopReason: 'aborted',
      errorKind: 'aborted',
      errorMessage: 'Run aborted',
      content: [{ type: 'text', text: 'partial' }],
    });
    expect(added).toHaveLength(2); // the prompt and the aborted answer: one closing message, not two
  });

  it("cancelling during a tool call tears the wrapToolCall layers down and fires the tool's signal", async () => {
    const log: string[] = [];
    let toolSignal: AbortSignal | undefined;
    let layerSignal: AbortSignal | undefined;
    const stalled = defineTool({
      name: 'stalled',
      description: 'd',
      parameters: z.object({}),
      execute: (_id, _args, { signal }) => (
        (toolSignal = signal),
        log.push('tool started'),
        new Promise<string>(() => {})
      ),
    });
    const layer = (name: string, phase: 'observe' | 'guard'): Middleware => ({
      name,
      phase,
      wrapToolCall: (call, ctx, next) =>
        new Observable<ToolOutcome>((subscriber) => {
          if (name === 'outer') layerSignal = ctx.signal;
          log.push(`enter ${name}`);
          const inner = next(call).subscribe(subscriber);
          return () => (inner.unsubscribe(), log.push(`leave ${name}`));
        }),
    });
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('stalled', {}, { id: 's' })])] }),
      model: 'faux',
      tools: [stalled],
      middleware: [layer('outer', 'observe'), layer('inner', 'guard')],
    });
    const run = agent.prompt('go');
    await tick(5);
    expect(log).toEqual(['enter outer', 'enter inner', 'tool started']);
    agent.abort();
    await run;
    expect(log.slice(3)).toEqual(['leave inner', 'leave outer']);
    expect(layerSignal?.aborted).toBe(true);
    expect(toolSignal?.aborted).toBe(true);
    expectConsistentTranscript(agent.state.messages);
    expect(agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')).toMatchObject({
      toolCallId: 's',
      isError: true,
    });
  });
});

describe('configuration', () => {
  it('the Agent rejects wrapper misconfiguration at construction', () => {
    const make = (middleware: ConstructorParameters<typeof Agent>[0]['middleware']) => () =>
      new Agent({ provider: new FauxProvider(), model: 'faux', middleware });
    expect(make([retry(), retry({ name: 'retry2' })])).toThrow(ConfigurationError);
    expect(make([{ name: 'x', phase: 'guard', nextCalls: 'many', wrapModelCall: (r, _c, n) => n(r) }])).toThrow(
      /inside tracing/,
    );
    expect(make([{ name: 'x', order: Number.NaN, wrapModelCall: (r, _c, n) => n(r) }])).toThrow(
      /order must be a finite number/,
    );
    expect(() => retry({ maxAttempts: 0 })).toThrow(ConfigurationError);
    expect(() => fallback([])).toThrow(/at least one target/);
  });

  it('composeWrappers used directly names its layers itself and checks names it is given', async () => {
    const tag = (label: string): Middleware => ({
      name: label,
      wrapToolCall: (call, _ctx, next) =>
        next({ ...call, args: { trail: [...(call.args as { trail: string[] }).trail, label] } }),
    });
    class Audit implements Middleware {
      wrapModelCall: NonNullable<Middleware['wrapModelCall']> = (request, _ctx, next) => next(request);
    }
    const composed = composeWrappers([tag('outer'), new Audit(), {}, tag('inner')]);
    expect(composed.layers.wrapToolCall.map((layer) => layer.name)).toEqual(['outer', 'inner']);
    expect(composed.layers.wrapModelCall.map((layer) => layer.name)).toEqual(['Audit']);
    const outcome = await firstValueFrom(
      composed.wrapToolCall!({ toolCall: {} as never, tool: {} as never, args: { trail: [] } }, {} as never, (call) =>
        of<ToolOutcome>({ result: { content: [{ type: 'text', text: JSON.stringify(call.args) }] }, isError: false }),
      ),
    );
    expect(outcome.result.content).toEqual([{ type: 'text', text: '{"trail":["outer","inner"]}' }]);

    expect(() => composeWrappers([tag('a'), tag('a')])).toThrow(/two middlewares are named "a"/);
    expect(() => composeWrappers([tag('a'), tag('b')], ['a'])).toThrow(/one non-empty string for each/);
    expect(() => composeWrappers([tag('a'), null as never], ['a', 'b'])).toThrow(/an array of objects/);
    expect(() => composeWrappers([tag('a')], [''])).toThrow(ConfigurationError);
    expect(() => composeWrappers('x' as never)).toThrow(/must be an array/);
    expect(composeWrappers([tag('a')], ['given']).layers.wrapToolCall[0]!.name).toBe('given');
  });

  it('describeMiddleware shows the onion with phases', () => {
    const agent = new Agent({
      provider: new FauxProvider(),
      model: 'faux',
      middleware: [
        fallback([{ provider: new FauxProvider({ id: 'b' }), model: { id: 'b', provider: 'b' } }]),
        cache({ store: new Map() }),
        retry(),
      ],
    });
    expect(agent.describeMiddleware().wrapModelCall.layers.map((l) => `${l.name}:${l.phase}:${l.nextCalls}`)).toEqual([
      'cache:cache:at-most-once',
      'retry:retry:many',
      'fallback:adapter:many',
    ]);
  });
});

function trace(events: readonly AgentEvent[]): string[] {
  return events.filter((e) => e.type === 'model_attempt' || e.type === 'model_fallback').map((e) => e.type);
}
