// Rules: a resumed approval is validated again (issue 31; seed 002 §6 "resume 时重新验证 deadline 和目标状态", §9.2).
// - order: every held call's beforeToolCall runs again, with ctx.approval, before any resumed call executes.
// - short-circuit: a denial on resume makes the call `denied`, a pause asks again, a stop ends the run; the tool is
//   never subscribed.
// - teardown: unsubscribing while the gate runs again unsubscribes the gate; nothing runs.
// - ToolGuard: its `ask` counts as answered on resume; its `deny` and `stop` apply again.
import { mergeMap, type OperatorFunction } from 'rxjs';
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
  type ApprovalAnswer,
  type ApprovalRequest,
  type AssistantMessage,
  type BeforeToolCallAnswer,
  type BeforeToolCallContext,
  type Message,
  type ResumedApproval,
} from 'cubepi';
import type { RunHelpers } from 'rxjs/testing';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { testScheduler } from './helpers.js';

const model = { id: 'faux', provider: 'faux' };

/** `q` approval requested, `o` ok, `d` denied, `a` aborted, `S` suspended, `E` completed, `F` failed. */
const marks: OperatorFunction<AgentEvent, string> = mergeMap((event) => {
  switch (event.type) {
    case 'approval_requested':
      return ['q'];
    case 'tool_execution_end':
      return [
        event.outcome === 'ok' ? 'o' : event.outcome === 'denied' ? 'd' : event.outcome === 'aborted' ? 'a' : '?',
      ];
    case 'agent_end':
      return [
        event.outcome === 'suspended'
          ? 'S'
          : event.outcome === 'completed'
            ? 'E'
            : event.outcome === 'failed'
              ? 'F'
              : '?',
      ];
    default:
      return [];
  }
});

type Cold = RunHelpers['cold'];

/** A resumed run of one or two held `pay` calls, each tool taking 10 ms, with `gate` as the only beforeToolCall. */
function resumed(
  cold: Cold,
  gate: (ctx: BeforeToolCallContext) => unknown,
  answers: readonly ApprovalAnswer[] = [{ approve: true }],
) {
  const tools: ReturnType<Cold>[] = [];
  const pay = defineTool({
    name: 'pay',
    description: 'pays',
    parameters: z.object({ amount: z.number() }),
    execute: () => {
      const run = cold<AgentToolResult>('10ms (r|)', { r: { content: [{ type: 'text', text: 'paid' }] } });
      tools.push(run);
      return run;
    },
  });
  const calls = answers.map((_, i) => fauxToolCall('pay', { amount: 5 + i }, { id: `c${i + 1}` }));
  const held: AssistantMessage = { ...fauxMessage(calls), stopReason: 'toolUse' };
  const history: Message[] = [userMessage('pay'), held];
  const requests = new Map<string, ApprovalRequest>(
    calls.map((call) => [
      call.id,
      { requestId: `token-${call.id}`, toolCallId: call.id, toolName: 'pay', args: call.arguments, reason: 'ask' },
    ]),
  );
  const seen: (ResumedApproval | undefined)[] = [];
  const { hooks } = composeMiddleware([
    {
      name: 'gate',
      beforeToolCall: (ctx: BeforeToolCallContext) => {
        seen.push(ctx.approval);
        return gate(ctx) as BeforeToolCallAnswer;
      },
    },
  ]);
  const run$ = runAgentLoop({
    provider: new FauxProvider({ responses: [fauxMessage('done'), fauxMessage('done')] }),
    model,
    history,
    tools: [pay],
    hooks,
    resume: {
      assistant: held,
      answers: new Map(calls.map((call, i) => [call.id, answers[i]!])),
      requests,
    },
  });
  return { run$, tools, seen };
}

