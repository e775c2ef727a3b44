// Token estimates against the real `usage` the recorded provider streams report for requests we know.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  estimateTokens,
  findModel,
  TokenCalibration,
  type Message,
  type Model,
  type ToolDefinition,
  userMessage,
} from '../src/index.js';
import { fauxMessage } from '../src/testing/index.js';

const root = fileURLToPath(new URL('./fixtures/providers/', import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, 'utf8');
const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 0 });

/** The first `input_tokens` / `prompt_tokens` figure of a recording (what the provider counted for the request). */
function reportedInput(path: string): number {
  const match = /"(?:input_tokens|prompt_tokens)":(\d+)/.exec(read(path));
  if (match === null) throw new Error(`no usage in ${path}`);
  return Number(match[1]);
}

/** The parts of a recorded request body (Anthropic Messages or OpenAI Responses) the estimate reads. */
interface RecordedBody {
  readonly model: string;
  readonly messages?: { content: string | { text: string }[] }[];
  readonly input?: { content: string | { text: string }[] }[];
  readonly tools?: { name: string; description?: string; parameters: Record<string, unknown> }[];
}

/** A pydantic-ai cassette's recorded request: its user texts and tools, as cubepi sends them. */
function cassetteRequest(path: string): { messages: Message[]; tools: ToolDefinition[]; model: string } {
  const body = (parse(read(path)) as { interactions: { request: { parsed_body: RecordedBody } }[] }).interactions[0]!
    .request.parsed_body;
  const entries = body.messages ?? body.input ?? [];
  const messages = entries.map((m) => user(typeof m.content === 'string' ? m.content : m.content[0]!.text));
  const tools = (body.tools ?? []).map((t) => ({
    name: t.name,
    description: t.description ?? '',
    inputSchema: t.parameters,
  }));
  return { messages, tools, model: body.model };
}

interface Case {
  readonly file: string;
  readonly model: Model;
  readonly messages: Message[];
  readonly tools: ToolDefinition[];
}

// A model the table does not list (an older snapshot) is still known by its provider family.
const cassette = (file: string, provider: string): Case => {
  const { messages, tools, model } = cassetteRequest(file);
  return { file, model: findModel(model) ?? { id: model, provider }, messages, tools };
};

// The openai-python recordings hold only the response; the requests are those of the tests that recorded them
// (openai/openai-python tests/lib/chat/test_completions_streaming.py: test_parse_nothing and
// test_allows_non_strict_tools_but_no_parsing, model gpt-4o-2024-08-06).
const CASES: readonly Case[] = [
  {
    file: 'openai-chat/text-with-usage.openai-python.sse',
    model: findModel('gpt-4o-2024-08-06')!,
    messages: [user("What's the weather like in SF?")],
    tools: [],
  },
  {
    file: 'openai-chat/single-tool-call.openai-python.sse',
    model: findModel('gpt-4o-2024-08-06')!,
    messages: [user("what's the weather in NYC?")],
    tools: [
      {
        name: 'get_weather',
        description: '',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ],
  },
  cassette('openai-responses/reasoning-item-function-call-usage.pydantic-ai.cassette.yaml', 'openai'),
  cassette('anthropic/thinking-signature-padded-sse.pydantic-ai.cassette.yaml', 'anthropic'),
  cassette('anthropic/redacted-thinking.pydantic-ai.cassette.yaml', 'anthropic'),
];

/** The bound docs/context.md states for an uncalibrated estimate: within 25% or 8 tokens, whichever is larger. */
const withinBound = (estimate: number, real: number) => Math.abs(estimate - real) <= Math.max(8, 0.25 * real);

describe('estimateTokens', () => {
  it.each(CASES)('$file: within the documented bound of the recorded usage', ({ file, model, messages, tools }) => {
    const real = reportedInput(file);
    const estimate = estimateTokens({ model, messages, tools });
    expect({ file, estimate, real, ok: withinBound(estimate, real) }).toEqual({ file, estimate, real, ok: true });
  });

  it('counts a tool schema, a system prompt and an image', () => {
    const model = findModel('gpt-4o')!;
    const bare = estimateTokens({ model, messages: [user('hi')] });
    expect(estimateTokens({ model, messages: [user('hi')], systemPrompt: 'Be brief.' })).toBeGreaterThan(bare);
    expect(estimateTokens({ model, messages: [user('hi')], tools: CASES[1]!.tools })).toBeGreaterThan(bare + 10);
    const image: Message = {
      role: 'user',
      content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }],
      timestamp: 0,
    };
    expect(estimateTokens({ model, messages: [image] })).toBeGreaterThan(500);
  });
});

describe('TokenCalibration', () => {
  it('scales the next estimate by the provider count of the request it sent', () => {
    const model = findModel('claude-sonnet-4-5')!;
    const calibration = new TokenCalibration();
    const first = [user('How do I cross the street?')];
    const before = calibration.estimate('t', first, { model, messages: first });
    expect(before.ratio).toBe(1);
    calibration.sent('t', before.raw, first.length);
    // The answer reports 43 input tokens (the recorded figure for this prompt, thinking on).
    const answer = fauxMessage('Look both ways.');
    const reported = { ...answer, usage: { ...answer.usage, input: 40, cacheRead: 3 } };
    const grown = [...first, reported, user('And at night?')];
    const after = calibration.estimate('t', grown, { model, messages: grown });
    expect(after.ratio).toBeCloseTo(43 / before.raw, 6);
    expect(after.tokens).toBe(Math.ceil(after.raw * after.ratio));
    // Another thread is not affected.
    expect(calibration.estimate('other', grown, { model, messages: grown }).ratio).toBe(1);
  });

  it('keeps the ratio within bounds when a provider reports a wild figure', () => {
    const model = findModel('gpt-4o')!;
    const calibration = new TokenCalibration();
    const first = [user('hi')];
    calibration.sent('t', calibration.estimate('t', first, { model, messages: first }).raw, 1);
    const answer = fauxMessage('hello');
    const wild = [...first, { ...answer, usage: { ...answer.usage, input: 1_000_000 } }];
    expect(calibration.estimate('t', wild, { model, messages: wild }).ratio).toBe(4);
  });
});

describe('estimateTokens over a growing transcript', () => {
  it('counts each message once per family and stays exact: a longer transcript adds exactly its new messages', () => {
    const model = { id: 'claude-sonnet-4-5', provider: 'anthropic' };
    const messages = Array.from({ length: 50 }, (_, i) => userMessage(`message ${i} ${'word '.repeat(i)}`));
    const first = estimateTokens({ model, messages: messages.slice(0, 49) });
    const whole = estimateTokens({ model, messages });
    expect(whole - first).toBe(
      estimateTokens({ model, messages: [messages[49]!] }) - estimateTokens({ model, messages: [] }),
    );
    // Another message object with other content gets its own count (the cache is by object, never by position).
    const edited = [...messages.slice(0, 49), userMessage('x'.repeat(4000))];
    expect(estimateTokens({ model, messages: edited })).toBeGreaterThan(whole);
    // Another family counts the same messages by its own constants.
    expect(estimateTokens({ model: { id: 'gpt-4.1', provider: 'openai' }, messages })).not.toBe(whole);
  });
});
