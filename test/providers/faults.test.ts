// Failures are values and cancellation is unsubscription, for each provider, against a local server that misbehaves.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  Agent,
  retry,
  textOf as messageText,
  userMessage,
  type Model,
  type Provider,
  type StreamEvent,
  type StreamOptions,
} from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';
import { recordingBodies } from './recordings.js';
import { ReplayServer, sse, type RecordedRequest } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

/** The SSE events of a body, split on blank lines (each keeps its own framing). */
const eventsOf = (body: string) =>
  body
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => `${e}\n\n`);

interface ProviderCase {
  readonly name: string;
  readonly model: Model;
  /** A provider whose SDK client logs nothing (a malformed chunk makes the SDKs log the chunk). */
  readonly make: (baseURL: string) => Provider;
  /** A complete recorded text response. */
  readonly body: string;
  /** How many leading events of `body` carry some text already. */
  readonly eventsWithText: number;
  /** The body's events up to the text, without the terminal event. */
  readonly truncated: string;
  /** Error bodies as this API sends them. */
  readonly errorBody: (status: number, code: string, message: string) => unknown;
  readonly malformedEvent: string;
}

const anthropicBody = recordingBodies('anthropic', 'text-basic.vercel-ai.jsonl')[0]!;
const chatBody = recordingBodies('openai-chat', 'text-with-usage.openai-python.sse')[0]!;
const responsesBody = recordingBodies('openai-responses', 'text-short.vercel-ai.jsonl')[0]!;

const CASES: ProviderCase[] = [
  {
    name: 'AnthropicProvider',
    model: { id: 'claude-sonnet-4-6', provider: 'anthropic' },
    make: (baseURL) =>
      new AnthropicProvider({ client: new Anthropic({ apiKey: 'k', baseURL, maxRetries: 0, logLevel: 'off' }) }),
    body: anthropicBody,
    eventsWithText: 5, // message_start, content_block_start, ping, two text deltas
    truncated: eventsOf(anthropicBody).slice(0, -1).join(''), // everything but message_stop
    errorBody: (_status, code, message) => ({ type: 'error', error: { type: code, message } }),
    malformedEvent: 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"te\n\n',
  },
  {
    name: 'OpenAIProvider',
    model: { id: 'gpt-4o', provider: 'openai' },
    make: (baseURL) =>
      new OpenAIProvider({ client: new OpenAI({ apiKey: 'k', baseURL, maxRetries: 0, logLevel: 'off' }) }),
    body: chatBody,
    eventsWithText: 3,
    truncated: eventsOf(chatBody).slice(0, 10).join(''), // text deltas, then the connection closes cleanly
    errorBody: (_status, code, message) => ({ error: { message, type: 'invalid_request_error', code } }),
    malformedEvent: 'data: {"id":"chatcmpl-x","choices":[{"index":0,"delta":{"content":"broken\n\n',
  },
  {
    name: 'OpenAIResponsesProvider',
    model: { id: 'gpt-4.1-nano', provider: 'openai' },
    make: (baseURL) =>
      new OpenAIResponsesProvider({ client: new OpenAI({ apiKey: 'k', baseURL, maxRetries: 0, logLevel: 'off' }) }),
    body: responsesBody,
    eventsWithText: 5, // created, in_progress, item added, part added, a text delta
    truncated: eventsOf(responsesBody).slice(0, -1).join(''), // everything but response.completed
    errorBody: (_status, code, message) => ({ error: { message, type: 'invalid_request_error', code } }),
    malformedEvent: 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":\n\n',
  },
];

const baseURL = (c: ProviderCase) => (c.name === 'AnthropicProvider' ? server.url : `${server.url}/v1`);
const stream = (c: ProviderCase, signal?: AbortSignal) =>
  c.make(baseURL(c)).stream(c.model, [userMessage('Hi')], signal === undefined ? {} : { options: { signal } });
const textOf = (events: readonly StreamEvent[]) =>
  events
    .filter((e) => e.type === 'text_delta')
    .map((e) => (e as { delta: string }).delta)
    .join('');

/** Waits (a bounded number of event-loop turns) until the server has received `count` requests. */
async function requestArrived(count = 1): Promise<RecordedRequest> {
  for (let i = 0; i < 2000 && server.requests.length < count; i++) await new Promise((r) => setTimeout(r, 5));
  expect(server.requests).toHaveLength(count);
  return server.requests[count - 1]!;
}

