// Rules: how decisions compose (issue 17), in virtual time.
// - beforeToolCall: the first denial, replace, pause or stop wins in middleware order; continue (and a patch) goes on.
// - onRunStart: every one runs, in order, until one answers stop; their patches all apply.
// - onRunEnd: every one runs, in order.
// - pause → respond: the run suspends at an exact frame; the resumed run runs the approved call and goes on.
import { catchError, mergeMap, of, type OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  composeMiddleware,
  Decision,
  defineTool,
  runAgentLoop,
  ToolGuard,
  userMessage,
  type AgentEvent,
  type AgentToolResult,
  type AssistantMessage,
  type BeforeToolCallAnswer,
  type BeforeToolCallContext,
  HookError,
  type Message,
  type Middleware,
  type ModelCallContext,
  type ModelRequest,
  type StreamEvent,
  type ToolCallContext,
  type ToolCallDecision,
  type ToolCallRequest,
  type ToolOutcome,
  retry,
} from 'cubepi';
import type { RunHelpers } from 'rxjs/testing';
import { FauxProvider, fauxMessage, fauxToolCall, spyHook } from 'cubepi/testing';
import { assistant, hookContext, observed, testScheduler, toolCall } from './helpers.js';

const base = hookContext();
const ctx: BeforeToolCallContext = {
  ...base,
  assistantMessage: assistant(''),
  toolCall,
  args: { q: 'x' },
  context: base,
};
const replaced: AgentToolResult = { content: [{ type: 'text', text: 'from cache' }] };
const answers = {
  c: Decision.continue(),
  p: Decision.pause({ reason: 'needs a human' }),
  r: Decision.replace(replaced, 'cache hit'),
  s: Decision.stop('failed', 'quota'),
  d: { block: true, reason: 'denied' },
} satisfies Record<string, BeforeToolCallAnswer>;

describe('beforeToolCall decisions: the first denial, replace, pause or stop wins', () => {
  it.each([
    ['pause', 'p'],
    ['replace', 'r'],
    ['stop', 's'],
    ['a denial', 'd'],
  ] as const)('continue, then %s: the later hooks are never called, not even subscribed', (_, mark) => {
    const later = spyHook(() => undefined);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-c|', answers);
      const second = cold(' --x|', { x: answers[mark] });
      const result = composeMiddleware([
        { name: 'first', beforeToolCall: () => first },
        { name: 'second', beforeToolCall: () => second },
        { name: 'later', beforeToolCall: later },
      ]).hooks.beforeToolCall!(ctx);
      // Each answer counts when its hook completes: the first at 2, the second (subscribed then) at 5.
      expectObservable(observed(result)).toBe('-----(x|)', { x: answers[mark] });
      expectSubscriptions(first.subscriptions).toBe('^-!');
      expectSubscriptions(second.subscriptions).toBe('--^--!');
    });
    expect(later.calls).toHaveLength(0);
  });

  it('continue from every hook: the call goes ahead (no answer)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const a = cold('-c|', answers);
      const b = cold(' -c|', answers);
      const result = composeMiddleware([
        { name: 'a', beforeToolCall: () => a },
        { name: 'b', beforeToolCall: () => b },
      ]).hooks.beforeToolCall!(ctx);
      expectObservable(observed(result)).toBe('----(u|)', { u: undefined });
    });
  });
});

describe('onRunStart: every one runs in order until one stops', () => {
  it('a stop ends the chain; the hooks before it ran', () => {
    const after = spyHook(() => undefined);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('--u|', { u: undefined });
      const b = cold('   -s|', { s: Decision.stop('cancelled', 'closed') });
      const result = composeMiddleware([
        { name: 'a', onRunStart: () => a },
        { name: 'b', onRunStart: () => b },
        { name: 'c', onRunStart: after },
      ]).hooks.onRunStart!(base);
      expectObservable(observed(result)).toBe('-----(s|)', { s: Decision.stop('cancelled', 'closed') });
      expectSubscriptions(b.subscriptions).toBe('---^-!');
    });
    expect(after.calls).toHaveLength(0);
  });
});

describe('onRunEnd: every one runs, in order', () => {
  it('each after the previous one answered', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('--u|', { u: undefined });
      const b = cold('   -u|', { u: undefined });
      const result = composeMiddleware([
        { name: 'a', onRunEnd: () => a },
        { name: 'b', onRunEnd: () => b },
      ]).hooks.onRunEnd!({ ...base, newMessages: [] }, 'completed');
      expectObservable(observed(result)).toBe('-----(u|)', { u: undefined });
      expectSubscriptions(a.subscriptions).toBe('^--!');
      expectSubscriptions(b.subscriptions).toBe('---^-!');
    });
  });
});

/** `q` approval requested, `x` a tool ends, `S` the run suspends, `E` the run ends otherwise. */
const marks: OperatorFunction<AgentEvent, string> = mergeMap((event) => {
  switch (event.type) {
    case 'approval_requested':
      return ['q'];
    case 'tool_execution_end':
      return ['x'];
    case 'agent_end':
      return [event.outcome === 'suspended' ? 'S' : 'E'];
    default:
      return [];
  }
});

