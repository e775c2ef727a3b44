// Agents as tools under the parent's limits: a BudgetCap on the parent cancels a sub-agent in mid-run, a cancelled
// sub-agent's spend so far counts in the parent's usage, and the parent's deadline is the child's.
import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  agentTool,
  BudgetCap,
  computeUsage,
  defineTool,
  RunAbortedError,
  usageOf,
  type AgentEndEvent,
  type AssistantMessage,
  type Message,
  type Provider,
  type StreamEvent,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { collect, deferred, expectConsistentTranscript, resultText } from './helpers.js';

/**
 * A provider that answers its first calls from `responses` (through a FauxProvider) and then hangs until its request's
 * signal fires, recording that signal; `hanging` resolves when the first hanging request arrives.
 */
function thenHang(responses: readonly AssistantMessage[]) {
  const faux = new FauxProvider({ responses });
  const hung: AbortSignal[] = [];
  const started = deferred();
  const provider: Provider = {
    id: 'faux',
    stream: (model, messages, request): Observable<StreamEvent> => {
      if (faux.callCount < responses.length) return faux.stream(model, messages, request);
      return new Observable<StreamEvent>(() => {
        hung.push(request!.options!.signal!);
        started.resolve();
      });
    },
  };
  return { provider, hung, hanging: started.promise };
}

const noop = defineTool({ name: 'noop', description: 'Does nothing', parameters: z.object({}), execute: () => 'ok' });

function toolResults(messages: readonly Message[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === 'toolResult');
}