describe.each(CASES)('$name: failures are classified error events', (c) => {
  it('429 with retry-after → rate_limited with retryAfterMs, no retry by the SDK, no start event', async () => {
    server.reply({
      kind: 'status',
      status: 429,
      headers: { 'retry-after': '7' },
      body: c.errorBody(429, 'rate_limit_error', 'Too many requests'),
    });
    const collected = await collectStream(stream(c));
    expectWellFormed(collected);
    expect(trace(collected.events)).toEqual(['error']);
    expect(collected.events[0]).toMatchObject({ type: 'error', errorKind: 'rate_limited', retryAfterMs: 7000 });
    expect(collected.message).toMatchObject({ stopReason: 'error', errorKind: 'rate_limited', content: [] });
    expect(collected.message.errorMessage).toContain('HTTP 429');
    expect(collected.message.errorMessage).toContain('Too many requests');
    expect(server.requests).toHaveLength(1);
  });

  it.each([
    [500, 'api_error', 'Internal server error', 'unavailable'],
    [529, 'overloaded_error', 'Overloaded', 'unavailable'],
    [401, 'authentication_error', 'invalid x-api-key', 'auth'],
    [400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum', 'context_overflow'],
    [422, 'invalid_request_error', 'messages: field required', 'bad_request'],
  ])('HTTP %i → %s classified as %s', async (status, code, text, kind) => {
    server.reply({ kind: 'status', status, body: c.errorBody(status, code, text) });
    const { message } = await collectStream(stream(c));
    expect(message).toMatchObject({ stopReason: 'error', errorKind: kind });
    expect(message.errorMessage).toContain(text);
  });

  it('a connection reset mid-stream → unavailable, with the text received so far', async () => {
    server.reply({ kind: 'drop', body: eventsOf(c.body).slice(0, c.eventsWithText).join('') });
    const collected = await collectStream(stream(c));
    expectWellFormed(collected);
    const received = textOf(collected.events);
    expect(received).not.toBe('');
    expect(collected.message).toMatchObject({
      stopReason: 'error',
      errorKind: 'unavailable',
      content: [{ type: 'text', text: received }],
    });
  });

  it('a malformed chunk → an error event (not an exception), with the text received so far', async () => {
    server.reply(sse(eventsOf(c.body).slice(0, c.eventsWithText).join('') + c.malformedEvent));
    const collected = await collectStream(stream(c));
    expectWellFormed(collected);
    expect(collected.message).toMatchObject({ stopReason: 'error', errorKind: 'unknown' });
    expect(collected.message.errorMessage).toMatch(/^Malformed stream chunk/);
    expect(collected.message.content).toEqual([{ type: 'text', text: textOf(collected.events) }]);
  });

  it('a stream that ends without its terminal event is an error, never a success', async () => {
    server.reply(sse(c.truncated));
    const collected = await collectStream(stream(c));
    expectWellFormed(collected);
    expect(collected.events.at(-1)!.type).toBe('error');
    expect(collected.message).toMatchObject({ stopReason: 'error', errorKind: 'unavailable' });
    expect(collected.message.errorMessage).toMatch(/truncated/);
    expect(textOf(collected.events)).not.toBe('');
  });
});

describe.each(CASES)('$name: cancellation', (c) => {
  it('unsubscribing while waiting for the first byte aborts the request: the server sees the socket close', async () => {
    server.reply({ kind: 'hang' });
    const events: StreamEvent[] = [];
    const subscription = stream(c).subscribe((e) => events.push(e));
    const request = await requestArrived();
    subscription.unsubscribe();
    expect(await request.closed).toEqual({ finished: false });
    expect(events).toEqual([]);
  });

  it('aborting options.signal while waiting for the first byte ends with an aborted error event and closes the socket', async () => {
    server.reply({ kind: 'hang' });
    const controller = new AbortController();
    const done = collectStream(stream(c, controller.signal));
    const request = await requestArrived();
    controller.abort();
    const collected = await done;
    expect(trace(collected.events)).toEqual(['error']);
    expect(collected.message).toMatchObject({ stopReason: 'aborted', errorKind: 'aborted', content: [] });
    expect(await request.closed).toEqual({ finished: false });
  });

  it('aborting options.signal mid-stream keeps the text so far and emits nothing after the aborted error', async () => {
    server.reply({ kind: 'stall', body: eventsOf(c.body).slice(0, c.eventsWithText).join('') });
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    const completed = new Promise<void>((resolve, reject) =>
      stream(c, controller.signal).subscribe({
        next: (event) => {
          events.push(event);
          if (event.type === 'text_delta') controller.abort();
        },
        error: reject,
        complete: resolve,
      }),
    );
    await completed;
    const last = events.at(-1)!;
    expect(last.type).toBe('error');
    expect(events.filter((e) => e.type === 'text_delta')).toHaveLength(1);
    expect(last.type === 'error' && last.message).toMatchObject({
      stopReason: 'aborted',
      content: [{ type: 'text', text: textOf(events) }],
    });
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it('unsubscribing mid-stream aborts the request and nothing more is emitted', async () => {
    server.reply({ kind: 'stall', body: eventsOf(c.body).slice(0, c.eventsWithText).join('') });
    const events: StreamEvent[] = [];
    const subscription = stream(c).subscribe((event) => {
      events.push(event);
      if (event.type === 'text_delta') subscription.unsubscribe();
    });
    expect(await (await requestArrived()).closed).toEqual({ finished: false });
    expect(events.at(-1)!.type).toBe('text_delta');
    expect(events.some((e) => e.type === 'done' || e.type === 'error')).toBe(false);
  });

  it('an already aborted signal sends no request', async () => {
    const controller = new AbortController();
    controller.abort();
    const collected = await collectStream(stream(c, controller.signal));
    expect(trace(collected.events)).toEqual(['error']);
    expect(collected.message.stopReason).toBe('aborted');
    expect(server.requests).toHaveLength(0);
  });

  it('is cold: nothing is sent before subscription, and each subscription sends its own request', async () => {
    server.reply(sse(c.body), sse(c.body));
    const stream$ = stream(c);
    await new Promise((r) => setTimeout(r, 20));
    expect(server.requests).toHaveLength(0);
    const [first, second] = await Promise.all([collectStream(stream$), collectStream(stream$)]);
    expect(first.message.stopReason).toBe('stop');
    expect(second.message.content).toEqual(first.message.content);
    expect(server.requests).toHaveLength(2);
  });
});

// Chat Completions included: the openai SDK swallows its `data: [DONE]` and reads on until the server closes, so the
// provider ends at the usage chunk that comes last (see completionsWireMapper).
const streamWith = (c: ProviderCase, options: Omit<StreamOptions, 'signal'>) =>
  c.make(baseURL(c)).stream(c.model, [userMessage('Hi')], { options });

describe.each(CASES)('$name: a stalled stream ends as a timeout, and its connection is closed', (c) => {
  it.each([
    ['the response headers never come', { kind: 'hang' } as const],
    ['the headers come, then nothing', { kind: 'stall', body: '' } as const],
  ])('%s → timeout after firstEventTimeoutMs, no start event', async (_, reply) => {
    server.reply(reply);
    const collected = await collectStream(streamWith(c, { firstEventTimeoutMs: 150 }));
    expectWellFormed(collected);
    expect(trace(collected.events)).toEqual(['error']);
    expect(collected.message).toMatchObject({ stopReason: 'error', errorKind: 'timeout', content: [] });
    expect(collected.message.errorMessage).toMatch(
      /stream stalled: no stream event within 150 ms \(firstEventTimeoutMs\)/,
    );
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it('events, then silence → timeout after idleTimeoutMs, keeping the text so far', async () => {
    server.reply({ kind: 'stall', body: eventsOf(c.body).slice(0, c.eventsWithText).join('') });
    const collected = await collectStream(streamWith(c, { firstEventTimeoutMs: 5_000, idleTimeoutMs: 150 }));
    expectWellFormed(collected);
    expect(collected.events.at(-1)).toMatchObject({ type: 'error', errorKind: 'timeout' });
    expect(collected.message.errorMessage).toMatch(/no stream event for 150 ms \(idleTimeoutMs\)/);
    expect(messageText(collected.message)).not.toBe('');
    expect(messageText(collected.message)).toBe(textOf(collected.events));
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it('a slow but healthy stream (every gap under the idle limit, the whole call far over it) completes', async () => {
    server.reply({ kind: 'sse', body: c.body, eventGapMs: 40 });
    const started = Date.now();
    const collected = await collectStream(streamWith(c, { firstEventTimeoutMs: 200, idleTimeoutMs: 200 }));
    expectWellFormed(collected);
    expect(collected.message.stopReason).toBe('stop');
    // Guards the test itself: the call outlasted the idle limit several times over, so a timer that never re-armed
    // (or one reset by nothing) would have fired.
    expect(Date.now() - started).toBeGreaterThan(2 * 200);
  });

  it('through an Agent with retry(), a stall before any content is retried and the run completes', async () => {
    server.reply({ kind: 'stall', body: '' }, sse(c.body));
    const agent = new Agent({
      provider: c.make(baseURL(c)),
      model: c.model,
      middleware: [retry({ backoff: { initialMs: 1, jitter: 0 } })],
      streamOptions: { firstEventTimeoutMs: 150 },
    });
    const added = await agent.prompt('Hi');
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expect(server.requests).toHaveLength(2);
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it('a limit that is not a positive number is a ConfigurationError at construction', () => {
    expect(
      () => new Agent({ provider: c.make(baseURL(c)), model: c.model, streamOptions: { idleTimeoutMs: 0 } }),
    ).toThrow(/streamOptions.idleTimeoutMs` must be a positive number/);
  });
});

describe.each(CASES)('$name: releasing the connection', (c) => {
  it('after the terminal event the connection closes, even when the server would keep it open', async () => {
    server.reply({ kind: 'stall', body: c.body });
    const collected = await collectStream(stream(c));
    expectWellFormed(collected);
    expect(collected.events.at(-1)!.type).toBe('done');
    expect(collected.message.stopReason).toBe('stop');
    expect(await (await requestArrived()).closed).toEqual({ finished: false });
  });
});

describe('AnthropicProvider: errors inside the stream', () => {
  const anthropic = CASES[0]!;

  it('an error event mid-stream (overloaded_error) → unavailable, with the text so far', async () => {
    server.reply(
      sse(
        eventsOf(anthropicBody).slice(0, 5).join('') +
          'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
      ),
    );
    const collected = await collectStream(stream(anthropic));
    expectWellFormed(collected);
    expect(collected.message).toMatchObject({
      stopReason: 'error',
      errorKind: 'unavailable',
      content: [{ type: 'text' }],
    });
    expect(collected.message.errorMessage).toBe('overloaded_error: Overloaded');
  });

  it('event, block and delta types this SDK does not know are ignored safely', async () => {
    const [start, ...rest] = eventsOf(anthropicBody);
    server.reply(
      sse(
        start +
          'event: future_event\ndata: {"type":"future_event","detail":1}\n\n' +
          'event: content_block_start\ndata: {"type":"content_block_start","index":7,"content_block":{"type":"hologram","id":"h1"}}\n\n' +
          'event: content_block_delta\ndata: {"type":"content_block_delta","index":7,"delta":{"type":"hologram_delta","x":1}}\n\n' +
          'event: content_block_stop\ndata: {"type":"content_block_stop","index":7}\n\n' +
          rest.join(''),
      ),
    );
    const collected = await collectStream(stream(anthropic));
    expectWellFormed(collected);
    expect(collected.message.stopReason).toBe('stop');
    expect(collected.message.content).toEqual([
      {
        type: 'text',
        text: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
      },
    ]);
  });

  it.each([
    ['max_tokens', { stopReason: 'length' }],
    ['model_context_window_exceeded', { stopReason: 'length' }],
    ['refusal', { stopReason: 'blocked', blockReason: 'refusal' }],
    ['some_future_reason', { stopReason: 'error', errorKind: 'unknown' }],
  ])('stop_reason %s maps to %o', async (reason, expected) => {
    server.reply(sse(anthropicBody.replace('"stop_reason":"end_turn"', `"stop_reason":"${reason}"`)));
    const { message } = await collectStream(stream(anthropic));
    expect(message).toMatchObject(expected);
    expect(message.content).toHaveLength(1);
  });

  it("a refusal with stop_details is blocked with Anthropic's category and explanation, content kept", async () => {
    // stop_details as the SDK's RefusalStopDetails documents it (no recording of a refusal exists).
    const details = { type: 'refusal', category: 'cyber', explanation: 'This request could enable malware.' };
    server.reply(
      sse(
        anthropicBody.replace(
          '"stop_reason":"end_turn"',
          `"stop_reason":"refusal","stop_details":${JSON.stringify(details)}`,
        ),
      ),
    );
    const collected = await collectStream(stream(anthropic));
    expectWellFormed(collected);
    expect(collected.events.at(-1)!.type).toBe('done');
    expect(collected.message).toMatchObject({
      stopReason: 'blocked',
      blockReason: 'refusal (cyber): This request could enable malware.',
    });
    expect(collected.message.content).toHaveLength(1);
  });
});
