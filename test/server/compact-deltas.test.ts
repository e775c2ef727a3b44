// Compact delta frames: every event of a run, encoded the way the server logs it and decoded the way the client reads
// it, equals the event the run emitted — text, thinking (with a signature arriving mid-block), tool-call arguments
// long enough that their preview is not refreshed on every delta, usage reported mid-stream, deltas merged by
// throttleDeltas — while the bytes stay linear in the answer.
import { lastValueFrom, Observable, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  Agent,
  defineTool,
  MessageAssembler,
  type Model,
  type Provider,
  type SequencedEvent,
  type StreamEvent,
} from 'cubepi';
import { numberEvents, throttleDeltas } from 'cubepi/operators';
import { z } from 'zod';
import { compactUpdate, DeltaDecoder } from '../../src/wire/compact-deltas.js';
import type { AssistantMessage } from 'cubepi';

const LONG_ARGUMENT = 'x'.repeat(9000);

/** A provider streaming every kind of delta, with the silent changes real providers make between events. */
const provider: Provider = {
  id: 'mixed',
  stream: (model: Model, messages) =>
    new Observable<StreamEvent>((subscriber) => {
      const asm = new MessageAssembler({ provider: 'mixed', model: model.id, timestamp: 1 });
      subscriber.next(asm.start());
      if (messages.at(-1)?.role === 'toolResult') {
        const text = asm.blockCount;
        subscriber.next(asm.startText());
        for (let i = 0; i < 300; i++) subscriber.next(asm.textDelta(text, `word${i} ü `));
        subscriber.next(asm.endText(text));
        subscriber.next(asm.done('stop'));
        subscriber.complete();
        return;
      }
      const thinking = asm.blockCount;
      subscriber.next(asm.startThinking());
      for (let i = 0; i < 50; i++) {
        subscriber.next(asm.thinkingDelta(thinking, `hmm ${i} `));
        if (i === 20) asm.appendSignature(thinking, 'sig'); // no event: the next snapshot differs in more than text
      }
      subscriber.next(asm.endThinking(thinking));
      asm.setUsage({ ...asm.partial.usage, input: 10 }); // no event either
      const call = asm.blockCount;
      subscriber.next(asm.startToolCall('call-1', 'save', undefined));
      const json = JSON.stringify({ name: 'notes', body: LONG_ARGUMENT });
      for (let i = 0; i < json.length; i += 7) subscriber.next(asm.toolCallDelta(call, json.slice(i, i + 7)));
      subscriber.next(asm.endToolCall(call));
      subscriber.next(asm.done('toolUse'));
      subscriber.complete();
    }),
};

const save = defineTool({
  name: 'save',
  description: 'Saves a note',
  parameters: z.object({ name: z.string(), body: z.string() }),
  execute: async (_id, { name }) => ({ content: [{ type: 'text', text: `saved ${name}` }] }),
});

async function run(merge: boolean): Promise<SequencedEvent[]> {
  const events = new Agent({ provider, model: { id: 'm', provider: 'mixed' }, tools: [save] }).prompt$('Go');
  return lastValueFrom((merge ? events.pipe(throttleDeltas(0)) : events).pipe(numberEvents(), toArray()));
}

describe.each([false, true])('compact deltas (merged by throttleDeltas: %s)', (merge) => {
  it('decode to the events the run emitted, and keep the bytes linear', async () => {
    const events = await run(merge);
    const decoder = new DeltaDecoder();
    let snapshot: AssistantMessage | undefined;
    const wholeDeltas: string[] = [];
    const textFrameSizes: number[] = [];
    for (const event of events) {
      const compact = compactUpdate(event, snapshot);
      if (event.type === 'message_update' || (event.type === 'message_start' && event.message.role === 'assistant')) {
        snapshot = event.message as AssistantMessage;
      } else if (event.type === 'message_end') snapshot = undefined;
      const whole = JSON.stringify(event);
      const sent = compact === undefined ? whole : JSON.stringify(compact);
      expect(decoder.decode(JSON.parse(sent) as SequencedEvent)).toEqual(JSON.parse(whole));
      if (event.type !== 'message_update' || !event.streamEvent.type.endsWith('_delta')) continue;
      if (compact === undefined) wholeDeltas.push(event.streamEvent.type);
      if (event.streamEvent.type === 'text_delta') textFrameSizes.push(sent.length);
    }
    // Whole: only the thinking delta after the signature arrived silently (its block changed in more than text).
    expect(wholeDeltas).toEqual(['thinking_delta']);
    // A text delta costs its own size, not the answer's so far (the answer grows to ~3,600 characters).
    expect(Math.max(...textFrameSizes)).toBeLessThan(merge ? 4000 : 200);
  });
});

it('a compact update with no message to grow is refused, not guessed', () => {
  const decoder = new DeltaDecoder();
  expect(() =>
    decoder.decode({
      type: 'message_update',
      runId: 'r',
      seq: 5,
      streamEvent: { type: 'text_delta', contentIndex: 0, delta: 'x' },
    } as never),
  ).toThrow(/no message to apply it to/);
});
