// `cubepi run --json` (issue 35): the output grows linearly with the answer. A message_update line carries its delta,
// not the snapshot of the message so far (which made the output quadratic); nothing is lost: the deltas rebuild the
// answer, a toolcall_start names its call, and message_end carries the whole message.
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { runAgentLoop, textOf, userMessage, type AgentEvent, type Model } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { jsonEvent } from '../../src/cli/json-lines.js';

const MODEL: Model = { id: 'faux', provider: 'faux', contextWindow: 1_000_000, maxTokens: 100_000 };

async function eventsOf(answer: Parameters<typeof fauxMessage>[0]): Promise<AgentEvent[]> {
  return lastValueFrom(
    runAgentLoop({
      provider: new FauxProvider({ responses: [fauxMessage(answer)], chunkSize: 4 }),
      model: MODEL,
      prompts: [userMessage('go')],
    }).pipe(toArray()),
  );
}

const bytes = (events: readonly AgentEvent[]) =>
  events.reduce((sum, event) => sum + JSON.stringify(jsonEvent(event)).length, 0);

describe('--json lines', () => {
  it('grow linearly with the answer: four times the text, about four times the bytes', async () => {
    const small = bytes(await eventsOf('word '.repeat(1_000)));
    const large = bytes(await eventsOf('word '.repeat(4_000)));
    // Quadratic (the snapshot on every line) would be ~16×; the fixed lines make it a little under 4×.
    expect(large / small).toBeGreaterThan(3);
    expect(large / small).toBeLessThan(4.5);
  });

  it('lose nothing: the deltas rebuild the answer, message_end has it whole, toolcall_start names its call', async () => {
    const text = 'The answer is forty-two, as computed. '.repeat(20);
    const events = await eventsOf([{ type: 'text', text }, fauxToolCall('calc', { expr: '6*7' }, { id: 'c1' })]);
    const lines = events.map((event) => JSON.parse(JSON.stringify(jsonEvent(event))) as Record<string, unknown>);
    const updates = lines.filter((line) => line.type === 'message_update') as {
      message?: unknown;
      seq: number;
      streamEvent: { type: string; delta?: string; partial?: unknown; toolCall?: { name: string; id: string } };
    }[];
    expect(updates.length).toBeGreaterThan(10);
    for (const update of updates) {
      expect(update.message).toBeUndefined();
      expect(update.streamEvent.partial).toBeUndefined();
      expect(update.seq).toBeTypeOf('number');
    }
    const deltas = updates.filter((u) => u.streamEvent.type === 'text_delta').map((u) => u.streamEvent.delta);
    expect(deltas.join('')).toBe(text);
    expect(updates.find((u) => u.streamEvent.type === 'toolcall_start')!.streamEvent.toolCall).toMatchObject({
      id: 'c1',
      name: 'calc',
    });
    const end = events.find((e) => e.type === 'message_end' && e.message.role === 'assistant');
    expect(JSON.stringify(jsonEvent(end!))).toContain(JSON.stringify(text).slice(1, -1));
    expect(textOf((end as Extract<AgentEvent, { type: 'message_end' }>).message)).toBe(text);
  });
});
