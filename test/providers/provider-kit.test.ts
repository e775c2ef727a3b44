// The provider kit (cubepi/providers/kit) through the worked example of docs/provider-kit.md: a provider over plain
// fetch and server-sent events, against a local HTTP server. It must behave like the built-in providers.
import { readFileSync } from 'node:fs';
import { firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, textOf, userMessage, type Model } from 'cubepi';
import { AcmeProvider, type AcmeEvent } from './acme-provider.js';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const model: Model = {
  id: 'acme-1',
  provider: 'acme',
  reasoning: false,
  cost: { input: 1, output: 2, cacheRead: 0.5, cacheWrite: 0 },
};
const provider = () => new AcmeProvider({ apiKey: 'test-key', baseURL: server.url });
const wire = (...events: AcmeEvent[]): string => events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('');
const started: AcmeEvent = { type: 'response.start', id: 'r_1', model: 'acme-1-2026-01' };

describe('a provider built with the kit (docs/provider-kit.md)', () => {
  it('is the code the documentation shows', () => {
    const doc = readFileSync(new URL('../../docs/provider-kit.md', import.meta.url), 'utf8');
    const block = /<!-- acme-provider\.ts -->\s*```ts\n([\s\S]*?)```/.exec(doc)?.[1];
    const source = readFileSync(new URL('./acme-provider.ts', import.meta.url), 'utf8').replace(/^(\/\/.*\n)+/, '');
    expect(block).toBe(source);
  });

  it('streams text and a tool call, well formed, with the response id, the precise model and the usage', async () => {
    server.reply(
      sse(
        wire(
          started,
          { type: 'text.delta', text: 'Let me ' },
          { type: 'text.delta', text: 'check.' },
          { type: 'tool_call.start', id: 'call_1', name: 'weather' },
          { type: 'tool_call.delta', arguments: '{"city":' },
          { type: 'tool_call.delta', arguments: '"Oslo"}' },
          { type: 'tool_call.end' },
          { type: 'response.end', stop_reason: 'tool_use', usage: { input: 100, output: 20, cached: 40 } },
        ) + ': keep-alive\n\n',
      ),
    );
    const tools = [{ name: 'weather', description: 'Weather', inputSchema: { type: 'object' } }];
    const stream = await collectStream(
      provider().stream(model, [userMessage('Weather in Oslo?')], { systemPrompt: 'Be brief.', tools }),
    );
    expectWellFormed(stream);
    expect(trace(stream.events)).toEqual([
      'start',
      'text_start:0',
      'text_delta:0×2',
      'text_end:0',
      'toolcall_start:1',
      'toolcall_delta:1×2',
      'toolcall_end:1',
      'done',
    ]);
    expect(stream.message).toMatchObject({
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'toolCall', id: 'call_1', name: 'weather', arguments: { city: 'Oslo' } },
      ],
      stopReason: 'toolUse',
      responseId: 'r_1',
      provider: 'acme',
      model: 'acme-1-2026-01',
      usage: { input: 60, output: 20, cacheRead: 40, totalTokens: 120 },
    });
    expect(stream.message.usage.cost.total).toBeCloseTo((60 * 1 + 20 * 2 + 40 * 0.5) / 1e6);
    const [request] = server.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat' });
    expect(request!.headers.authorization).toBe('Bearer test-key');
    expect(request!.body).toMatchObject({
      model: 'acme-1',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [{ name: 'weather', parameters: { type: 'object' } }],
      stream: true,
    });
  });

  it('runs an Agent through a tool call and back', async () => {
    server.reply(
      sse(
        wire(
          started,
          { type: 'tool_call.start', id: 'call_1', name: 'weather' },
          { type: 'tool_call.delta', arguments: '{"city":"Oslo"}' },
          { type: 'tool_call.end' },
          { type: 'response.end', stop_reason: 'tool_use', usage: { input: 10, output: 5 } },
        ),
      ),
      sse(
        wire(
          { ...started, id: 'r_2' },
          { type: 'text.delta', text: '7 °C in Oslo.' },
          { type: 'response.end', stop_reason: 'end', usage: { input: 30, output: 6 } },
        ),
      ),
    );
    const weather = defineTool({
      name: 'weather',
      description: 'Current weather for a city',
      parameters: z.object({ city: z.string() }),
      execute: async (_id, { city }) => ({ content: [{ type: 'text', text: `${city}: 7 °C` }] }),
    });
    const agent = new Agent({ provider: provider(), model, tools: [weather] });
    const added = await agent.prompt('Weather in Oslo?');
    expect(added.map((m) => `${m.role}: ${textOf(m)}`)).toEqual([
      'user: Weather in Oslo?',
      'assistant: ',
      'toolResult: Oslo: 7 °C',
      'assistant: 7 °C in Oslo.',
    ]);
    expect(server.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Oslo: 7 °C' },
    ]);
  });

  it('turns an HTTP 429 into a rate_limited error event with the wait the server asked for', async () => {
    server.reply({
      kind: 'status',
      status: 429,
      headers: { 'retry-after': '3' },
      body: { error: { code: 'rate_limit_exceeded', message: 'Too many requests' } },
    });
    const { events, message } = await collectStream(provider().stream(model, [userMessage('hi')]));
    expect(trace(events)).toEqual(['error']);
    expect(message).toMatchObject({
      stopReason: 'error',
      errorKind: 'rate_limited',
      retryAfterMs: 3000,
      errorMessage: 'HTTP 429 rate_limit_exceeded: Too many requests',
    });
  });

  it('classifies an error event inside the stream by its code, keeping the text so far', async () => {
    server.reply(
      sse(
        wire(
          started,
          { type: 'text.delta', text: 'Par' },
          {
            type: 'error',
            error: { code: 'overloaded_error', message: 'Overloaded' },
          },
        ),
      ),
    );
    const stream = await collectStream(provider().stream(model, [userMessage('hi')]));
    expectWellFormed(stream);
    expect(stream.message).toMatchObject({
      stopReason: 'error',
      errorKind: 'unavailable',
      errorMessage: 'Overloaded',
      content: [{ type: 'text', text: 'Par' }],
    });
  });

  it('ends a stream cut before response.end, or carrying a chunk that is not JSON, with an error event', async () => {
    server.reply(sse(wire(started, { type: 'text.delta', text: 'Par' })), sse(wire(started) + 'data: {"type":\n\n'));
    const truncated = await collectStream(provider().stream(model, [userMessage('hi')]));
    expect(truncated.message).toMatchObject({ errorKind: 'unavailable', content: [{ type: 'text', text: 'Par' }] });
    expect(truncated.message.errorMessage).toContain('ended before response.end');
    const malformed = await collectStream(provider().stream(model, [userMessage('hi')]));
    expect(malformed.message).toMatchObject({ errorKind: 'unknown' });
    expect(malformed.message.errorMessage).toMatch(/^Malformed stream chunk/);
  });

  it('ends with an unknown error event when the mapper cannot place a wire event, keeping the content', async () => {
    server.reply(sse(wire(started, { type: 'text.delta', text: 'Par' }, { type: 'tool_call.delta', arguments: '{' })));
    const stream = await collectStream(provider().stream(model, [userMessage('hi')]));
    expectWellFormed(stream);
    expect(stream.message).toMatchObject({
      errorKind: 'unknown',
      errorMessage: 'Unexpected Acme stream event: tool_call.delta outside a tool call',
      content: [{ type: 'text', text: 'Par' }],
    });
  });

  it('ends with an unavailable error event when nothing listens', async () => {
    const closed = await ReplayServer.start();
    const url = closed.url;
    await closed.close();
    const { events, message } = await collectStream(
      new AcmeProvider({ apiKey: 'k', baseURL: url }).stream(model, [userMessage('hi')]),
    );
    expect(trace(events)).toEqual(['error']);
    expect(message.errorKind).toBe('unavailable');
  });

  it('closes the connection when unsubscribed, also before the first byte, and emits nothing more', async () => {
    server.reply({ kind: 'stall', body: wire(started, { type: 'text.delta', text: 'Par' }) }, { kind: 'hang' });
    const first = await firstValueFrom(
      provider()
        .stream(model, [userMessage('hi')])
        .pipe(take(3), toArray()),
    );
    expect(trace(first)).toEqual(['start', 'text_start:0', 'text_delta:0']);
    await expect(server.requests[0]!.closed).resolves.toEqual({ finished: false });
    const seen: string[] = [];
    const subscription = provider()
      .stream(model, [userMessage('hi')])
      .subscribe((event) => seen.push(event.type));
    while (server.requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    subscription.unsubscribe();
    await expect(server.requests[1]!.closed).resolves.toEqual({ finished: false });
    expect(seen).toEqual([]);
  });

  it("sends nothing when the caller's signal is already aborted", async () => {
    const options = { signal: AbortSignal.abort() };
    const { events, message } = await collectStream(provider().stream(model, [userMessage('hi')], { options }));
    expect(trace(events)).toEqual(['error']);
    expect(message).toMatchObject({ stopReason: 'aborted', errorKind: 'aborted' });
    expect(server.requests).toEqual([]);
  });

  it('ends with an aborted error event when the caller aborts its signal, and closes the connection', async () => {
    server.reply({ kind: 'stall', body: wire(started, { type: 'text.delta', text: 'Par' }) });
    const controller = new AbortController();
    const events = lastValueFrom(
      provider()
        .stream(model, [userMessage('hi')], { options: { signal: controller.signal } })
        .pipe(toArray()),
    );
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    setTimeout(() => controller.abort(), 50);
    const last = (await events).at(-1)!;
    expect(last).toMatchObject({ type: 'error', message: { stopReason: 'aborted', errorKind: 'aborted' } });
    await expect(server.requests[0]!.closed).resolves.toEqual({ finished: false });
  });

  it('ends a stalled stream with a timeout error event, keeping what came, and closes the connection', async () => {
    server.reply({ kind: 'stall', body: wire(started, { type: 'text.delta', text: 'Par' }) }, { kind: 'hang' });
    const stalled = await collectStream(
      provider().stream(model, [userMessage('hi')], { options: { idleTimeoutMs: 100 } }),
    );
    expect(stalled.message).toMatchObject({ errorKind: 'timeout', content: [{ type: 'text', text: 'Par' }] });
    expect(stalled.message.errorMessage).toBe(
      'Acme stream stalled: no stream event for 100 ms (idleTimeoutMs); the request was aborted',
    );
    await expect(server.requests[0]!.closed).resolves.toEqual({ finished: false });
    const silent = await collectStream(
      provider().stream(model, [userMessage('hi')], { options: { firstEventTimeoutMs: 100 } }),
    );
    expect(silent.message).toMatchObject({ errorKind: 'timeout', content: [] });
    await expect(server.requests[1]!.closed).resolves.toEqual({ finished: false });
  });
});
