// Issue 31 item 8 (seed 002 §8 "事件要带单调序号"): every event a run emits in process carries its run's `seq`,
// 1 for `agent_start`, then one more per event in delivery order — without the server.
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ContextBudget,
  defineTool,
  runAgentLoop,
  userMessage,
  type AgentEvent,
  type Middleware,
  type Model,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

const MODEL: Model = { id: 'faux', provider: 'faux', contextWindow: 2_000, maxTokens: 100 };

const slow = defineTool({
  name: 'slow',
  description: 'Answers after a tick',
  parameters: z.object({ n: z.number() }),
  execute: async (_id, { n }) => {
    await new Promise((resolve) => setImmediate(resolve));
    return { content: [{ type: 'text', text: `n=${n}` }] };
  },
});

/** The run's events are numbered 1, 2, 3 … in the order they arrived, with no gap and no repeat. */
function expectNumbered(events: readonly AgentEvent[]): void {
  expect(events.length).toBeGreaterThan(0);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
}

describe('numbered events (seq)', () => {
  it('numbers every event of a run with parallel tools and streamed deltas, the same on events$ and prompt$', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('slow', { n: 1 }, { id: 'a' }), fauxToolCall('slow', { n: 2 }, { id: 'b' })]),
        fauxMessage('All done, both answered.'),
      ],
      chunkSize: 3,
    });
    const agent = new Agent({ provider: faux, model: MODEL, tools: [slow] });
    const hot: AgentEvent[] = [];
    const subscription = agent.events$.subscribe((event) => hot.push(event));
    const cold = await lastValueFrom(agent.prompt$('go').pipe(toArray()));
    subscription.unsubscribe();

    expectNumbered(cold);
    expect(cold[0]).toMatchObject({ type: 'agent_start', seq: 1 });
    expect(cold.at(-1)).toMatchObject({ type: 'agent_end', seq: cold.length });
    expect(cold.filter((e) => e.type === 'message_update').length).toBeGreaterThan(3);
    expect(cold.filter((e) => e.type === 'tool_execution_end')).toHaveLength(2);
    // The hot stream delivers the same events, numbered the same.
    expect(hot.map((e) => [e.type, e.seq])).toEqual(cold.map((e) => [e.type, e.seq]));
  });

  it('counts per run: the second run of an agent starts at 1 again, under its own runId', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] });
    const agent = new Agent({ provider: faux, model: MODEL });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    await agent.prompt('first');
    await agent.prompt('second');
    const runs = [...new Set(events.map((e) => e.runId))];
    expect(runs).toHaveLength(2);
    for (const runId of runs) expectNumbered(events.filter((e) => e.runId === runId));
  });

  it('numbers the Observable loop (runAgentLoop) too', async () => {
    const events = await lastValueFrom(
      runAgentLoop({
        provider: new FauxProvider({ responses: [fauxMessage('hello there')], chunkSize: 2 }),
        model: MODEL,
        prompts: [userMessage('hi')],
      }).pipe(toArray()),
    );
    expectNumbered(events);
  });

  it("numbers a middleware's events and hook_error in their place in the run", async () => {
    const LONG = 'lorem ipsum dolor sit amet '.repeat(20);
    const faux = new FauxProvider({
      responses: Array.from({ length: 10 }, () => fauxMessage(`answer ${LONG}`)),
    });
    const failing: Middleware = {
      name: 'analytics',
      onError: 'skip',
      transformSystemPrompt: () => {
        throw new Error('analytics down');
      },
    };
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      middleware: [new ContextBudget({ reserve: 600 }), failing],
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    for (let i = 0; i < 8; i++) await agent.prompt(`question ${i}: ${LONG}`);

    const trimmed = events.filter((e) => e.type === 'context_trimmed');
    expect(trimmed.length).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === 'hook_error').length).toBeGreaterThan(0);
    for (const runId of new Set(events.map((e) => e.runId))) expectNumbered(events.filter((e) => e.runId === runId));
  });
});
