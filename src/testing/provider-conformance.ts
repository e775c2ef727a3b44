/**
 * The `Provider` conformance suite: the stream contract of DESIGN §3 and docs/provider-kit.md as tests any provider
 * can run against a local HTTP server speaking its wire, under any test runner with `describe` and `it`. It imports
 * no test framework, no vendor SDK and no `node:` module: the caller passes its runner's functions and node:http's
 * `createServer`, and a {@link ConformanceWire} saying how each scenario looks on the provider's wire.
 * @module
 */
import type { Observable } from 'rxjs';
import type { AssistantMessage, UserMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamOptions, ToolDefinition } from '../types/provider.js';
import type { ErrorEvent, StreamEvent } from '../types/stream-events.js';
import { assert } from './assert.js';
import { startConformanceServer, type ConformanceServer, type CreateServerLike } from './conformance-server.js';
import type { ConformanceWire } from './conformance-wire.js';

/** Options of {@link providerConformance}. */
export interface ProviderConformanceOptions {
  /** How each scenario looks on the provider's wire. */
  readonly wire: ConformanceWire;
  /** Builds the provider under test against the conformance server (`baseURL` is `http://127.0.0.1:<port>`). */
  readonly provider: (baseURL: string) => Provider;
  /** node:http's `createServer` (pass it in: `cubepi/testing` loads no `node:` module). */
  readonly createServer: CreateServerLike;
  /** The model passed to `stream()`; default `{ id: 'conformance-model', provider: <the provider's id> }`. */
  readonly model?: Model | undefined;
  /** The title of the suite (default `Provider conformance (<wire name>)`). */
  readonly name?: string | undefined;
  /** The runner's `describe` (default: the global one). */
  readonly describe?: ((name: string, body: () => void) => unknown) | undefined;
  /** The runner's `it` (default: the global one). Called as `it(name, asyncBody)`, or with `timeoutMs`. */
  readonly it?: ((name: string, body: () => Promise<void>, timeout?: number) => unknown) | undefined;
  /** A per-test timeout handed to `it` (vitest and jest take it; leave it out for mocha). */
  readonly timeoutMs?: number | undefined;
  /** The stall limit the stall cases set (`firstEventTimeoutMs`, `idleTimeoutMs`); 300 ms by default. */
  readonly stallMs?: number | undefined;
  /**
   * How long the unsubscribe case waits for the server to see the connection close before it fails; 5 s by default.
   * A deadline, not a pause: the case goes on as soon as the connection closed.
   */
  readonly closeDeadlineMs?: number | undefined;
}

/** What one test gets: a fresh server and the provider built against it. */
interface Fixture {
  readonly server: ConformanceServer;
  readonly provider: Provider;
  readonly model: Model;
}

const TOOL: ToolDefinition = {
  name: 'lookup',
  description: 'Looks a city up',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['city'],
  },
};
const USAGE = { input: 11, output: 7 };
const PARTS = ['Hel', 'lo, ', 'wor', 'ld ', '✓'];

/**
 * Registers the conformance tests of the provider contract for one provider and its wire. Each test starts a server
 * on a free loopback port, builds the provider against it with `provider(baseURL)`, scripts the server's reply in
 * the wire's terms, and checks what `stream()` emits.
 *
 * Covered: cold until subscribed (no request before subscribing; each subscription one request); exactly one terminal
 * event, last, `start` first; the final message equals what its deltas build, and partials are immutable snapshots;
 * tool-call arguments assembled across chunks (strictly parsed at `toolcall_end`); unknown events ignored; HTTP 429
 * (with `retry-after`), 500, 400 and 401 as `error` events with a kind (`rate_limited` with `retryAfterMs`,
 * `unavailable`, `bad_request`, `auth`) and the vendor's message, never an Observable error; unsubscribing closes the
 * connection (the server sees it); stall limits (`firstEventTimeoutMs`, `idleTimeoutMs`) ending in a `timeout`
 * error; usage as the wire reported it, or marked `unreported` when the wire can omit it.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { describe, it } from 'vitest';
 * import { openAIChatWire, providerConformance } from 'cubepi/testing';
 * providerConformance({
 *   wire: openAIChatWire, createServer, describe, it,
 *   provider: (baseURL) => new MyProvider({ baseURL, apiKey: 'test' }),
 * });
 */
