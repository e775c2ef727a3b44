// Property tests of message assembly over the recorded provider streams (test/fixtures/providers): however the stream
// is cut up, the message that comes out is the same.
//
// Generated cases per run (fixed seeds; a failure prints its seed and the shrunk counterexample):
//   in process: a recording's wire deltas re-split, through its wire mapper and the assembler   10,000 (recording, split)
//   bytes, through the real SDKs: a fetch that hands the SSE body out in the chunks drawn           60 (recording, cuts)
//   bytes, through the real SDKs over a local HTTP server, written in pieces of drawn sizes         12 (recording, sizes)
// The byte-level runs cost a request each (the HTTP ones also a socket and a timer a write), so they are few; the
// in-process one carries the count.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import OpenAI from 'openai';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { findModel, MessageAssembler, userMessage, type Model, type Provider, type StreamEvent } from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import type { WireMapper } from 'cubepi/providers/kit';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';
import { anthropicWireMapper } from '../../src/providers/anthropic-wire-mapper.js';
import { completionsWireMapper } from '../../src/providers/openai-completions-wire-mapper.js';
import { responsesWireMapper } from '../../src/providers/openai-responses-wire-mapper.js';
import { StreamGuard } from '../../src/loop/stream-guard.js';
import { RECORDINGS, recordedPayloads, recordingBodies, type RecordedApi } from '../providers/recordings.js';
import { ReplayServer } from '../providers/replay-server.js';
import { collectStream, expectWellFormed } from '../providers/stream-harness.js';

