import { finalize, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  agentTool,
  BudgetCap,
  defineTool,
  computeUsage,
  ConfigurationError,
  MemoryCheckpointer,
  subagentEventOf,
  usageOf,
  type AgentEndEvent,
  type AgentEvent,
  type AgentStartEvent,
  type AgentToolDetails,
  type AnyAgentTool,
  type Message,
  type Provider,
  type StreamEvent,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { collect, expectConsistentTranscript, resultText } from './helpers.js';

/** A provider that records each request's signal and whether its stream was torn down. */
function spy(inner: Provider): { provider: Provider; signals: (AbortSignal | undefined)[]; tornDown: () => number } {
  const signals: (AbortSignal | undefined)[] = [];
  let tornDown = 0;
  return {
    signals,
    tornDown: () => tornDown,
    provider: {
      id: inner.id,
      stream: (model, messages, request): Observable<StreamEvent> => {
        signals.push(request?.options?.signal);
        return inner.stream(model, messages, request).pipe(finalize(() => tornDown++));
      },
    },
  };
}

function toolResults(messages: readonly Message[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === 'toolResult');
}

/** The events of the sub-agent runs found in a parent run's events, with their wrappers. */
function nested(events: readonly AgentEvent[]) {
  return events.flatMap((event) => {
    const sub = subagentEventOf(event);
    return sub === undefined ? [] : [sub];
  });
}

describe('agentTool', () => {
  it("runs the child on the call's input, answers with its final text, and nests its events under the call", async () => {
    const child = new FauxProvider({ responses: [fauxMessage('The answer is 42.')] });
    const seenByChild: Message[][] = [];
    const research = agentTool({
      name: 'research',
      description: 'Researches a question',
      createAgent: () =>
        new Agent({
          provider: child,
          model: 'faux',
          systemPrompt: 'You research.',
          transformContext: (messages) => (seenByChild.push(messages), messages),
        }),
    });
    const parent = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('research', { prompt: 'What is the answer?' }, { id: 'call_1' })]),
        fauxMessage('It is 42.'),
      ],
    });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    const events = await collect(agent.prompt$('Ask the researcher'));

    // The child saw only its own prompt: its own context.
    expect(seenByChild).toHaveLength(1);
    expect(seenByChild[0]!.map((m) => [m.role, m.role === 'user' ? m.content : ''])).toEqual([
      ['user', 'What is the answer?'],
    ]);
    const result = toolResults(agent.state.messages)[0]!;
    expect(resultText(result)).toBe('The answer is 42.');
    expect(result.isError).toBe(false);

    const parentRunId = (events[0] as AgentStartEvent).runId;
    const wrapped = nested(events);
    const childStart = wrapped[0]!.event as AgentStartEvent;
    expect(childStart.type).toBe('agent_start');
    expect(childStart.parent).toEqual({ runId: parentRunId, toolCallId: 'call_1', depth: 0 });
    expect(childStart.runId).not.toBe(parentRunId);
    for (const sub of wrapped) {
      expect(sub).toMatchObject({
        toolName: 'research',
        toolCallId: 'call_1',
        parentRunId,
        childRunId: childStart.runId,
        depth: 1,
      });
      expect(sub.event.runId).toBe(childStart.runId);
    }
    const types = wrapped.map((sub) => sub.event.type);
    expect(types[types.length - 1]).toBe('agent_end');
    expect(types).toContain('message_update');
    // Every nested event arrived as an update of the call, between its start and end.
    const start = events.findIndex((e) => e.type === 'tool_execution_start');
    const end = events.findIndex((e) => e.type === 'tool_execution_end');
    const updates = events.flatMap((e, i) => (e.type === 'tool_execution_update' ? [i] : []));
    expect(updates.length).toBe(wrapped.length);
    expect(updates.every((i) => i > start && i < end)).toBe(true);

    const details = result.details as AgentToolDetails;
    expect(details).toMatchObject({ childRunId: childStart.runId, parentRunId, outcome: 'completed' });
  });

  it("adds the child's usage to the parent's run usage, stored on the result message", async () => {
    const childUsage = computeUsage(
      { input: 1000, output: 500 },
      { cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } },
    );
    const child = new FauxProvider({ responses: [{ ...fauxMessage('done'), usage: childUsage }] });
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => new Agent({ provider: child, model: 'faux' }),
    });
    const parent = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('research', { prompt: 'go' })]), fauxMessage('ok')],
    });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    const events = await collect(agent.prompt$('hi'));
    const end = events[events.length - 1] as AgentEndEvent;
    const result = toolResults(end.messages)[0]!;
    expect(result.usage).toEqual(childUsage);
    let own = 0;
    for (const m of end.messages) if (m.role === 'assistant') own += m.usage.totalTokens;
    expect(own).toBeGreaterThan(0);
    expect(end.usage.totalTokens).toBe(own + 1500);
    expect(end.usage.cost.total).toBeCloseTo(childUsage.cost.total, 10);
    expect(usageOf(end.messages)).toEqual(end.usage);
  });

  it("a BudgetCap on the parent counts its children's usage and stops the parent after that turn", async () => {
    const expensive = { ...fauxMessage('spent a lot'), usage: computeUsage({ input: 5000, output: 5000 }) };
    const child = new FauxProvider({ responses: [expensive, expensive] });
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => new Agent({ provider: child, model: 'faux' }),
    });
    const parent = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('research', { prompt: 'one' })]),
        fauxMessage([fauxToolCall('research', { prompt: 'two' })]),
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
    const end = events[events.length - 1] as AgentEndEvent;
    expect(end.outcome).toBe('stopped');
    expect(child.callCount).toBe(1);
    expect(parent.callCount).toBe(1);
  });

  it('unsubscribing the parent cancels the child: its provider request is aborted and its run closed', async () => {
    const childModel = spy(new FauxProvider({ responses: [fauxMessage('x'.repeat(200))], delayMs: 5_000 }));
    let childAgent: Agent | undefined;
    const childEnds: AgentEndEvent[] = [];
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => {
        childAgent = new Agent({ provider: childModel.provider, model: 'faux' });
        childAgent.subscribe((e) => void (e.type === 'agent_end' && childEnds.push(e)));
        return childAgent;
      },
    });
    const parent = new FauxProvider({ responses: [fauxMessage([fauxToolCall('research', { prompt: 'go' })])] });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    const seen: AgentEvent[] = [];
    const subscription = agent.prompt$('hi').subscribe((e) => seen.push(e));
    await expect.poll(() => childModel.signals.length).toBe(1);
    expect(childModel.signals[0]!.aborted).toBe(false);
    subscription.unsubscribe();
    expect(childModel.signals[0]!.aborted).toBe(true);
    expect(childModel.tornDown()).toBe(1);
    await childAgent!.waitForIdle();
    expect(childEnds.map((e) => e.outcome)).toEqual(['cancelled']);
    expect(childAgent!.state.messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
  });

  it("abort() on the parent cancels the child's provider request; the parent's call gets an aborted result", async () => {
    const childModel = spy(new FauxProvider({ responses: [fauxMessage('slow')], delayMs: 5_000 }));
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => new Agent({ provider: childModel.provider, model: 'faux' }),
    });
    const parent = new FauxProvider({ responses: [fauxMessage([fauxToolCall('research', { prompt: 'go' })])] });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    const run = agent.prompt('hi');
    await expect.poll(() => childModel.signals.length).toBe(1);
    agent.abort('stop it');
    const added = await run;
    expect(childModel.signals[0]!.aborted).toBe(true);
    expect(childModel.tornDown()).toBe(1);
    expect(toolResults(added)[0]).toMatchObject({ isError: true, outcome: 'aborted' });
    expectConsistentTranscript(agent.state.messages);
  });

  it("a deadline on the parent bounds the child: the child's request is aborted when it passes", async () => {
    const childModel = spy(new FauxProvider({ responses: [fauxMessage('slow')], delayMs: 5_000 }));
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => new Agent({ provider: childModel.provider, model: 'faux' }),
    });
    const parent = new FauxProvider({ responses: [fauxMessage([fauxToolCall('research', { prompt: 'go' })])] });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    const added = await agent.prompt('hi', { deadlineMs: 100 });
    expect(childModel.signals[0]!.aborted).toBe(true); // cut short: the child's model would answer after 5 s
    const result = toolResults(added)[0]!;
    expect(result).toMatchObject({ isError: true, outcome: 'aborted' });
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    expectConsistentTranscript(agent.state.messages);
  });

  it('limits the depth: an agent that calls itself stops at maxDepth with an error result', async () => {
    // Every run calls the tool once, then answers: d0 → d1 → d2 → d3, whose call is refused.
    const model = new FauxProvider();
    const depthsAsked: number[] = [];
    const recurse: AnyAgentTool = agentTool({
      name: 'recurse',
      description: 'Asks another copy of itself',
      createAgent: ({ parent }) => (
        depthsAsked.push(parent.depth),
        new Agent({ provider: model, model: 'faux', tools: [recurse] })
      ),
    });
    const call = () => fauxMessage([fauxToolCall('recurse', { prompt: 'again' })]);
    model.setResponses([
      call(),
      call(),
      call(),
      call(),
      fauxMessage('d3'),
      fauxMessage('d2'),
      fauxMessage('d1'),
      fauxMessage('d0'),
    ]);
    const agent = new Agent({ provider: model, model: 'faux', tools: [recurse] });
    const events = await collect(agent.prompt$('go'));
    expect(depthsAsked).toEqual([0, 1, 2]);
    expect(model.pendingResponseCount).toBe(0);
    expect(resultText(toolResults(agent.state.messages)[0]!)).toBe('d1');
    // The refused call is three levels down: find it in the nested events.
    const unwrap = (event: AgentEvent, depth: number): { event: AgentEvent; depth: number }[] => {
      const sub = subagentEventOf(event);
      return sub === undefined ? [{ event, depth }] : unwrap(sub.event, sub.depth);
    };
    const deepest = events
      .flatMap((e) => unwrap(e, 0))
      .filter((x) => x.event.type === 'tool_execution_end' && x.depth === 3);
    expect(deepest).toHaveLength(1);
    const refused = deepest[0]!.event as Extract<AgentEvent, { type: 'tool_execution_end' }>;
    expect(refused.isError).toBe(true);
    expect(resultText(refused.result)).toBe(
      'Agent tool recurse was not run: sub-agents may be nested at most 3 deep, and this call comes from depth 3',
    );
  });

  it('maxDepth: 1 refuses a call made by a sub-agent', async () => {
    const model = new FauxProvider();
    const recurse: AnyAgentTool = agentTool({
      name: 'recurse',
      description: 'Asks another copy of itself',
      maxDepth: 1,
      createAgent: () => new Agent({ provider: model, model: 'faux', tools: [recurse] }),
    });
    const call = () => fauxMessage([fauxToolCall('recurse', { prompt: 'again' })]);
    model.setResponses([call(), call(), fauxMessage('child done'), fauxMessage('parent done')]);
    const agent = new Agent({ provider: model, model: 'faux', tools: [recurse] });
    await agent.prompt('go');
    expect(model.pendingResponseCount).toBe(0);
    expect(resultText(toolResults(agent.state.messages)[0]!)).toBe('child done');
  });

  it("persists the child's thread under its own id, linked from the parent's thread", async () => {
    const checkpointer = new MemoryCheckpointer();
    const child = new FauxProvider({ responses: [fauxMessage('found it')] });
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: ({ threadId }) => new Agent({ provider: child, model: 'faux', checkpointer, threadId }),
    });
    const parent = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('research', { prompt: 'look' }, { id: 'c7' })]), fauxMessage('thanks')],
    });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research], checkpointer, threadId: 'lead' });
    await agent.prompt('start');

    const lead = await checkpointer.load('lead');
    const stored = toolResults(lead!.messages)[0]!;
    expect(stored.details).toMatchObject({ threadId: 'lead/research/c7', outcome: 'completed' });
    expect(stored.usage?.totalTokens).toBeGreaterThan(0);
    const childThread = await checkpointer.load('lead/research/c7');
    expect(childThread!.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(resultText(stored)).toBe('found it');
    expect((await checkpointer.listThreads()).map((t) => t.threadId).sort()).toEqual(['lead', 'lead/research/c7']);
  });

  it('a failing child gives an error result naming the failure; the parent goes on', async () => {
    const child = new FauxProvider({ responses: [] }); // no response queued: a provider error
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: () => new Agent({ provider: child, model: 'faux' }),
    });
    const parent = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('research', { prompt: 'go' })]), fauxMessage('sorry')],
    });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [research] });
    await agent.prompt('hi');
    const result = toolResults(agent.state.messages)[0]!;
    expect(result.isError).toBe(true);
    expect(resultText(result)).toBe('Agent tool research: the sub-agent failed: No more faux responses queued');
    expect(agent.state.messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
  });

  it('with a fixed agent: runs calls one at a time and the agent keeps its transcript; custom parameters', async () => {
    const child = new FauxProvider({ responses: [fauxMessage('first'), fauxMessage('second')] });
    const helper = new Agent({ provider: child, model: 'faux' });
    const tool = agentTool({
      name: 'helper',
      description: 'Helps',
      agent: helper,
      parameters: z.object({ city: z.string() }),
    });
    expect(tool.executionMode).toBe('sequential');
    const parent = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('helper', { city: 'Paris' }), fauxToolCall('helper', { city: 'Oslo' })]),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [tool] });
    await agent.prompt('hi');
    expect(toolResults(agent.state.messages).map(resultText)).toEqual(['first', 'second']);
    expect(helper.state.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      '{"city":"Paris"}',
      '{"city":"Oslo"}',
    ]);
  });

  it('a tool result whose usage is malformed becomes an error result, counted nowhere', async () => {
    const liar = defineTool({
      name: 'liar',
      description: 'Claims a usage',
      parameters: z.object({}),
      execute: () => ({ content: [{ type: 'text', text: 'x' }], usage: { ...computeUsage({ input: 1 }), output: -5 } }),
    });
    const parent = new FauxProvider({ responses: [fauxMessage([fauxToolCall('liar', {})]), fauxMessage('ok')] });
    const agent = new Agent({ provider: parent, model: 'faux', tools: [liar] });
    const added = await agent.prompt('hi');
    const result = toolResults(added)[0]!;
    expect(result.isError).toBe(true);
    expect(resultText(result)).toBe(
      'Tool liar returned an invalid result: usage .output must be a non-negative number',
    );
    expect(result.usage).toBeUndefined();
  });

  it('a run started with an invalid parent is refused before it starts', async () => {
    const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
    await expect(agent.prompt('hi', { parent: { runId: 'r', toolCallId: 'c', depth: -1 } })).rejects.toThrow(
      'parent must be { runId, toolCallId, depth } with a depth of 0 or more',
    );
    expect(agent.state.messages).toEqual([]);
  });

  it('refuses invalid options at once', () => {
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux' });
    expect(() => agentTool({ name: 'a', description: 'd' })).toThrow(ConfigurationError);
    expect(() => agentTool({ name: 'a', description: 'd', agent, createAgent: () => agent })).toThrow(
      'give exactly one of `agent` and `createAgent`',
    );
    expect(() => agentTool({ name: 'a', description: 'd', agent, maxDepth: 0 })).toThrow(
      '`maxDepth` must be a positive integer',
    );
    expect(() => agentTool({ name: 'bad name', description: 'd', agent })).toThrow(ConfigurationError);
  });
});
