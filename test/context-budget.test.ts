// ContextBudget: the request stays under window − reserve by estimated tokens, whole turns dropped from the oldest.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  Compaction,
  COMPACTION_KEY,
  ContextBudget,
  defineTool,
  estimateTokens,
  MemoryCheckpointer,
  type AgentEvent,
  type Message,
  type Model,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxCallContext } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const LONG = 'lorem ipsum dolor sit amet '.repeat(15);
const MODEL: Model = { id: 'faux', provider: 'faux', contextWindow: 2_000, maxTokens: 100 };

describe('ContextBudget', () => {
  it('drops whole turns from the oldest to stay under window − reserve, never a call without its result', async () => {
    const received: { messages: readonly Message[]; systemPrompt: string | undefined }[] = [];
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up',
      parameters: z.object({ q: z.string() }),
      execute: async () => ({ content: [{ type: 'text', text: `result ${LONG}` }] }),
    });
    let n = 0;
    const faux = new FauxProvider();
    // Every other answer calls the tool, so the history alternates plain turns and tool turns.
    faux.setResponses(
      Array.from({ length: 80 }, () => (messages: readonly Message[], _m: Model, ctx: FauxCallContext) => {
        received.push({ messages: messages.slice(), systemPrompt: ctx.systemPrompt });
        const last = messages[messages.length - 1]!;
        return last.role === 'user' && n++ % 2 === 0
          ? fauxMessage([fauxToolCall('lookup', { q: String(n) })])
          : fauxMessage(`answer ${LONG}`);
      }),
    );
    const events: AgentEvent[] = [];
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      systemPrompt: 'You are terse.',
      tools: [lookup],
      middleware: [new ContextBudget({ reserve: 600 })],
    });
    agent.subscribe((event) => void events.push(event));
    for (let i = 0; i < 8; i++) await agent.prompt(`question ${i}: ${LONG}`);

    const trimmed = events.filter((e) => e.type === 'context_trimmed');
    expect(trimmed.length).toBeGreaterThan(0);
    for (const event of trimmed) {
      expect(event).toMatchObject({ middleware: 'ContextBudget', budget: 1_400 });
      expect(event.dropped).toBeGreaterThan(0);
      expect(event.tokensBefore).toBeGreaterThan(1_400);
      expect(event.tokensAfter).toBeLessThanOrEqual(1_400);
    }
    for (const call of received) {
      // The system prompt always reaches the model; the context never starts with a tool result.
      expect(call.systemPrompt).toBe('You are terse.');
      expect(call.messages[0]!.role).toBe('user');
      expectConsistentTranscript(call.messages);
      expect(
        estimateTokens({ model: MODEL, messages: call.messages, systemPrompt: 'You are terse.', tools: [lookup] }),
      ).toBeLessThanOrEqual(1_400 * 1.5); // calibrated by the faux's own count, which differs from the heuristic
    }
    // The dropped messages are the oldest: what the model got is a suffix of the transcript (after a note, if any).
    const last = received[received.length - 1]!.messages;
    const transcript = agent.state.messages;
    const suffix = typeof last[0]!.content === 'string' && last[0]!.content.startsWith('[') ? last.slice(1) : last;
    const start = transcript.length - 1 - suffix.length;
    expect(transcript.slice(start, start + suffix.length)).toEqual(suffix);
    // The stored transcript is whole.
    expect(transcript).toHaveLength(8 * 2 + 4 * 2);
  });

  it('passes the context through untouched under the budget', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('hi')] });
    const events: AgentEvent[] = [];
    const agent = new Agent({ provider: faux, model: MODEL, middleware: [new ContextBudget({ reserve: 100 })] });
    agent.subscribe((event) => void events.push(event));
    await agent.prompt('hello');
    expect(events.some((e) => e.type === 'context_trimmed')).toBe(false);
  });

  it('refuses a negative reserve and a model without a window', async () => {
    expect(() => new ContextBudget({ reserve: -1 })).toThrow(/reserve/);
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('hi')] }),
      model: 'faux',
      middleware: [new ContextBudget()],
    });
    await expect(agent.prompt('hello')).rejects.toThrow(/has no contextWindow/);
  });
});

describe('a stored compaction belongs to its history', () => {
  it('is not applied to a thread whose message at throughSeq differs (a fork cut earlier, then grown)', async () => {
    const checkpointer = new MemoryCheckpointer();
    const summarize = (_messages: readonly Message[], _m: Model, ctx: FauxCallContext) =>
      fauxMessage(ctx.systemPrompt?.startsWith('You summarise') ? 'SUMMARY' : `answer ${LONG}`);
    const faux = new FauxProvider({ responses: Array.from({ length: 40 }, () => summarize) });
    const compaction = () => new Compaction({ triggerAt: 0.5, keepRecent: 2 });
    const agent = new Agent({ provider: faux, model: MODEL, checkpointer, threadId: 'a', middleware: [compaction()] });
    for (let i = 0; agent.state.extra[COMPACTION_KEY] === undefined && i < 20; i++) {
      await agent.prompt(`question ${i}: ${LONG}`);
    }
    const parent = (await checkpointer.load('a'))!;
    const { throughSeq } = parent.extra[COMPACTION_KEY] as { throughSeq: number };
    // A copy of the thread cut before throughSeq, grown with other messages, carrying the parent's extra.
    const kept = parent.messages.slice(0, throughSeq - 2);
    const grown: Message[] = [
      ...kept,
      { role: 'user', content: 'a different question', timestamp: 1 },
      { ...(parent.messages[1] as Message), timestamp: 2 },
    ];
    while (grown.length < parent.messages.length) grown.push({ role: 'user', content: 'more', timestamp: 3 });
    await checkpointer.append('b', grown);
    await checkpointer.saveExtra('b', parent.extra);

    const seen: (readonly Message[])[] = [];
    const probe = new FauxProvider({
      responses: Array.from({ length: 5 }, () => (messages: readonly Message[], m: Model, ctx: FauxCallContext) => {
        if (!ctx.systemPrompt?.startsWith('You summarise')) seen.push(messages.slice());
        return summarize(messages, m, ctx);
      }),
    });
    const fork = new Agent({
      provider: probe,
      model: { ...MODEL, contextWindow: 1_000_000 },
      checkpointer,
      threadId: 'b',
      middleware: [compaction()],
    });
    await fork.prompt('on the fork');
    expect(seen).toHaveLength(1);
    expect(seen[0]![0]).toEqual(grown[0]); // the whole history, not the parent's summary
    expect(seen[0]).toHaveLength(grown.length + 1);
  });
});