const MODELS: Record<RecordedApi, Model> = {
  anthropic: findModel('claude-sonnet-4-6')!,
  'openai-chat': findModel('gpt-4o')!,
  'openai-responses': findModel('gpt-5.1-codex-max')!,
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- recorded wire events are rewritten field by field
type Wire = any;

const MAPPERS: Record<RecordedApi, (asm: MessageAssembler) => WireMapper<Wire>> = {
  anthropic: (asm) => anthropicWireMapper(asm, MODELS.anthropic),
  'openai-chat': (asm) => completionsWireMapper(asm, MODELS['openai-chat']),
  'openai-responses': (asm) => responsesWireMapper(asm, MODELS['openai-responses']),
};

/** One recorded response: its SSE body, and the wire events in it. */
interface Recording {
  readonly name: string;
  readonly api: RecordedApi;
  readonly body: string;
  readonly bytes: Uint8Array;
  /** Byte offsets that fall inside a multi-byte UTF-8 character (before a continuation byte). */
  readonly insideCharacters: readonly number[];
  readonly events: readonly Wire[];
  /** For each wire event, the delta it streams (see {@link deltaOf}). */
  readonly deltas: readonly (Delta | undefined)[];
}

const RECORDED: readonly Recording[] = (Object.keys(RECORDINGS) as RecordedApi[]).flatMap((api) =>
  RECORDINGS[api].flatMap((file) =>
    recordingBodies(api, file).map((body, step) => {
      const bytes = new TextEncoder().encode(body);
      const events = recordedPayloads(body);
      const name = `${api}/${file}#${step}`;
      return {
        name,
        [fc.toStringMethod]: () => name,
        api,
        body,
        bytes,
        insideCharacters: [...bytes.keys()].filter((i) => (bytes[i]! & 0xc0) === 0x80),
        events,
        deltas: events.map((event) => deltaOf(api, event)),
      };
    }),
  ),
);

/**
 * A recording, shown by its name in a counterexample. Drawn with a weight of 1/√(its events), so that the long ones
 * (up to 300 events) do not take most of the time: each recording still gets about 90 runs or more of 10,000.
 */
const anyRecording = fc.oneof(
  ...RECORDED.map((r) => ({ arbitrary: fc.constant(r), weight: Math.round(1000 / Math.sqrt(r.events.length)) })),
);

// ---------------------------------------------------------------------------------------------------------------------
// In process: the wire events of a recording, each text-like delta re-split into smaller deltas, through the mapper and
// the assembler.

/** A 32-bit mix of two numbers (murmur3's finaliser), to spread one drawn number over many cut decisions. */
function mix(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b + 1, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * `text` cut into non-empty pieces by `draw`: mostly 0 to 3 cuts at drawn places (anywhere, also between the halves of
 * a surrogate pair or inside an escape of argument JSON), one time in 16 one piece per UTF-16 code unit.
 */
function piecesOf(text: string, draw: number): string[] {
  if (text.length < 2) return [text];
  if (draw % 16 === 15) return Array.from({ length: text.length }, (_, i) => text[i]!);
  const cuts = new Set<number>();
  for (let k = 0; k < draw % 4; k++) cuts.add(1 + (mix(draw, k) % (text.length - 1)));
  const sorted = [...cuts].sort((a, b) => a - b);
  return [0, ...sorted].map((start, k) => text.slice(start, sorted[k] ?? text.length));
}

/** The text a wire event streams, and how to write the event carrying only a piece of it (the first or a later one). */
interface Delta {
  readonly text: string;
  readonly respell: (event: Wire, piece: string, first: boolean) => Wire;
}

/** The delta a wire event streams: text, thinking, a signature, tool-call arguments. */
function deltaOf(api: RecordedApi, event: Wire): Delta | undefined {
  if (api === 'anthropic') {
    if (event.type !== 'content_block_delta') return undefined;
    const field = ({ text_delta: 'text', thinking_delta: 'thinking', input_json_delta: 'partial_json' } as const)[
      event.delta.type as string
    ];
    const fieldName = field ?? (event.delta.type === 'signature_delta' ? 'signature' : undefined);
    if (fieldName === undefined || typeof event.delta[fieldName] !== 'string') return undefined;
    return {
      text: event.delta[fieldName],
      respell: (e, piece) => ({ ...e, delta: { ...e.delta, [fieldName]: piece } }),
    };
  }
  if (api === 'openai-responses') {
    if (
      !/^response\.(output_text|refusal|reasoning_summary_text|reasoning_text|function_call_arguments)\.delta$/.test(
        event.type,
      )
    ) {
      return undefined;
    }
    return { text: event.delta, respell: (e, piece) => ({ ...e, delta: piece }) };
  }
  // Chat Completions: only a chunk of choice 0 with one streamed field, no finish_reason and no usage, so each piece
  // is a chunk the API could have sent (the first keeps the role, a call's id and name; the others carry the text).
  const [choice, ...others] = event.choices ?? [];
  if (choice === undefined || others.length > 0 || (choice.index ?? 0) !== 0 || choice.finish_reason || event.usage) {
    return undefined;
  }
  const delta = choice.delta ?? {};
  const texts = ['content', 'refusal'].filter((key) => typeof delta[key] === 'string' && delta[key] !== '');
  const calls = delta.tool_calls ?? [];
  const chunk = (e: Wire, d: Wire) => ({ ...e, choices: [{ ...choice, delta: d }] });
  if (texts.length === 1 && calls.length === 0) {
    const key = texts[0]!;
    return {
      text: delta[key],
      respell: (e, piece, first) => chunk(e, first ? { ...delta, [key]: piece } : { [key]: piece }),
    };
  }
  const call = calls[0];
  if (texts.length === 0 && calls.length === 1 && typeof call.function?.arguments === 'string') {
    return {
      text: call.function.arguments,
      respell: (e, piece, first) =>
        chunk(e, {
          ...(first ? delta : {}),
          tool_calls: [
            first
              ? { ...call, function: { ...call.function, arguments: piece } }
              : { index: call.index, function: { arguments: piece } },
          ],
        }),
    };
  }
  return undefined;
}

/** The wire events of `recording` with every delta cut into pieces, the `k`-th delta by a number drawn from `draws`. */
function resplit(recording: Recording, draws: readonly number[]): Wire[] {
  const out: Wire[] = [];
  let k = 0;
  recording.events.forEach((event, i) => {
    const delta = recording.deltas[i];
    if (delta === undefined) return void out.push(event);
    const draw = draws[k % draws.length]!;
    // A drawn 0 leaves the delta whole, so a failure shrinks towards the fewest cuts.
    const pieces = draw === 0 ? [delta.text] : piecesOf(delta.text, mix(draw, k));
    k++;
    pieces.forEach((piece, j) => out.push(delta.respell(event, piece, j === 0)));
  });
  return out;
}

/**
 * The stream events of a wire event sequence: the loop of `fromSdkStream` without the async iteration, the abort
 * handling and the error channel (none of which a split can reach): `identify` and `start` at the first event, the
 * mapper's events, its terminal event or `end()`.
 */
function assemble(api: RecordedApi, events: readonly Wire[]): StreamEvent[] {
  const asm = new MessageAssembler({ provider: api, model: MODELS[api].id, timestamp: 0 });
  const mapper = MAPPERS[api](asm);
  const out: StreamEvent[] = [];
  const emit = (event: StreamEvent) => void out.push(event);
  for (const [i, event] of events.entries()) {
    if (i === 0) {
      mapper.identify?.(event);
      emit(asm.start());
    }
    const terminal = mapper.map(event, emit);
    if (terminal !== undefined) return [...out, terminal];
  }
  return [...out, mapper.end()];
}

/**
 * What must not depend on how deltas are cut, as JSON: the sequence of events other than deltas, each block's deltas
 * joined, and the final message.
 */
function outcome(events: readonly StreamEvent[]): string {
  const steps: string[] = [];
  const deltas: Record<string, string> = {};
  for (const e of events) {
    if (e.type === 'text_delta' || e.type === 'thinking_delta' || e.type === 'toolcall_delta') {
      deltas[e.contentIndex] = (deltas[e.contentIndex] ?? '') + e.delta;
    } else steps.push('contentIndex' in e ? `${e.type}:${e.contentIndex}` : e.type);
  }
  const terminal = events.at(-1)!;
  return JSON.stringify({ steps, deltas, message: 'message' in terminal ? terminal.message : undefined });
}

describe('message assembly in process: re-splitting the wire deltas of a recording', () => {
  const baseline = new Map(RECORDED.map((r) => [r.name, outcome(assemble(r.api, r.events))]));

  it('gives the same blocks, the same joined deltas and the same final message, however the deltas are cut', () => {
    fc.assert(
      fc.property(anyRecording, fc.array(fc.nat(), { minLength: 1, maxLength: 16 }), (recording, draws) => {
        const actual = outcome(assemble(recording.api, resplit(recording, draws)));
        const expected = baseline.get(recording.name)!;
        // Compared as text (fast); a difference is shown as a diff of the values.
        if (actual !== expected) assert.deepStrictEqual(JSON.parse(actual), JSON.parse(expected));
      }),
      { seed: 1511, numRuns: 10_000 },
    );
  });

  it('every stream, however cut, passes the provider boundary of the loop (issue 36: no false alarm)', () => {
    fc.assert(
      fc.property(anyRecording, fc.array(fc.nat(), { minLength: 1, maxLength: 16 }), (recording, draws) => {
        const guard = new StreamGuard(`Provider ${recording.api}`, recording.api, MODELS[recording.api].id);
        for (const event of assemble(recording.api, resplit(recording, draws))) {
          assert.equal(guard.check(event), undefined, `${recording.name}: ${event.type}`);
        }
        assert.notEqual(guard.terminal, undefined);
      }),
      { seed: 1514, numRuns: 1_000 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Bytes: a recorded SSE body cut into chunks at random byte offsets (also inside multi-byte UTF-8 characters, and runs
// of 1-byte chunks), read by the real SDK, through the provider.

/**
 * A recording for the byte-level runs, weighted as {@link anyRecording} but the four with multi-byte characters (`÷`,
 * dashes, curly quotes, a 4-byte emoji) drawn four times as often, since a cut inside a character is what a decoder
 * gets wrong.
 */
const anyRecordingByBytes = fc.oneof(
  ...RECORDED.map((r) => ({
    arbitrary: fc.constant(r),
    weight: Math.round(((r.insideCharacters.length > 0 ? 4 : 1) * 1000) / Math.sqrt(r.events.length)),
  })),
);

/** How to cut a body: offsets anywhere, offsets inside characters, and a window of 1-byte chunks. */
const chunking = fc.record({
  anywhere: fc.array(fc.nat(), { maxLength: 100 }),
  insideCharacters: fc.array(fc.nat(), { maxLength: 20 }),
  byteByByte: fc.record({ at: fc.nat(), length: fc.nat({ max: 256 }) }),
});
type Chunking = typeof chunking extends fc.Arbitrary<infer T> ? T : never;

/** The chunks `plan` cuts a recording's body into. */
function chunksOf({ bytes, insideCharacters: inside }: Recording, plan: Chunking): Uint8Array[] {
  const cuts = new Set<number>([0, bytes.length]);
  for (const n of plan.anywhere) cuts.add(n % bytes.length);
  if (inside.length > 0) for (const n of plan.insideCharacters) cuts.add(inside[n % inside.length]!);
  const start = plan.byteByByte.at % bytes.length;
  for (let at = start; at < Math.min(bytes.length, start + plan.byteByByte.length); at++) cuts.add(at);
  const sorted = [...cuts].sort((a, b) => a - b);
  return sorted.slice(1).map((end, i) => bytes.subarray(sorted[i], end));
}

/**
 * A `fetch` for the SDKs that answers each request with the next queued body, delivered in exactly the queued chunks
 * (one `read()` each: no socket coalesces them).
 */
function chunkedFetch(queue: Uint8Array[][]): typeof fetch {
  return async () => {
    const chunks = queue.shift() ?? [];
    let next = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next < chunks.length) controller.enqueue(chunks[next++]!);
        else controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' } });
  };
}

/** The three providers over one `fetch` or one base URL, keyed by the API their recordings are of. */
function providers(connection: { fetch: typeof fetch } | { url: string }): Record<RecordedApi, Provider> {
  const fetchOption = 'fetch' in connection ? { fetch: connection.fetch } : {};
  const url = 'url' in connection ? connection.url : 'http://replay.invalid';
  const openai = new OpenAI({ apiKey: 'test-key', baseURL: `${url}/v1`, maxRetries: 0, ...fetchOption });
  return {
    anthropic: new AnthropicProvider({
      client: new Anthropic({ apiKey: 'test-key', baseURL: url, maxRetries: 0, ...fetchOption }),
    }),
    'openai-chat': new OpenAIProvider({ client: openai }),
    'openai-responses': new OpenAIResponsesProvider({ client: openai }),
  };
}

/**
 * A whole stream as JSON, an event a line: every event, each delta on its own, the terminal message; without the
 * snapshots (`partial`, the assembler's state after the same calls) and the timestamps (the clock at each request).
 */
const streamJson = (events: readonly StreamEvent[]) =>
  events.map((event) =>
    JSON.stringify(event, (key, value: unknown) => (key === 'partial' || key === 'timestamp' ? undefined : value)),
  );

describe('message assembly from bytes: a recorded body cut into random chunks, through the real SDKs', () => {
  const queue: Uint8Array[][] = [];
  const viaFetch = providers({ fetch: chunkedFetch(queue) });
  const replay = async (recording: Recording, chunks: Uint8Array[]) => {
    queue.push(chunks);
    return lastValueFrom(viaFetch[recording.api].stream(MODELS[recording.api], [userMessage('Hi')]).pipe(toArray()));
  };
  const whole = new Map<string, Promise<string[]>>();
  const wholeReplay = (recording: Recording) => {
    let json = whole.get(recording.name);
    if (json === undefined) whole.set(recording.name, (json = replay(recording, [recording.bytes]).then(streamJson)));
    return json;
  };

  it('streams the same events and the same final message as the body read in one piece', async () => {
    await fc.assert(
      fc.asyncProperty(anyRecordingByBytes, chunking, async (recording, plan) => {
        const expected = await wholeReplay(recording);
        assert.deepStrictEqual(streamJson(await replay(recording, chunksOf(recording, plan))), expected);
      }),
      { seed: 1512, numRuns: 60 },
    );
  });

  describe('over a local HTTP server (writes of random sizes)', () => {
    let server: ReplayServer;
    let viaHttp: Record<RecordedApi, Provider>;
    beforeAll(async () => {
      server = await ReplayServer.start();
      viaHttp = providers({ url: server.url });
    });
    afterAll(() => server.close());

    it('streams the same events and the same final message as the body read in one piece', async () => {
      // Mostly large writes (each costs a turn of the event loop), some of 1 to 4 bytes.
      const writes = fc.array(
        fc.oneof(
          { arbitrary: fc.integer({ min: 1, max: 4 }), weight: 1 },
          { arbitrary: fc.integer({ min: 5, max: 2048 }), weight: 3 },
        ),
        { minLength: 4, maxLength: 16 },
      );
      await fc.assert(
        fc.asyncProperty(
          anyRecordingByBytes.filter(({ bytes }) => bytes.length <= 12_000),
          writes,
          async (recording, sizes) => {
            const expected = await wholeReplay(recording);
            server.reply({ kind: 'sse', body: recording.body, pieces: sizes });
            const stream = await collectStream(
              viaHttp[recording.api].stream(MODELS[recording.api], [userMessage('Hi')]),
            );
            expectWellFormed(stream);
            assert.deepStrictEqual(streamJson(stream.events), expected);
          },
        ),
        { seed: 1513, numRuns: 12 },
      );
    });
  });
});
