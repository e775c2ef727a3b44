// The onion: wrapModelCall / wrapToolCall layers, ordered by phase, then order, then registration.
import { concat, defer, finalize, map, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  cache,
  composeMiddleware,
  ConfigurationError,
  fallback,
  retry,
  type AssistantMessage,
  type Middleware,
  type ModelCallContext,
  type ModelRequest,
  type StreamEvent,
  type ToolCallContext,
  type ToolCallRequest,
  type ToolOutcome,
} from 'cubepi';
import { defineTool } from 'cubepi';
import { z } from 'zod';
import { assistant, hookContext, hookFailure, testScheduler, toolCall } from './helpers.js';

const base = hookContext();
const ctx: ModelCallContext = { ...base, invocationId: 'inv' };
const provider = { id: 'p', stream: () => undefined as never };
const request: ModelRequest = {
  provider,
  model: { id: 'm', provider: 'p' },
  messages: [],
  systemPrompt: '',
  tools: [],
};
const M = assistant('hi');
const ev: Record<string, StreamEvent> = {
  s: { type: 'start', partial: M },
  t: { type: 'text_delta', contentIndex: 0, delta: 'hi', partial: M },
  D: { type: 'done', message: M },
  E: {
    type: 'error',
    message: { ...M, stopReason: 'error', errorMessage: 'overloaded' },
    errorKind: 'unavailable',
  },
  R: {
    type: 'error',
    message: { ...M, stopReason: 'error', errorMessage: '429' },
    errorKind: 'rate_limited',
    retryAfterMs: 50,
  },
};

/** A pass-through wrapper recording when it is subscribed and torn down. */
function observer(name: string, log: string[], extra: Partial<Middleware> = {}): Middleware {
  return {
    name,
    ...extra,
    wrapModelCall: (req, _ctx, next) => {
      log.push(`enter ${name}`);
      return next(req).pipe(finalize(() => log.push(`leave ${name}`)));
    },
  };
}