export function providerConformance(options: ProviderConformanceOptions): void {
  const globals = globalThis as {
    describe?: ProviderConformanceOptions['describe'] | undefined;
    it?: ProviderConformanceOptions['it'] | undefined;
  };
  const describe = options.describe ?? globals.describe;
  const it = options.it ?? globals.it;
  if (typeof describe !== 'function' || typeof it !== 'function') {
    throw new TypeError('providerConformance needs describe and it: pass them in the options, or enable globals');
  }
  const { wire } = options;
  const stallMs = options.stallMs ?? 300;
  const closeDeadlineMs = options.closeDeadlineMs ?? 5000;
  const test = (name: string, body: (fixture: Fixture) => Promise<void>) => {
    const run = () => withFixture(options, body);
    if (options.timeoutMs === undefined) it(name, run);
    else it(name, run, options.timeoutMs);
  };

  describe(options.name ?? `Provider conformance (${wire.name})`, () => {
    test('is cold: no request before subscribing, one request per subscription', async (f) => {
      f.server.reply({ reply: wire.text(['first'], USAGE) });
      f.server.reply({ reply: wire.text(['second'], USAGE) });
      const unsubscribed = f.provider.stream(f.model, [user('never sent')]);
      const first = await collect(f.provider.stream(f.model, [user('sent first')]));
      assert.equal(first.message.stopReason, 'stop', 'the subscribed stream completes');
      assert.equal(f.server.requests.length, 1, 'only the subscribed stream sent a request');
      assert.ok(f.server.requests[0]!.body.includes('sent first'), 'the request is the subscribed stream’s');
      const late = await collect(unsubscribed);
      assert.equal(late.message.stopReason, 'stop');
      assert.equal(f.server.requests.length, 2, 'subscribing later sends it then');
      assert.ok(f.server.requests[1]!.body.includes('never sent'));
    });

    test('emits start first and exactly one terminal event, last; the message equals what its deltas build', async (f) => {
      f.server.reply({ reply: wire.text(PARTS, USAGE) });
      const collected = await collect(f.provider.stream(f.model, [user('Hi')]));
      checkWellFormed(collected);
      const { message, events } = collected;
      assert.equal(events.at(-1)!.type, 'done');
      assert.equal(message.stopReason, 'stop');
      assert.deepEqual(textOf(message), PARTS.join(''), 'the text is the parts joined');
      const deltas = events.filter((e) => e.type === 'text_delta');
      assert.ok(deltas.length >= 1, 'text arrives as deltas');
    });

    test('assembles tool-call arguments streamed across chunks', async (f) => {
      const args = { city: 'Oslo', tags: ['a "quoted" tag', 'ø'] };
      const json = JSON.stringify(args);
      const argumentParts = [json.slice(0, 3), json.slice(3, 9), json.slice(9, 20), json.slice(20)];
      f.server.reply({ reply: wire.toolCall({ id: 'call_conf_1', name: 'lookup', argumentParts }, USAGE) });
      const collected = await collect(f.provider.stream(f.model, [user('Look up Oslo')], { tools: [TOOL] }));
      checkWellFormed(collected);
      const { message, events } = collected;
      assert.equal(message.stopReason, 'toolUse');
      const calls = message.content.filter((b) => b.type === 'toolCall');
      assert.equal(calls.length, 1, 'one tool call');
      const call = calls[0]!;
      assert.equal(call.name, 'lookup');
      assert.deepEqual(call.arguments, args, 'the arguments parsed from the joined pieces');
      assert.ok(
        typeof call.id === 'string' && call.id.includes('call_conf_1'),
        `the wire's call id is kept (${call.id})`,
      );
      const streamed = events.flatMap((e) => (e.type === 'toolcall_delta' ? [e.delta] : [])).join('');
      assert.deepEqual(JSON.parse(streamed) as unknown, args, 'the argument deltas join to the arguments');
    });

    test('ignores events and fields it does not know', async (f) => {
      f.server.reply({ reply: wire.unknownEvents(PARTS, USAGE) });
      const collected = await collect(f.provider.stream(f.model, [user('Hi')]));
      checkWellFormed(collected);
      assert.equal(collected.message.stopReason, 'stop');
      assert.equal(textOf(collected.message), PARTS.join(''));
    });

    const errors: readonly [number, ErrorEvent['errorKind'], string][] = [
      [429, 'rate_limited', 'Rate limit reached for requests'],
      [500, 'unavailable', 'The server had an error while processing your request'],
      [400, 'bad_request', 'Invalid value for messages: too short'],
      [401, 'auth', 'Incorrect API key provided'],
    ];
    for (const [status, kind, words] of errors) {
      test(`HTTP ${status} is an error event of kind ${kind} with the vendor's words, never a thrown error`, async (f) => {
        const reply = wire.error(status, words);
        const headers = status === 429 ? { ...reply.headers, 'retry-after': '7' } : reply.headers;
        f.server.reply({ reply: { ...reply, headers } });
        const collected = await collect(f.provider.stream(f.model, [user('Hi')]));
        checkWellFormed(collected);
        const terminal = collected.events.at(-1)!;
        assert.equal(terminal.type, 'error');
        if (terminal.type !== 'error') return;
        assert.equal(terminal.errorKind, kind);
        assert.equal(collected.message.stopReason, 'error');
        assert.ok(
          collected.message.errorMessage?.includes(words),
          `errorMessage carries the vendor's words: ${collected.message.errorMessage}`,
        );
        if (status === 429) assert.equal(terminal.retryAfterMs, 7000, 'retry-after: 7 → retryAfterMs 7000');
      });
    }

    test('unsubscribing aborts the request: the server sees the connection close', async (f) => {
      f.server.reply({ reply: wire.text(PARTS, USAGE), holdAfter: 1 });
      const events: StreamEvent[] = [];
      let completed = false;
      let erred: unknown;
      let firstEvent!: () => void;
      const first = new Promise<void>((resolve) => (firstEvent = resolve));
      const subscription = f.provider.stream(f.model, [user('Hi')]).subscribe({
        next: (event) => {
          events.push(event);
          firstEvent();
        },
        error: (error: unknown) => (erred = error),
        complete: () => (completed = true),
      });
      await first;
      subscription.unsubscribe();
      const request = await f.server.request(0);
      const closed = await within(request.closed, closeDeadlineMs);
      assert.ok(closed !== 'deadline', `the server saw the connection close within ${closeDeadlineMs} ms`);
      assert.equal(closed.finished, false, 'the connection closed before the response ended');
      assert.equal(erred, undefined, 'no Observable error');
      assert.equal(completed, false, 'nothing after unsubscribing');
      assert.equal(
        events.some((e) => e.type === 'done' || e.type === 'error'),
        false,
        'no terminal event after unsubscribing',
      );
    });

    test('a stream with no event within firstEventTimeoutMs ends in a timeout error and closes the connection', async (f) => {
      f.server.reply({ reply: wire.text(PARTS, USAGE), holdAfter: 0 });
      const collected = await collect(
        f.provider.stream(f.model, [user('Hi')], { options: { firstEventTimeoutMs: stallMs } }),
      );
      checkWellFormed(collected);
      const terminal = collected.events.at(-1)!;
      assert.equal(terminal.type === 'error' ? terminal.errorKind : terminal.type, 'timeout');
      assert.ok(collected.message.errorMessage?.includes('firstEventTimeoutMs'), collected.message.errorMessage);
      assert.equal((await (await f.server.request(0)).closed).finished, false, 'the request was aborted');
    });

    test('a stream silent for idleTimeoutMs after its first event ends in a timeout error', async (f) => {
      f.server.reply({ reply: wire.text(PARTS, USAGE), holdAfter: 1 });
      const collected = await collect(
        f.provider.stream(f.model, [user('Hi')], {
          options: { firstEventTimeoutMs: 60_000, idleTimeoutMs: stallMs } satisfies StreamOptions,
        }),
      );
      checkWellFormed(collected);
      const terminal = collected.events.at(-1)!;
      assert.equal(terminal.type === 'error' ? terminal.errorKind : terminal.type, 'timeout');
      assert.ok(collected.message.errorMessage?.includes('idleTimeoutMs'), collected.message.errorMessage);
      assert.equal((await (await f.server.request(0)).closed).finished, false, 'the request was aborted');
    });

    test('reports the usage the wire sent', async (f) => {
      f.server.reply({ reply: wire.text(PARTS, USAGE) });
      const { message } = await collect(f.provider.stream(f.model, [user('Hi')]));
      assert.equal(message.usage.input, USAGE.input, 'input tokens');
      assert.equal(message.usage.output, USAGE.output, 'output tokens');
      assert.equal(message.usage.unreported, undefined, 'reported usage is not marked unreported');
    });

    const withoutUsage = wire.withoutUsage?.bind(wire);
    if (withoutUsage !== undefined) {
      test('marks usage unreported when the wire sent none', async (f) => {
        f.server.reply({ reply: withoutUsage(PARTS) });
        const { message } = await collect(f.provider.stream(f.model, [user('Hi')]));
        assert.equal(message.stopReason, 'stop');
        assert.equal(textOf(message), PARTS.join(''));
        assert.equal(message.usage.unreported, true, 'usage.unreported');
        assert.equal(message.usage.totalTokens, 0);
      });
    }
  });
}

