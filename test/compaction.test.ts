// Compaction: summaries made by a (faux) model call past the threshold, stored with the thread, reused after a
// restore, folded into a second compaction; cancellation stores nothing; a context overflow is recovered once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  Compaction,
  COMPACTION_KEY,
  DEFAULT_COMPACTION_INSTRUCTIONS,
  defineTool,
  MemoryCheckpointer,
  retry,
  usageOf,
  type AgentEvent,
  type CompactionEntry,
  type Message,
  type Model,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxCallContext } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const MODEL: Model = { id: 'faux', provider: 'faux', contextWindow: 2_000 };
const LONG = 'lorem ipsum dolor sit amet '.repeat(15); // ~400 characters, ~115 tokens

interface Call {
  readonly kind: 'summary' | 'turn';
  readonly messages: readonly Message[];
}

/** A faux provider that summarises when asked to (by the compaction's instructions) and answers otherwise. */
function scriptedFaux(options: { overflowTurns?: number } = {}) {
  const calls: Call[] = [];
  let summaries = 0;
  let overflows = options.overflowTurns ?? 0;
  const faux = new FauxProvider();
  const respond = (messages: readonly Message[], _model: Model, ctx: FauxCallContext) => {
    if (ctx.systemPrompt === DEFAULT_COMPACTION_INSTRUCTIONS) {
      calls.push({ kind: 'summary', messages: messages.slice() });
      return fauxMessage(`SUMMARY ${++summaries}`);
    }
    calls.push({ kind: 'turn', messages: messages.slice() });
    if (overflows > 0) {
      overflows--;
      return fauxMessage([], {
        stopReason: 'error',
        errorKind: 'context_overflow',
        errorMessage: 'prompt is too long',
      });
    }
    return fauxMessage(`answer: ${LONG}`);
  };
  faux.setResponses(Array.from({ length: 100 }, () => respond));
  return { faux, calls, summaries: () => summaries };
}

const textOfFirst = (messages: readonly Message[]) => {
  const content = messages[0]!.content;
  return typeof content === 'string' ? content : '';
};

const storedEntry = (extra: Readonly<Record<string, unknown>> | undefined) =>
  extra?.[COMPACTION_KEY] as CompactionEntry | undefined;