describe('wrapModelCall: the onion', () => {
  it('orders layers by phase (observe outermost … adapter innermost), then order, then registration', () => {
    const log: string[] = [];
    const composed = composeMiddleware([
      observer('adapter', log, { phase: 'adapter' }),
      observer('guard-2', log, { phase: 'guard', order: 2 }),
      observer('context-a', log),
      observer('observe', log, { phase: 'observe' }),
      observer('guard-1', log, { phase: 'guard', order: 1 }),
      observer('context-b', log, { phase: 'context' }),
    ]);
    expect(composed.description.wrapModelCall.runs).toEqual([
      'observe',
      'guard-1',
      'guard-2',
      'context-a',
      'context-b',
      'adapter',
    ]);
    testScheduler().run(({ cold, expectObservable }) => {
      const call = cold('-s-t-D|', ev);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => call)).toBe('-s-t-D|', ev);
    });
    expect(log.slice(0, 6)).toEqual([
      'enter observe',
      'enter guard-1',
      'enter guard-2',
      'enter context-a',
      'enter context-b',
      'enter adapter',
    ]);
    expect(log.slice(6)).toEqual([
      'leave adapter',
      'leave context-b',
      'leave context-a',
      'leave guard-2',
      'leave guard-1',
      'leave observe',
    ]);
  });

  it('zero next calls: a cache hit replaces the call, which is never subscribed', () => {
    const store = new Map<string, AssistantMessage>();
    const composed = composeMiddleware([cache({ store, key: () => 'k' })]);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-s-t-D|', ev);
      const second = cold('-s-t-D|', ev);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => first)).toBe('-s-t-D|', ev);
      const replayed = composed.wrappers.wrapModelCall!(request, ctx, () => second).pipe(map((e) => e.type));
      expectObservable(replayed, '--------^').toBe('--------(d|)', { d: 'done' });
      expectSubscriptions(second.subscriptions).toBe([]);
    });
  });

  it('one next call: a pass-through layer changes nothing', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const call = cold('-s-t-D|', ev);
      const composed = composeMiddleware([observer('trace', [])]);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => call)).toBe('-s-t-D|', ev);
      expectSubscriptions(call.subscriptions).toBe('^-----!');
    });
  });

  it('many next calls: retry re-sends after a transient error before content, waiting retryAfterMs', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const attempts = [cold('-R|', ev), cold('-s---t---D|', ev)];
      const sent = [...attempts];
      const composed = composeMiddleware([retry({ maxAttempts: 3, backoff: { jitter: 0 } })]);
      // attempt 1 fails at 1 ms; the provider said "retry after 50 ms"; attempt 2 starts at 51 ms; its held `start`
      // goes out with the first content.
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => sent.shift()!)).toBe('56ms (st) D|', ev);
      expectSubscriptions(attempts[0]!.subscriptions).toBe('^!');
      expectSubscriptions(attempts[1]!.subscriptions).toBe('51ms ^---------!');
    });
  });

  it('retry never replays a stream that already produced content: the error stands', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const attempt = cold('-s-t---E|', ev);
      const spare = cold('-s-t-D|', ev);
      const sent = [attempt, spare];
      const composed = composeMiddleware([retry({ backoff: { initialMs: 10, jitter: 0 } })]);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => sent.shift()!)).toBe('---(st)E|', ev);
      expectSubscriptions(spare.subscriptions).toBe([]);
    });
  });

  it('retry gives up after maxAttempts with the last error event, backing off exponentially', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const sent = [cold('-E|', ev), cold('-E|', ev), cold('-E|', ev)];
      const composed = composeMiddleware([retry({ maxAttempts: 3, backoff: { initialMs: 10, factor: 2, jitter: 0 } })]);
      // fail at 1, wait 10 → attempt 2 at 11, fails at 12, wait 20 → attempt 3 at 32, its error at 33 is the result
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => sent.shift()!)).toBe('33ms (E|)', ev);
    });
  });

  it('unsubscribing during a backoff wait ends the wait at once: no further attempt', () => {
    let attempts = 0;
    testScheduler().run(({ cold, expectObservable }) => {
      const composed = composeMiddleware([retry({ backoff: { initialMs: 100, jitter: 0 } })]);
      const call = () => (attempts++, cold('-E|', ev));
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, call), '50ms !').toBe('');
    });
    expect(attempts).toBe(1);
  });

  it('unsubscribing mid-stream tears down every layer and the call', () => {
    const log: string[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const call = cold('-s-t----D|', ev);
      const composed = composeMiddleware([
        observer('a', log, { phase: 'observe' }),
        observer('b', log, { phase: 'guard' }),
        observer('c', log, { phase: 'adapter' }),
      ]);
      expectObservable(
        composed.wrappers.wrapModelCall!(request, ctx, () => call),
        '----!',
      ).toBe('-s-t', ev);
      expectSubscriptions(call.subscriptions).toBe('^---!');
    });
    expect(log.filter((l) => l.startsWith('leave'))).toEqual(['leave c', 'leave b', 'leave a']);
  });

  it('a failing layer fails with a HookError naming it and its phase; outer layers pass it on', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const call = cold('-s-t-D|', ev);
      const composed = composeMiddleware([
        observer('outer', [], { phase: 'observe' }),
        {
          name: 'broken',
          phase: 'guard',
          wrapModelCall: () => cold<never>('--#', undefined, new Error('policy down')),
        },
      ]);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => call).pipe(hookFailure())).toBe('--(f|)', {
        f: 'broken.wrapModelCall: policy down',
      });
    });
  });

  it('an error event is a value: it flows through the layers like any event', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const call = cold('-E|', ev);
      const composed = composeMiddleware([observer('a', []), observer('b', [], { phase: 'observe' })]);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => call)).toBe('-E|', ev);
    });
  });

  it('holds wrappers to their declaration: too many next calls, or none when "once" is declared, are HookErrors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const call = () => cold('-D|', ev);
      const twice = composeMiddleware([
        {
          name: 'twice',
          wrapModelCall: (r, _c, next) =>
            concat(
              next(r),
              defer(() => next(r)),
            ),
        },
      ]);
      expectObservable(twice.wrappers.wrapModelCall!(request, ctx, call).pipe(hookFailure())).toBe('-D(f|)', {
        ...ev,
        f: 'twice.wrapModelCall: called next 2 times but declares nextCalls "once"',
      });
      const never = composeMiddleware([{ name: 'lazy', wrapModelCall: () => cold<StreamEvent>('-|') }]);
      expectObservable(never.wrappers.wrapModelCall!(request, ctx, call).pipe(hookFailure())).toBe('-(f|)', {
        f: 'lazy.wrapModelCall: completed without calling next but declares nextCalls "once"',
      });
    });
  });

  it('rejects at construction: two wrappers in an exclusive slot, a retry outside tracing, an unknown phase', () => {
    const store = new Map<string, AssistantMessage>();
    expect(() => composeMiddleware([cache({ store }), cache({ store, name: 'cache2' })])).toThrow(
      'middlewares "cache" and "cache2" both claim the exclusive "cache" slot of wrapModelCall; keep one',
    );
    expect(() =>
      composeMiddleware([
        { name: 'sneaky', phase: 'observe', nextCalls: 'many', wrapModelCall: (r, _c, next) => next(r) },
      ]),
    ).toThrow(
      /"sneaky": its wrapModelCall calls next several times .* must sit inside tracing, in phase "retry" or "adapter"/,
    );
    expect(() =>
      composeMiddleware([{ name: 'odd', phase: 'middle' as never, wrapModelCall: (r, _c, n) => n(r) }]),
    ).toThrow(ConfigurationError);
  });
});