describe('agentTool under the parent run', () => {
  it("a parent's BudgetCap reached by one sub-agent cancels a sibling in mid-run: its request aborted, its spend counted", async () => {
    // b spends 300 tokens on a first turn, then its second request hangs; a answers once b hangs, with 10,000 tokens:
    // the parent's total crosses 8,000 while b's request is in flight.
    const b = thenHang([
      { ...fauxMessage([fauxToolCall('noop', {})]), usage: computeUsage({ input: 200, output: 100 }) },
    ]);
    const fauxA = new FauxProvider({
      responses: [{ ...fauxMessage('spent a lot'), usage: computeUsage({ input: 5000, output: 5000 }) }],
    });
    const a: Provider = {
      id: 'faux',
      stream: (model, messages, request) =>
        new Observable<StreamEvent>((subscriber) => {
          let inner: { unsubscribe(): void } | undefined;
          void b.hanging.then(() => (inner = fauxA.stream(model, messages, request).subscribe(subscriber)));
          return () => inner?.unsubscribe();
        }),
    };
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: ({ toolCallId }) =>
        new Agent({ provider: toolCallId === 'a' ? a : b.provider, model: 'faux', tools: [noop] }),
    });
    const parent = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('research', { prompt: 'one' }, { id: 'a' }),
          fauxToolCall('research', { prompt: 'two' }, { id: 'b' }),
        ]),
        fauxMessage('never asked for'),
      ],
    });
    const agent = new Agent({
      provider: parent,
      model: 'faux',
      tools: [research],
      middleware: [new BudgetCap({ tokens: 8000 })],
    });
    const events = await collect(agent.prompt$('hi'));
    const end = events.at(-1) as AgentEndEvent;

    // b was cancelled while its request was in flight, not after it returned.
    expect(b.hung).toHaveLength(1);
    expect(b.hung[0]!.aborted).toBe(true);
    expect(b.hung[0]!.reason).toBeInstanceOf(RunAbortedError);
    expect((b.hung[0]!.reason as RunAbortedError).reason).toBe('budget');
    const own = usageOf(end.messages.filter((message) => message.role === 'assistant')).totalTokens;
    const [resultA, resultB] = toolResults(end.messages);
    expect(resultB).toMatchObject({ toolCallId: 'b', isError: true });
    // The parent's own model call counts too.
    expect(resultText(resultB!)).toBe(
      `Agent tool research: the sub-agent was cancelled: Run aborted: the budget of the parent run is spent (${own + 10_300} of 8000 tokens)`,
    );
    // Both children's spend is on their results and in the parent's usage; the parent stops after that turn.
    expect(resultA!.usage?.totalTokens).toBe(10_000);
    expect(resultB!.usage?.totalTokens).toBe(300);
    expect(end.usage.totalTokens).toBe(own + 10_300);
    expect(end.outcome).toBe('stopped');
    expect(parent.callCount).toBe(1);
    expectConsistentTranscript(agent.state.messages);
  });

  it("a sub-agent cancelled with its parent: what it spent so far is on the parent's aborted result and in its usage", async () => {
    const child = thenHang([
      { ...fauxMessage([fauxToolCall('noop', {})]), usage: computeUsage({ input: 200, output: 100 }) },
    ]);
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => new Agent({ provider: child.provider, model: 'faux', tools: [noop] }),
    });
    const parent = new FauxProvider({ responses: [fauxMessage([fauxToolCall('research', { prompt: 'go' })])] });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    const ends: AgentEndEvent[] = [];
    agent.subscribe((event) => void (event.type === 'agent_end' && ends.push(event)));
    const run = agent.prompt('hi');
    await child.hanging;
    agent.abort('enough');
    const added = await run;

    expect(child.hung[0]!.aborted).toBe(true);
    const result = toolResults(added)[0]!;
    expect(result).toMatchObject({ isError: true, outcome: 'aborted' });
    expect(result.usage?.totalTokens).toBe(300);
    const own = usageOf(added.filter((message) => message.role === 'assistant')).totalTokens;
    expect(ends[0]!.usage.totalTokens).toBe(own + 300);
    expect(usageOf(added)).toEqual(ends[0]!.usage);
    expectConsistentTranscript(agent.state.messages);
  });

  it("the parent's deadline is the child's, unless the child's own is earlier", async () => {
    const seen: { depth: number; deadlineAt: number | undefined }[] = [];
    const record = (depth: number) => (ctx: { deadlineAt?: number | undefined }) =>
      void seen.push({ depth, deadlineAt: ctx.deadlineAt });
    const childDeadlines = [600_000, 1_000];
    let made = 0;
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () =>
        new Agent({
          provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
          model: 'faux',
          deadlineMs: childDeadlines[made++],
          onRunStart: record(1),
        }),
    });
    const parent = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('research', { prompt: 'one' })]),
        fauxMessage([fauxToolCall('research', { prompt: 'two' })]),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research], onRunStart: record(0) });
    const before = Date.now();
    await agent.prompt('hi', { deadlineMs: 300_000 });

    const [top, first, second] = seen;
    expect(top!.depth).toBe(0);
    expect(top!.deadlineAt).toBeGreaterThanOrEqual(before + 300_000);
    // The first child's own deadline (10 minutes) is later than the parent's: the parent's applies.
    expect(first).toEqual({ depth: 1, deadlineAt: top!.deadlineAt });
    // The second child's own (1 s) is earlier: it keeps it.
    expect(second!.depth).toBe(1);
    expect(second!.deadlineAt).toBeLessThan(top!.deadlineAt!);
  });

  it('a tool that reports spend without a sub-agent: on its result message and in the run usage', async () => {
    const spender = defineTool({
      name: 'spend',
      description: 'Spends',
      parameters: z.object({}),
      execute: (_id, _args, { chargeUsage }) => {
        chargeUsage(computeUsage({ input: 40, output: 2 }));
        chargeUsage(computeUsage({ input: 50, output: 8 }));
        return 'spent';
      },
    });
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('spend', {})]), fauxMessage('ok')] });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [spender] });
    const events = await collect(agent.prompt$('hi'));
    const end = events.at(-1) as AgentEndEvent;
    const result = toolResults(end.messages)[0]!;
    expect(result.usage).toEqual(computeUsage({ input: 90, output: 10 }));
    expect(result.isError).toBe(false);
    const own = usageOf(end.messages.filter((message) => message.role === 'assistant')).totalTokens;
    expect(end.usage.totalTokens).toBe(own + 100);
  });
});