describe('pause → respond in virtual time', () => {
  it('the guard asks after 5 ms; the run suspends then; the resumed run runs the tool for 10 ms and ends', () => {
    const model = { id: 'faux', provider: 'faux' };
    testScheduler().run(({ cold, expectObservable }) => {
      const pay = defineTool({
        name: 'pay',
        description: 'pays',
        parameters: z.object({ amount: z.number() }),
        execute: () => cold<AgentToolResult>('10ms (r|)', { r: { content: [{ type: 'text', text: 'paid' }] } }),
      });
      const guard = new ToolGuard({ policy: () => ({ ask: 'payments need approval' }) });
      const slowGuard = {
        name: 'guard',
        beforeToolCall: (c: BeforeToolCallContext) =>
          cold('5ms (a|)', { a: guard.beforeToolCall(c) as BeforeToolCallAnswer }),
      };
      const { hooks } = composeMiddleware([slowGuard]);
      const call = fauxToolCall('pay', { amount: 5 }, { id: 'c1' });
      const first = runAgentLoop({
        provider: new FauxProvider({ responses: [fauxMessage([call])] }),
        model,
        prompts: [userMessage('pay')],
        tools: [pay],
        hooks,
      });
      // The model answers within the first frames (FauxProvider's asap chunks); the guard's answer comes 5 ms later.
      expectObservable(first.pipe(marks)).toBe('5ms (qS|)');

      const history: Message[] = [userMessage('pay'), { ...fauxMessage([call]), stopReason: 'toolUse' }];
      const resumed = runAgentLoop({
        provider: new FauxProvider({ responses: [fauxMessage('done')] }),
        model,
        history,
        tools: [pay],
        hooks,
        resume: { assistant: history[1] as AssistantMessage, answers: new Map([['c1', { approve: true }]]) },
      });
      // The gate runs again on the resumed call (5 ms; the guard takes its `ask` as answered), then the approved call
      // runs for 10 ms; the model answers in the same frame; the run ends (issue 31: resume re-validates).
      expectObservable(resumed.pipe(marks)).toBe('15ms (xE|)');
    });
  });
});

describe('wrapToolCall decisions: converted where they are answered', () => {
  const tctx: ToolCallContext = { ...base, invocationId: 'inv', assistantMessage: assistant('') };
  const request: ToolCallRequest = {
    toolCall,
    args: {},
    tool: defineTool({
      name: 'search',
      description: 'd',
      parameters: z.object({}),
      idempotent: true,
      execute: () => 'x',
    }),
  };
  const decide = (cold: RunHelpers['cold'], decision: ToolCallDecision): Middleware => ({
    name: 'decider',
    wrapToolCall: () => cold('--(d|)', { d: decision }),
    nextCalls: 'at-most-once',
  });

  it('replace: the layers outside (a retry here) see an outcome at that frame; the tool is never subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const tool = cold<ToolOutcome>('-(o|)', { o: { result: replaced, isError: false } });
      const composed = composeMiddleware([retry({ backoff: { initialMs: 10, jitter: 0 } }), decide(cold, answers.r)]);
      expectObservable(composed.wrappers.wrapToolCall!(request, tctx, () => tool)).toBe('--(o|)', {
        o: { result: replaced, isError: false, outcome: 'ok' },
      });
      expectSubscriptions(tool.subscriptions).toBe([]);
    });
  });

  it.each([
    ['pause', 'p'],
    ['stop', 's'],
  ] as const)('%s: an error of the layers outside at that frame, never retried, never made a HookError', (_, mark) => {
    testScheduler().run(({ cold, expectObservable }) => {
      const composed = composeMiddleware([
        retry({ backoff: { initialMs: 10, jitter: 0 } }),
        decide(cold, answers[mark]),
      ]);
      const result = composed.wrappers.wrapToolCall!(request, tctx, () => cold('-|')).pipe(
        catchError((error: unknown) => of(error instanceof HookError ? 'a HookError' : (error as Error).message)),
      );
      expectObservable(result).toBe('--(e|)', { e: `${answers[mark].kind}: ${answers[mark].reason}` });
    });
  });
});

describe('wrapModelCall decisions: converted where they are answered', () => {
  const mctx: ModelCallContext = { ...base, invocationId: 'inv' };
  const request: ModelRequest = {
    provider: { id: 'p', stream: () => undefined as never },
    model: { id: 'm', provider: 'p' },
    messages: [],
    systemPrompt: '',
    tools: [],
  };
  const cached = assistant('from the cache');

  it('replace: the layers outside see start then done at that frame; the provider is never subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const provider = cold<StreamEvent>('-(d|)', { d: { type: 'done', message: assistant('from the model') } });
      const composed = composeMiddleware([
        { name: 'observer', phase: 'observe', wrapModelCall: (r, _c, next) => next(r) },
        {
          name: 'cache',
          phase: 'cache',
          nextCalls: 'at-most-once',
          wrapModelCall: () => cold('--(r|)', { r: Decision.replace(cached, 'cache hit') }),
        },
      ]);
      expectObservable(composed.wrappers.wrapModelCall!(request, mctx, () => provider)).toBe('--(sd|)', {
        s: { type: 'start', partial: cached },
        d: { type: 'done', message: cached },
      });
      expectSubscriptions(provider.subscriptions).toBe([]);
    });
  });

  it('stop: an error of the layers outside at that frame, never made a HookError', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const composed = composeMiddleware([
        { name: 'gate', nextCalls: 'at-most-once', wrapModelCall: () => cold('--(s|)', { s: answers.s }) },
      ]);
      const result = composed.wrappers.wrapModelCall!(request, mctx, () => cold('-|')).pipe(
        catchError((error: unknown) => of(error instanceof HookError ? 'a HookError' : (error as Error).message)),
      );
      expectObservable(result).toBe('--(e|)', { e: 'stop: quota' });
    });
  });
});