async function withFixture(options: ProviderConformanceOptions, body: (fixture: Fixture) => Promise<void>) {
  const server = await startConformanceServer(options.createServer);
  try {
    const provider = options.provider(server.url);
    const model = options.model ?? { id: 'conformance-model', provider: provider.id };
    await body({ server, provider, model });
  } finally {
    await server.close();
  }
}

/** `promise`'s value, or `'deadline'` when it did not settle within `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'deadline'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<'deadline'>((resolve) => (timer = setTimeout(() => resolve('deadline'), ms)));
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function user(text: string): UserMessage {
  return { role: 'user', content: text, timestamp: 0 };
}

function textOf(message: AssistantMessage): string {
  return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

interface Collected {
  readonly events: readonly StreamEvent[];
  /** Each event's `partial` as JSON when it was emitted. */
  readonly snapshots: readonly (string | undefined)[];
  readonly message: AssistantMessage;
}

/** Subscribes and resolves when the stream completes; an Observable error (a thrown failure) fails the test. */
function collect(stream$: Observable<StreamEvent>): Promise<Collected> {
  const events: StreamEvent[] = [];
  const snapshots: (string | undefined)[] = [];
  return new Promise((resolve, reject) => {
    // eslint-disable-next-line rxjs-x/no-ignored-subscription -- runs to completion; the stream ends itself
    stream$.subscribe({
      next: (event) => {
        events.push(event);
        snapshots.push('partial' in event ? JSON.stringify(event.partial) : undefined);
      },
      error: (error: unknown) =>
        reject(new Error(`the stream errored instead of ending with an error event: ${String(error)}`)),
      complete: () => {
        const last = events.at(-1);
        if (last === undefined || (last.type !== 'done' && last.type !== 'error')) {
          reject(new Error(`the stream completed without a terminal event (last: ${last?.type})`));
        } else resolve({ events, snapshots, message: last.message });
      },
    });
  });
}