describe('resume re-runs beforeToolCall before the call runs', () => {
  it('order: the gate answers at 5 ms with ctx.approval set; only then the tool runs (10 ms)', () => {
    let probe: ReturnType<typeof resumed> | undefined;
    testScheduler().run(({ cold, expectObservable }) => {
      probe = resumed(cold, () => cold('5ms (c|)', { c: Decision.continue() }));
      expectObservable(probe.run$.pipe(marks)).toBe('15ms (oE|)');
    });
    expect(probe!.seen).toEqual([{ requestId: 'token-c1', answer: { approve: true } }]);
  });

  it('order: in a parallel batch both gates answer (5 ms each, in order) before either tool starts', () => {
    let probe: ReturnType<typeof resumed> | undefined;
    testScheduler().run(({ cold, expectObservable, flush, expectSubscriptions }) => {
      probe = resumed(cold, () => cold('5ms (c|)', { c: Decision.continue() }), [{ approve: true }, { approve: true }]);
      expectObservable(probe.run$.pipe(marks)).toBe('20ms (ooE|)');
      flush();
      expect(probe.tools).toHaveLength(2);
      for (const tool of probe.tools) expectSubscriptions(tool.subscriptions).toBe('10ms ^ 9ms !');
    });
  });

  it('edit: the gate sees the edited arguments, validated, and the answer', () => {
    let args: unknown;
    let probe: ReturnType<typeof resumed> | undefined;
    testScheduler().run(({ cold, expectObservable }) => {
      probe = resumed(
        cold,
        (ctx) => {
          args = ctx.args;
          return Decision.continue();
        },
        [{ edit: { amount: 2 } }],
      );
      expectObservable(probe.run$.pipe(marks)).toBe('10ms (oE|)');
    });
    expect(args).toEqual({ amount: 2 });
    expect(probe!.seen).toEqual([{ requestId: 'token-c1', answer: { edit: { amount: 2 } } }]);
  });

  it('short-circuit: a denial on resume makes the call denied; the tool is never subscribed; the run goes on', () => {
    let probe: ReturnType<typeof resumed> | undefined;
    testScheduler().run(({ cold, expectObservable }) => {
      probe = resumed(cold, () => cold('5ms (d|)', { d: { block: true, reason: 'past the deadline' } }));
      expectObservable(probe.run$.pipe(marks)).toBe('5ms (dE|)');
    });
    expect(probe!.tools).toHaveLength(0);
  });

  it('short-circuit: a pause on resume is a new approval request; the run suspends again; nothing runs', () => {
    let probe: ReturnType<typeof resumed> | undefined;
    const ends: AgentEvent[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      probe = resumed(cold, () =>
        cold('5ms (p|)', { p: Decision.pause({ reason: 'ask again', resumeToken: 'again' }) }),
      );
      const run$ = probe.run$.pipe(mergeMap((e) => (e.type === 'agent_end' ? (ends.push(e), [e]) : [e])));
      expectObservable(run$.pipe(marks)).toBe('5ms (qS|)');
    });
    expect(probe!.tools).toHaveLength(0);
    const end = ends[0] as Extract<AgentEvent, { type: 'agent_end' }>;
    expect(end.pending?.map((r) => r.requestId)).toEqual(['again']);
  });

  it('short-circuit: a stop on resume ends the run failed; the call gets an aborted result; nothing runs', () => {
    let probe: ReturnType<typeof resumed> | undefined;
    testScheduler().run(({ cold, expectObservable }) => {
      probe = resumed(cold, () => cold('5ms (s|)', { s: Decision.stop('failed', 'target gone') }));
      expectObservable(probe.run$.pipe(marks)).toBe('5ms (aF|)');
    });
    expect(probe!.tools).toHaveLength(0);
  });

  it('teardown: unsubscribing while the gate runs again unsubscribes the gate; the tool never runs', () => {
    let probe: ReturnType<typeof resumed> | undefined;
    testScheduler().run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const gate = cold('5ms (c|)', { c: Decision.continue() });
      probe = resumed(cold, () => gate);
      expectObservable(probe.run$.pipe(marks), '3ms !').toBe('');
      flush();
      expectSubscriptions(gate.subscriptions).toBe('^ 2ms !');
    });
    expect(probe!.tools).toHaveLength(0);
  });
});

describe('ToolGuard on resume', () => {
  const guard = (verdict: Parameters<typeof ToolGuard.when>[1]) =>
    new ToolGuard({ policy: ToolGuard.when(() => true, verdict) });

  it('ask counts as answered: the call runs, no second request', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const g = guard({ ask: 'payments need approval' });
      const { run$ } = resumed(cold, (ctx) => g.beforeToolCall(ctx));
      expectObservable(run$.pipe(marks)).toBe('10ms (oE|)');
    });
  });

  it('deny applies again: the call is denied', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const g = guard({ deny: 'account closed' });
      const { run$, tools } = resumed(cold, (ctx) => g.beforeToolCall(ctx));
      expectObservable(run$.pipe(marks)).toBe('(dE|)');
      expect(tools).toHaveLength(0);
    });
  });

  it('stop applies again: the run ends, cancelled when the verdict says so', () => {
    const outcomes: string[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const g = guard({ stop: 'the customer left', outcome: 'cancelled' });
      const { run$ } = resumed(cold, (ctx) => g.beforeToolCall(ctx));
      const ends = run$.pipe(mergeMap((e) => (e.type === 'agent_end' ? (outcomes.push(e.outcome), ['e']) : [])));
      expectObservable(ends).toBe('(e|)');
    });
    expect(outcomes).toEqual(['cancelled']);
  });
});