describe('wrapToolCall: the onion', () => {
  const tctx: ToolCallContext = { ...base, invocationId: 'inv', assistantMessage: assistant('') };
  const ok: ToolOutcome = { result: { content: [{ type: 'text', text: 'ok' }] }, isError: false };
  const threw: ToolOutcome = {
    result: { content: [{ type: 'text', text: 'boom' }] },
    isError: true,
    error: new Error('boom'),
  };
  const make = (idempotent: boolean): ToolCallRequest => ({
    toolCall,
    args: {},
    tool: defineTool({ name: 'search', description: 'd', parameters: z.object({}), idempotent, execute: () => 'x' }),
  });

  it('retries an idempotent tool that threw', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const runs = [cold('-(x|)', { x: threw }), cold('--(o|)', { o: ok })];
      const composed = composeMiddleware([retry({ backoff: { initialMs: 10, jitter: 0 } })]);
      expectObservable(
        composed.wrappers.wrapToolCall!(make(true), tctx, () => runs.shift()! as Observable<ToolOutcome>),
      ).toBe('13ms (o|)', { o: ok });
    });
  });

  it('never retries a tool that is not idempotent', () => {
    let runs = 0;
    testScheduler().run(({ cold, expectObservable }) => {
      const composed = composeMiddleware([retry({ backoff: { initialMs: 10, jitter: 0 } })]);
      const result = composed.wrappers.wrapToolCall!(make(false), tctx, () => (runs++, cold('-(x|)', { x: threw })));
      expectObservable(result).toBe('-(x|)', { x: threw });
    });
    expect(runs).toBe(1);
  });

  it('unsubscribing during the backoff wait of an idempotent tool ends the wait at once: the tool ran once', () => {
    let runs = 0;
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-(x|)', { x: threw });
      const composed = composeMiddleware([retry({ backoff: { initialMs: 100, jitter: 0 } })]);
      // the tool throws at 1 ms; the retry would run it again at 101 ms; cancelling at 50 ms ends the wait
      const result = composed.wrappers.wrapToolCall!(make(true), tctx, () => (runs++, first));
      expectObservable(result, '50ms !').toBe('');
      expectSubscriptions(first.subscriptions).toBe('^!');
    });
    expect(runs).toBe(1);
  });
});

describe('cancellation is never retried nor moved on, even when listed', () => {
  const A: StreamEvent = {
    type: 'error',
    message: { ...M, stopReason: 'aborted', errorMessage: 'Run aborted' },
    errorKind: 'aborted',
  };

  it("retry({ retryOn: ['aborted'] }) sends an aborted call once: its error event is the result", () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const attempt = cold('-A|', { A });
      const spare = cold('-D|', ev);
      const sent = [attempt, spare];
      const composed = composeMiddleware([retry({ retryOn: ['aborted'], backoff: { initialMs: 1, jitter: 0 } })]);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, () => sent.shift()!)).toBe('-A|', { A });
      expectSubscriptions(attempt.subscriptions).toBe('^-!');
      expectSubscriptions(spare.subscriptions).toBe([]);
    });
  });

  it("fallback(targets, { on: ['aborted'] }) never moves an aborted call to the next target", () => {
    const backup = { provider: { id: 'b', stream: () => undefined as never }, model: { id: 'mb', provider: 'b' } };
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const primary = cold('-A|', { A });
      const secondary = cold('-D|', ev);
      const composed = composeMiddleware([fallback([backup], { on: ['aborted'] })]);
      const call = (req: ModelRequest) => (req.model.id === 'mb' ? secondary : primary);
      expectObservable(composed.wrappers.wrapModelCall!(request, ctx, call)).toBe('-A|', { A });
      expectSubscriptions(primary.subscriptions).toBe('^-!');
      expectSubscriptions(secondary.subscriptions).toBe([]);
    });
  });
});
