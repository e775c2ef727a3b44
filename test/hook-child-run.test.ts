// Nested runs from hooks (issue 31, item 9: seed 002 §8 "hook 内再次调用 Agent 会产生嵌套 run，trace 和预算要建立父子关系"):
// a run a hook starts with `childRunOptions(ctx)` is the parent's child in its events, its spend counts for the
// parent (usage, BudgetCap), and cancelling the parent cancels it.
import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  BudgetCap,
  childRunOptions,
  computeUsage,
  ConfigurationError,
  defineTool,
  usageOf,
  type AgentEndEvent,
  type AgentEvent,
  type AgentStartEvent,
  type HookContext,
  type Middleware,
  type Provider,
  type StreamEvent,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { deferred, expectConsistentTranscript } from './helpers.js';

const noop = defineTool({ name: 'noop', description: 'Does nothing', parameters: z.object({}), execute: () => 'ok' });

/** An agent whose runs record their events; `provider` answers its calls. */
function recorded(provider: Provider, middleware: Middleware[] = []) {
  const agent = new Agent({ provider, model: 'faux', tools: [noop], middleware });
  const events: AgentEvent[] = [];
  agent.subscribe((event) => void events.push(event));
  const starts = () => events.filter((e): e is AgentStartEvent => e.type === 'agent_start');
  const ends = () => events.filter((e): e is AgentEndEvent => e.type === 'agent_end');
  return { agent, events, starts, ends };
}

/** A middleware whose `afterModelResponse` (on the first turn) runs `child` as the run's child and waits for it. */
function reviewer(child: Agent, seen: { ctx?: HookContext; error?: unknown } = {}): Middleware {
  return {
    name: 'reviewer',
    afterModelResponse: async (_response, ctx) => {
      if (ctx.turnIndex !== 0) return undefined;
      seen.ctx = ctx;
      await child
        .prompt('review', childRunOptions(ctx, { hook: 'afterModelResponse', middleware: 'reviewer' }))
        .catch((error: unknown) => void (seen.error = error));
      return undefined;
    },
  };
}

const parentResponses = () => [
  { ...fauxMessage([fauxToolCall('noop', {})]), usage: computeUsage({ input: 200, output: 100 }) },
  { ...fauxMessage('done'), usage: computeUsage({ input: 20, output: 10 }) },
];

describe('a run started in a hook (childRunOptions)', () => {
  it("is the parent's child: agent_start.parent names the run and the hook; depth one more; usage in the parent's", async () => {
    const childDepth: number[] = [];
    const child = recorded(
      new FauxProvider({
        responses: [{ ...fauxMessage('looks fine'), usage: computeUsage({ input: 700, output: 300 }) }],
      }),
      [{ name: 'probe', onRunStart: (ctx) => void childDepth.push(ctx.run!.depth) }],
    );
    const parent = recorded(new FauxProvider({ responses: parentResponses() }), [reviewer(child.agent)]);
    await parent.agent.prompt('go');

    const [parentStart] = parent.starts();
    expect(parentStart!.parent).toBeUndefined();
    expect(child.starts()[0]!.parent).toEqual({
      runId: parentStart!.runId,
      depth: 0,
      hook: { name: 'afterModelResponse', middleware: 'reviewer' },
    });
    expect(childDepth).toEqual([1]);
    expect(child.ends()[0]!.outcome).toBe('completed');
    const end = parent.ends()[0]!;
    const own = usageOf(end.messages.filter((m) => m.role === 'assistant')).totalTokens;
    expect(own).toBe(330);
    expect(end.usage.totalTokens).toBe(own + 1000);
    expect(end.outcome).toBe('completed');
  });

  it("its spend counts against the parent's BudgetCap: the parent stops after the turn the child crossed it", async () => {
    const child = recorded(
      new FauxProvider({
        responses: [{ ...fauxMessage('long review'), usage: computeUsage({ input: 5000, output: 5000 }) }],
      }),
    );
    const faux = new FauxProvider({ responses: parentResponses() });
    const parent = recorded(faux, [reviewer(child.agent), new BudgetCap({ tokens: 8000 })]);
    await parent.agent.prompt('go');

    const end = parent.ends()[0]!;
    expect(end.outcome).toBe('stopped');
    expect(faux.callCount).toBe(1); // the second model call never happened
    expect(end.usage.totalTokens).toBe(300 + 10_000);
    expectConsistentTranscript(parent.agent.state.messages);
  });

  it('cancelling the parent cancels the child: its request signal fires, its outcome is cancelled', async () => {
    const hung: AbortSignal[] = [];
    const hanging = deferred();
    const hangs: Provider = {
      id: 'faux',
      stream: (_model, _messages, request): Observable<StreamEvent> =>
        new Observable<StreamEvent>(() => {
          hung.push(request!.options!.signal!);
          hanging.resolve();
        }),
    };
    const child = recorded(hangs);
    const seen: { ctx?: HookContext; error?: unknown } = {};
    const parent = recorded(new FauxProvider({ responses: parentResponses() }), [reviewer(child.agent, seen)]);
    const run = parent.agent.prompt('go');
    await hanging.promise;
    expect(hung[0]!.aborted).toBe(false);
    parent.agent.abort('enough');
    await run.catch(() => undefined);

    expect(hung[0]!.aborted).toBe(true);
    expect(child.ends()[0]!.outcome).toBe('cancelled');
    expect(parent.ends()[0]!.outcome).toBe('cancelled');
    expect(seen.ctx!.signal.aborted).toBe(true);
  });

  it("a tool's context gives the call's id as the parent; a hand-built context is refused", () => {
    const controller = new AbortController();
    const run = { runId: 'r1', threadId: 't', depth: 2, deadlineAt: 5, budgetSignal: undefined };
    const charge = () => undefined;
    const options = childRunOptions({
      run,
      signal: controller.signal,
      onUpdate: () => undefined,
      toolCall: { type: 'toolCall', id: 'call-1', name: 'x', arguments: {} },
      chargeUsage: charge,
    });
    expect(options.parent).toEqual({ runId: 'r1', toolCallId: 'call-1', threadId: 't', depth: 2 });
    expect(options.limits).toEqual({ deadlineAt: 5, budgetSignal: undefined, charge });
    expect(options.signal).toBe(controller.signal);
    expect(() => childRunOptions({ signal: controller.signal } as HookContext)).toThrow(ConfigurationError);
  });
});