describe('Compaction', () => {
  it('summarises older turns past triggerAt, stores the summary, and the model sees summary + recent turns', async () => {
    const { faux, calls } = scriptedFaux();
    const checkpointer = new MemoryCheckpointer();
    const events: AgentEvent[] = [];
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      checkpointer,
      threadId: 't',
      middleware: [new Compaction({ triggerAt: 0.5, keepRecent: 2 })],
    });
    agent.subscribe((event) => void events.push(event));
    let prompts = 0;
    while (!events.some((e) => e.type === 'compaction_end') && prompts < 20) {
      await agent.prompt(`question ${++prompts}: ${LONG}`);
    }
    const start = events.find((e) => e.type === 'compaction_start')!;
    const end = events.find((e) => e.type === 'compaction_end')!;
    expect(start).toMatchObject({ reason: 'threshold', fromSeq: 0, middleware: 'Compaction' });
    expect(end).toMatchObject({ outcome: 'stored', summary: 'SUMMARY 1' });
    // Below the threshold before, past it at the compaction.
    expect(start.type === 'compaction_start' && start.tokensBefore).toBeGreaterThanOrEqual(1_000);
    expect(end.type === 'compaction_end' && end.tokensAfter).toBeLessThan(1_000);
    // The summary call was announced as a model attempt of its own invocation.
    const invocationId = start.type === 'compaction_start' ? start.invocationId : '';
    expect(events.some((e) => e.type === 'model_attempt' && e.invocationId === invocationId)).toBe(true);

    // Stored: the summary, the range it replaces; the raw messages stay.
    const stored = await checkpointer.load('t');
    const entry = storedEntry(stored!.extra)!;
    expect(entry).toMatchObject({ summary: 'SUMMARY 1', fromSeq: 0 });
    expect(entry.throughSeq).toBe(start.type === 'compaction_start' ? start.throughSeq : -1);
    expect(stored!.messages).toHaveLength(prompts * 2);
    expect(stored!.messages).toEqual(agent.state.messages);

    // The turn call after the summary got the summary first, then the two most recent turns, verbatim.
    const last = calls[calls.length - 1]!;
    expect(last.kind).toBe('turn');
    expect(textOfFirst(last.messages)).toContain('SUMMARY 1');
    expect(textOfFirst(last.messages)).toContain(`messages 1–${entry.throughSeq}`);
    expect(last.messages.slice(1)).toEqual(stored!.messages.slice(entry.throughSeq, -1)); // before its own answer
    // Summarised once.
    expect(calls.filter((c) => c.kind === 'summary')).toHaveLength(1);
    // The summary's spend is the run's: in its agent_end usage, beside what its messages carry.
    const runEnd = events.slice(events.indexOf(end)).find((e) => e.type === 'agent_end')!;
    const summaryUsage = end.type === 'compaction_end' ? end.usage! : undefined;
    expect(summaryUsage!.totalTokens).toBeGreaterThan(0);
    if (runEnd.type !== 'agent_end') throw new Error('no agent_end');
    expect(runEnd.usage.totalTokens).toBe(usageOf(runEnd.messages).totalTokens + summaryUsage!.totalTokens);
  });

  it('is not repeated after a restore: a new Agent over the same SQLite file uses the stored summary', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cubepi-compaction-')), 'threads.db');
    const first = scriptedFaux();
    const writer = new Agent({
      provider: first.faux,
      model: MODEL,
      checkpointer: new SQLiteCheckpointer(file),
      threadId: 't',
      middleware: [new Compaction({ triggerAt: 0.5, keepRecent: 2 })],
    });
    for (let i = 0; first.summaries() === 0 && i < 20; i++) await writer.prompt(`question ${i}: ${LONG}`);
    expect(first.summaries()).toBe(1);

    const second = scriptedFaux();
    const events: AgentEvent[] = [];
    const reader = new Agent({
      provider: second.faux,
      model: MODEL,
      checkpointer: new SQLiteCheckpointer(file),
      threadId: 't',
      middleware: [new Compaction({ triggerAt: 0.5, keepRecent: 2 })],
    });
    reader.subscribe((event) => void events.push(event));
    await reader.prompt('one more, short');
    expect(second.calls.map((c) => c.kind)).toEqual(['turn']);
    expect(events.some((e) => e.type === 'compaction_start')).toBe(false);
    expect(textOfFirst(second.calls[0]!.messages)).toContain('SUMMARY 1');
  });

  it('a second compaction summarises the previous summary plus what came after, and replaces it', async () => {
    const { faux, calls, summaries } = scriptedFaux();
    const checkpointer = new MemoryCheckpointer();
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      checkpointer,
      threadId: 't',
      middleware: [new Compaction({ triggerAt: 0.5, keepRecent: 2 })],
    });
    for (let i = 0; summaries() < 2 && i < 40; i++) await agent.prompt(`question ${i}: ${LONG}`);
    expect(summaries()).toBe(2);
    const summaryCalls = calls.filter((c) => c.kind === 'summary');
    const firstThrough = (summaryCalls[0]!.messages[0]!.content as string).match(/question/g)!.length;
    const input = summaryCalls[1]!.messages[0]!.content as string;
    expect(input).toContain('Previous summary');
    expect(input).toContain('SUMMARY 1');
    // Only what came after the first summary is given again.
    expect(input).not.toContain('question 0:');
    const entry = storedEntry((await checkpointer.load('t'))!.extra)!;
    expect(entry.summary).toBe('SUMMARY 2');
    expect(entry.fromSeq).toBeGreaterThan(0);
    expect(entry.fromSeq).toBe(firstThrough * 2);
    const last = calls[calls.length - 1]!;
    expect(textOfFirst(last.messages)).toContain('SUMMARY 2');
    expect(textOfFirst(last.messages)).not.toContain('SUMMARY 1');
  });

  it('a compaction cancelled while its summary streams leaves the thread as it was; the next run compacts', async () => {
    const { faux, calls } = scriptedFaux();
    // A cheaper model of its own, streaming slowly: the run is cancelled once its request has arrived.
    let summaryRequests = 0;
    let cancel = true;
    const summarizer = new FauxProvider({ delayMs: 5 });
    const checkpointer = new MemoryCheckpointer();
    const agent: Agent = new Agent({
      provider: faux,
      model: MODEL,
      checkpointer,
      threadId: 't',
      middleware: [
        new Compaction({
          triggerAt: 0.5,
          keepRecent: 2,
          provider: summarizer,
          model: { id: 'small', provider: 'faux' },
        }),
      ],
    });
    summarizer.setResponses(
      Array.from({ length: 5 }, () => () => {
        summaryRequests++;
        if (cancel) setTimeout(() => agent.abort('stop that'), 0);
        return fauxMessage(cancel ? `SMALL SUMMARY ${'word '.repeat(200)}` : 'SMALL SUMMARY');
      }),
    );
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    let last: Message[] = [];
    for (let i = 0; summaryRequests === 0 && i < 20; i++) last = await agent.prompt(`question ${i}: ${LONG}`);
    expect(summaryRequests).toBe(1);
    expect(last[last.length - 1]).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    expect(events.some((e) => e.type === 'compaction_start')).toBe(true);
    expect(events.some((e) => e.type === 'compaction_end')).toBe(false);
    expect(agent.state.extra[COMPACTION_KEY]).toBeUndefined();
    expect(events.some((e) => e.type === 'state_patched')).toBe(false);
    const stored = await checkpointer.load('t');
    expect(storedEntry(stored!.extra)).toBeUndefined();
    expect(stored!.messages).toEqual(agent.state.messages);
    expectConsistentTranscript(agent.state.messages);
    // The turn's model was not called in the cancelled run after the compaction started.
    const turnsBefore = calls.length;

    cancel = false;
    await agent.prompt('again');
    expect(summaryRequests).toBe(2);
    expect(calls.length).toBe(turnsBefore + 1);
    expect(textOfFirst(calls[calls.length - 1]!.messages)).toContain('SMALL SUMMARY');
    expect((agent.state.extra[COMPACTION_KEY] as CompactionEntry).model).toBe('small');
  });

  it('keeps tool calls with their results and drops images with a note', async () => {
    const { faux, calls } = scriptedFaux();
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks something up',
      parameters: z.object({ q: z.string() }),
      execute: async () => ({ content: [{ type: 'text', text: `found: ${LONG}` }] }),
    });
    // The first answer calls the tool; the scripted responder answers the rest.
    faux.setResponses([
      fauxMessage([fauxToolCall('lookup', { q: 'x' }, { id: 'call-1' })]),
      ...Array.from(
        { length: 60 },
        () => (messages: readonly Message[], _model: Model, ctx: FauxCallContext) =>
          ctx.systemPrompt === DEFAULT_COMPACTION_INSTRUCTIONS
            ? (calls.push({ kind: 'summary', messages }), fauxMessage('SUMMARY'))
            : (calls.push({ kind: 'turn', messages }), fauxMessage(`answer: ${LONG}`)),
      ),
    ]);
    const agent = new Agent({
      provider: faux,
      model: { ...MODEL, input: ['text', 'image'] },
      tools: [lookup],
      middleware: [new Compaction({ triggerAt: 0.5, keepRecent: 2 })],
    });
    await agent.prompt({
      role: 'user',
      content: [
        { type: 'text', text: 'look at this' },
        { type: 'image', data: 'iVBORw0KGgoAAAANSUhEUg'.repeat(10), mimeType: 'image/png' },
      ],
      timestamp: Date.now(),
    });
    for (let i = 0; !calls.some((c) => c.kind === 'summary') && i < 20; i++) await agent.prompt(`q ${i}: ${LONG}`);
    const input = calls.find((c) => c.kind === 'summary')!.messages[0]!.content as string;
    expect(input).toContain('[an image was here; dropped from the summary]');
    expect(input).not.toContain('iVBORw0KGgo');
    expect(input).toMatch(/\[called tool lookup with \{"q":"x"\}\][\s\S]*Tool result \(lookup\): found:/);
    // What the model receives after the summary starts at a turn: no result without its call.
    const after = calls[calls.length - 1]!.messages;
    expect(after[1]!.role).not.toBe('toolResult');
    expectConsistentTranscript(after.slice(1));
  });

  it('a context_overflow answer triggers one compaction and one retry of the call', async () => {
    const { faux, calls } = scriptedFaux();
    const events: AgentEvent[] = [];
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      // Far from the threshold: only the overflow compacts.
      middleware: [
        new Compaction({ triggerAt: 1, keepRecent: 1, contextWindow: 1_000_000 }),
        retry({ maxAttempts: 2 }),
      ],
    });
    agent.subscribe((event) => void events.push(event));
    for (let i = 0; i < 3; i++) await agent.prompt(`question ${i}: ${LONG}`);
    expect(calls.every((c) => c.kind === 'turn')).toBe(true);
    calls.length = 0;
    faux.setResponses([
      fauxMessage([], { stopReason: 'error', errorKind: 'context_overflow', errorMessage: 'prompt is too long' }),
      fauxMessage('SUMMARY'),
      fauxMessage('fits now'),
    ]);
    const added = await agent.prompt('the one that overflows');
    expect(added[added.length - 1]).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expect(faux.pendingResponseCount).toBe(0);
    expect(events.filter((e) => e.type === 'compaction_start')).toMatchObject([{ reason: 'overflow' }]);
    expect(events.filter((e) => e.type === 'compaction_end')).toMatchObject([
      { outcome: 'stored', summary: 'SUMMARY' },
    ]);
    // The failed attempt is not in the transcript: the retried call answered.
    expect(agent.state.messages.filter((m) => m.role === 'assistant' && m.stopReason === 'error')).toEqual([]);
  });

  it('the summarising call goes through the wrappers: retry() retries it, under the compaction invocation', async () => {
    const summarizer = new FauxProvider({
      responses: [
        fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited', errorMessage: 'slow down' }),
        fauxMessage('SUMMARY after a retry'),
      ],
    });
    const { faux } = scriptedFaux();
    const events: AgentEvent[] = [];
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      middleware: [
        new Compaction({
          triggerAt: 0.5,
          keepRecent: 2,
          provider: summarizer,
          model: { id: 'small', provider: 'faux' },
        }),
        retry({ maxAttempts: 2, backoff: { initialMs: 0, jitter: 0 } }),
      ],
    });
    // Compaction's recovery (retry phase, order −1) nests outside retry(): both claim the retry slot, at two orders.
    expect(agent.describeMiddleware().wrapModelCall.layers.map((l) => [l.name, l.phase, l.order])).toEqual([
      ['Compaction', 'retry', -1],
      ['retry', 'retry', 0],
    ]);
    agent.subscribe((event) => void events.push(event));
    for (let i = 0; summarizer.pendingResponseCount > 0 && i < 20; i++) await agent.prompt(`question ${i}: ${LONG}`);
    const start = events.find((e) => e.type === 'compaction_start')!;
    const invocationId = start.type === 'compaction_start' ? start.invocationId : '';
    const attempts = events.filter((e) => e.type === 'model_attempt' && e.invocationId === invocationId);
    expect(attempts).toMatchObject([
      { attempt: 1, provider: 'faux', model: 'small' },
      { attempt: 2, previous: { errorKind: 'rate_limited' } },
    ]);
    expect(events.find((e) => e.type === 'compaction_end')).toMatchObject({
      outcome: 'stored',
      summary: 'SUMMARY after a retry',
    });
  });

  it('a second context_overflow is the answer: one compaction, one retry, never a loop', async () => {
    const { faux } = scriptedFaux();
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      middleware: [new Compaction({ triggerAt: 1, keepRecent: 1, contextWindow: 1_000_000 })],
    });
    for (let i = 0; i < 3; i++) await agent.prompt(`question ${i}: ${LONG}`);
    const overflow = () =>
      fauxMessage([], { stopReason: 'error', errorKind: 'context_overflow', errorMessage: 'prompt is too long' });
    faux.setResponses([overflow(), fauxMessage('SUMMARY'), overflow(), fauxMessage('never asked')]);
    const added = await agent.prompt('the one that overflows');
    expect(added[added.length - 1]).toMatchObject({ stopReason: 'error', errorKind: 'context_overflow' });
    expect(faux.pendingResponseCount).toBe(1);
    expect(agent.state.errorMessage).toContain('prompt is too long');
  });

  it('refuses bad options and a model without a context window', async () => {
    expect(() => new Compaction({ triggerAt: 0 })).toThrow(/triggerAt/);
    expect(() => new Compaction({ keepRecent: 0 })).toThrow(/keepRecent/);
    const faux = new FauxProvider({ responses: [fauxMessage('hi')] });
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [new Compaction()] });
    await expect(agent.prompt('hello')).rejects.toThrow(/has no contextWindow/);
  });
});
