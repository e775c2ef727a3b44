import { lastValueFrom, take, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type Model, type StreamEvent, type UserMessage } from 'cubepi';
import { finalMessage } from 'cubepi/operators';
import { FauxProvider, fauxMessage, fauxText, fauxThinking, fauxToolCall } from 'cubepi/testing';
import { tick } from './helpers.js';

const model: Model = { id: 'faux-1', provider: 'faux', cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 } };
const hi: UserMessage = { role: 'user', content: 'hi', timestamp: 0 };
const events = (faux: FauxProvider, messages = [hi]) => lastValueFrom(faux.stream(model, messages).pipe(toArray()));

describe('FauxProvider', () => {
  it('a transcript it cannot read ends the call with an error event instead of hanging', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('never')] });
    const broken = {
      role: 'toolResult',
      toolCallId: 'c',
      toolName: 't',
      content: [null],
      isError: false,
      timestamp: 0,
    };
    const all = await events(faux, [hi, broken as never]);
    // It fails where it reads the transcript (the usage estimate, after the content): the terminal event is an error.
    expect(all.map((e) => e.type)).toEqual(['start', 'text_start', 'text_delta', 'text_delta', 'text_end', 'error']);
    expect(all.at(-1)).toMatchObject({ type: 'error', errorKind: 'unknown' });
    expect((all.at(-1) as { message: { errorMessage: string } }).message.errorMessage).toMatch(
      /^Faux provider failed: /,
    );
  });

  it('streams a scripted message in small chunks: start, block start/deltas/end, done', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxThinking('let me see', { signature: 's1' }),
          fauxText('Hello there'),
          fauxToolCall('echo', { i: 42 }, { id: 'c1' }),
        ]),
      ],
      chunkSize: 4,
    });
    const all = await events(faux);
    expect(all.map((e) => e.type)).toEqual([
      'start',
      'thinking_start',
      'thinking_delta',
      'thinking_delta',
      'thinking_delta',
      'thinking_end',
      'text_start',
      'text_delta',
      'text_delta',
      'text_delta',
      'text_end',
      'toolcall_start',
      'toolcall_delta',
      'toolcall_delta',
      'toolcall_end',
      'done',
    ]);
    const deltas = all
      .filter((e): e is Extract<StreamEvent, { type: 'toolcall_delta' }> => e.type === 'toolcall_delta')
      .map((e) => e.delta);
    expect(deltas.join('')).toBe('{"i":42}');
    const done = all.at(-1)!;
    expect(done.type === 'done' && done.message).toMatchObject({
      role: 'assistant',
      stopReason: 'toolUse',
      provider: 'faux',
      model: 'faux-1',
      content: [
        { type: 'thinking', thinking: 'let me see', signature: 's1' },
        { type: 'text', text: 'Hello there' },
        { type: 'toolCall', id: 'c1', name: 'echo', arguments: { i: 42 } },
      ],
    });
  });

  it('estimates usage and prices it with the model (4 characters a token)', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('12345678')] });
    const message = await lastValueFrom(faux.stream(model, [hi], { systemPrompt: 'abcdef' }).pipe(finalMessage()));
    // input: "abcdef" + "hi" = 8 chars = 2 tokens; output: 8 chars = 2 tokens.
    expect(message.usage).toMatchObject({ input: 2, output: 2, totalTokens: 4 });
    expect(message.usage.cost.total).toBeCloseTo((2 * 1 + 2 * 2) / 1e6);
  });

  it('keeps the usage a scripted message carries', async () => {
    const usage = {
      input: 10,
      output: 20,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
      totalTokens: 30,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
    const faux = new FauxProvider({ responses: [fauxMessage('x', { usage })] });
    expect((await lastValueFrom(faux.stream(model, [hi]).pipe(finalMessage()))).usage).toEqual(usage);
  });

  it('serves the queue first in, first out, one response per subscription, and counts calls', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] });
    expect(faux.pendingResponseCount).toBe(2);
    const stream = faux.stream(model, [hi]);
    expect(faux.callCount).toBe(0); // cold: nothing is sent before subscription
    const first = await lastValueFrom(stream.pipe(finalMessage()));
    const second = await lastValueFrom(stream.pipe(finalMessage()));
    expect([first.content, second.content]).toEqual([[{ type: 'text', text: 'one' }], [{ type: 'text', text: 'two' }]]);
    expect(faux.callCount).toBe(2);
    expect(faux.pendingResponseCount).toBe(0);
  });

  it('an empty queue is an error event, not an exception', async () => {
    const faux = new FauxProvider();
    const all = await events(faux);
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({
      type: 'error',
      errorKind: 'unknown',
      message: { stopReason: 'error', errorMessage: 'No more faux responses queued' },
    });
  });

  it('calls a factory with the messages, the model and what the model receives after the hooks', async () => {
    const tool = defineTool({ name: 'echo', description: 'd', parameters: z.object({}), execute: () => 'ok' });
    const seen: unknown[] = [];
    const faux = new FauxProvider({
      responses: [(messages, m, ctx) => (seen.push({ messages, model: m.id, ...ctx }), fauxMessage('ok'))],
    });
    await lastValueFrom(faux.stream(model, [hi], { systemPrompt: 'sys', tools: [tool] }).pipe(toArray()));
    expect(seen).toEqual([{ messages: [hi], model: 'faux-1', systemPrompt: 'sys', tools: [tool], callIndex: 0 }]);
  });

  it('streams a scripted error message and ends with an error event keeping its content', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage('partial', { stopReason: 'error', errorMessage: 'overloaded', errorKind: 'unavailable' }),
      ],
    });
    const all = await events(faux);
    expect(all.at(-1)).toMatchObject({
      type: 'error',
      errorKind: 'unavailable',
      message: { stopReason: 'error', errorMessage: 'overloaded', content: [{ type: 'text', text: 'partial' }] },
    });
  });

  it('streams raw invalid argument text, so the call ends with invalidArguments', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', {}, { id: 'c', rawArguments: '{"i": 1,' })])],
    });
    const message = await lastValueFrom(faux.stream(model, [hi]).pipe(finalMessage()));
    expect(message.content[0]).toEqual({
      type: 'toolCall',
      id: 'c',
      name: 'echo',
      arguments: {},
      invalidArguments: '{"i": 1,',
    });
  });

  it('stops producing between chunks when unsubscribed', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('abcdefghijklmnopqrstuvwxyz')], chunkSize: 1 });
    const taken = await lastValueFrom(faux.stream(model, [hi]).pipe(take(4), toArray()));
    expect(taken.map((e) => e.type)).toEqual(['start', 'text_start', 'text_delta', 'text_delta']);
  });

  it('with pacing, an unsubscribed stream produces nothing more', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('abcdefghij')], chunkSize: 1, delayMs: 5 });
    const seen: StreamEvent[] = [];
    const subscription = faux.stream(model, [hi]).subscribe((e) => seen.push(e));
    await tick(22);
    subscription.unsubscribe();
    const count = seen.length;
    expect(count).toBeGreaterThan(1);
    expect(count).toBeLessThan(12);
    await tick(40);
    expect(seen.length).toBe(count);
  });

  it('ends with an aborted error event when the request signal aborts mid-stream', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('abcdefghij')], chunkSize: 1, delayMs: 5 });
    const controller = new AbortController();
    const seen: StreamEvent[] = [];
    const done = new Promise<void>((resolve) =>
      faux
        .stream(model, [hi], { options: { signal: controller.signal } })
        .subscribe({ next: (e) => seen.push(e), complete: resolve }),
    );
    await tick(12);
    controller.abort();
    await done;
    const last = seen.at(-1)!;
    expect(last).toMatchObject({
      type: 'error',
      errorKind: 'aborted',
      message: { stopReason: 'aborted', errorMessage: 'Request aborted' },
    });
    const text = last.type === 'error' ? last.message.content[0] : undefined;
    expect(text).toMatchObject({ type: 'text' });
    expect((text as { text: string }).text.length).toBeLessThan(10);
  });

  it('does not send a request whose signal is already aborted', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('x')] });
    const controller = new AbortController();
    controller.abort();
    const all = await lastValueFrom(
      faux.stream(model, [hi], { options: { signal: controller.signal } }).pipe(toArray()),
    );
    expect(all.map((e) => e.type)).toEqual(['error']);
  });

  it('turns a throwing factory into an error event', async () => {
    const faux = new FauxProvider({
      responses: [
        () => {
          throw new Error('boom');
        },
      ],
    });
    expect((await events(faux))[0]).toMatchObject({
      type: 'error',
      message: { errorMessage: 'Faux response factory threw: boom' },
    });
  });

  it('setResponses replaces the queue and appendResponses adds to it', () => {
    const faux = new FauxProvider({ responses: [fauxMessage('a')] });
    faux.setResponses([fauxMessage('b'), fauxMessage('c')]);
    faux.appendResponses([fauxMessage('d')]);
    expect(faux.pendingResponseCount).toBe(3);
  });
});