/**
 * The stream invariants: `start` first (unless the call failed before any event), exactly one terminal event and it
 * is last; every block event points at a block of its type in its partial; text and thinking deltas join to the
 * block's final content; `toolcall_end` carries the call as it stands in the final message; no partial changed after
 * it was emitted.
 */
function checkWellFormed({ events, snapshots, message }: Collected): void {
  const terminals = events.filter((e) => e.type === 'done' || e.type === 'error');
  assert.equal(terminals.length, 1, 'exactly one terminal event');
  assert.equal(events.at(-1), terminals[0], 'the terminal event is last');
  if (events.length > 1) assert.equal(events[0]!.type, 'start', 'start comes first');
  const joined = new Map<number, string>();
  events.forEach((event, i) => {
    if ('partial' in event) {
      assert.equal(JSON.stringify(event.partial), snapshots[i], `partial of event ${i} unchanged since emission`);
    }
    if (!('contentIndex' in event)) return;
    const block = event.partial.content[event.contentIndex];
    const kind = event.type.split('_')[0];
    const expected = kind === 'toolcall' ? 'toolCall' : kind === 'thinking' ? 'thinking' : 'text';
    assert.equal(block?.type, expected, `${event.type} at ${event.contentIndex} points at a ${expected} block`);
    if (event.type === 'text_delta' || event.type === 'thinking_delta') {
      joined.set(event.contentIndex, (joined.get(event.contentIndex) ?? '') + event.delta);
    }
    if (event.type === 'text_end' || event.type === 'thinking_end') {
      const final = message.content[event.contentIndex] as { text?: string; thinking?: string };
      assert.equal(event.content, final.text ?? final.thinking, `${event.type} carries the final content`);
      if (joined.has(event.contentIndex)) {
        assert.equal(joined.get(event.contentIndex), event.content, `the deltas of ${event.contentIndex} join to it`);
      }
    }
    if (event.type === 'toolcall_end') {
      assert.deepEqual(message.content[event.contentIndex], event.toolCall, 'toolcall_end carries the final call');
    }
  });
  // Every block of the final message that streamed deltas was closed with its content.
  message.content.forEach((block, i) => {
    const deltas = joined.get(i);
    if (deltas === undefined) return;
    assert.equal(deltas, block.type === 'text' ? block.text : block.type === 'thinking' ? block.thinking : deltas);
  });
}
