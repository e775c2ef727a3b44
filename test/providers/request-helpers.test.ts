// The request-side helpers every provider shares: the handoff rules, tool-call ids, retry-after, error classification.
import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  EMPTY_USAGE,
  userMessage,
  type AssistantMessage,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import {
  classifyError,
  classifyErrorCode,
  DEFAULT_REASONING_STALL_TIMEOUT_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  parseRetryAfter,
  stallTimeouts,
} from 'cubepi/providers/kit';
// Internal helpers: not part of the public API.
import { normalizeToolCallId } from '../../src/providers/normalize-tool-call-id.js';
import { MISSING_TOOL_RESULT, transformMessages } from '../../src/providers/transform-messages.js';

const assistant = (content: AssistantMessage['content'], extra: Partial<AssistantMessage> = {}): AssistantMessage => ({
  role: 'assistant',
  content,
  stopReason: content.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
  usage: EMPTY_USAGE,
  provider: 'anthropic',
  model: 'claude-sonnet-4-6',
  timestamp: 1,
  ...extra,
});
const result = (toolCallId: string, text = 'ok'): ToolResultMessage => ({
  role: 'toolResult',
  toolCallId,
  toolName: 't',
  content: [{ type: 'text', text }],
  isError: false,
  timestamp: 2,
});
const target = {
  provider: 'anthropic',
  model: 'claude-sonnet-4-6',
  normalizeToolCallId: (id: string) => id.replace('|', '_'),
};

describe('transformMessages (cross-provider handoff)', () => {
  it('passes a clean transcript through unchanged, message for message (same objects)', () => {
    const messages: Message[] = [
      userMessage('a'),
      assistant([
        { type: 'thinking', thinking: 'hm', signature: 's' },
        { type: 'toolCall', id: 'c1', name: 't', arguments: {} },
      ]),
      result('c1'),
    ];
    const out = transformMessages(messages, target);
    expect(out).toHaveLength(3);
    out.forEach((message, i) => expect(message).toBe(messages[i]));
  });

  it('keeps thinking only for the same provider and model (a dated snapshot counts as the same model)', () => {
    const thinking = { type: 'thinking' as const, thinking: 'hm', signature: 's' };
    const [same, otherModel, otherProvider] = transformMessages(
      [
        assistant([thinking], { model: 'claude-sonnet-4-6' }),
        assistant([thinking, { type: 'thinking', thinking: 'X', redacted: true }], { model: 'claude-opus-4-8' }),
        assistant([thinking, { type: 'text', text: 'hi', signature: 'msg_1' }], { provider: 'openai-responses' }),
      ],
      target,
    ) as AssistantMessage[];
    expect(same!.content).toEqual([thinking]);
    expect(otherModel!.content).toEqual([{ type: 'text', text: 'hm' }]);
    expect(otherProvider!.content).toEqual([
      { type: 'text', text: 'hm' },
      { type: 'text', text: 'hi' },
    ]);
  });

  it('skips failed turns and results of their calls, drops orphan results and empty blocks', () => {
    const out = transformMessages(
      [
        userMessage('a'),
        assistant([{ type: 'toolCall', id: 'dead', name: 't', arguments: {} }], { stopReason: 'aborted' }),
        result('dead'),
        result('never-called'),
        assistant([{ type: 'text', text: '' }]),
        assistant([{ type: 'text', text: 'Partial' }], { stopReason: 'error' }),
      ],
      target,
    );
    expect(out).toEqual([expect.objectContaining({ role: 'user', content: 'a' })]);
  });

  it("keeps an empty text block its own provider and model signed (Gemini's signature-only part); drops it elsewhere", () => {
    const signed = assistant([{ type: 'text', text: '', signature: 'g-sig' }], {
      provider: 'google',
      model: 'gemini-3-pro-preview',
    });
    const gemini = { provider: 'google', model: 'gemini-3-pro-preview', normalizeToolCallId: (id: string) => id };
    expect(transformMessages([userMessage('a'), signed], gemini)[1]).toBe(signed);
    expect(transformMessages([userMessage('a'), signed], { ...gemini, model: 'gemini-2.5-pro' })).toHaveLength(1);
    expect(transformMessages([userMessage('a'), signed], target)).toHaveLength(1);
  });

  it('answers calls left without a result with a synthetic error result, before the next message', () => {
    const out = transformMessages(
      [
        assistant([
          { type: 'toolCall', id: 'c|1', name: 'a', arguments: {} },
          { type: 'toolCall', id: 'c|2', name: 'b', arguments: {} },
        ]),
        result('c|1'),
        userMessage('next'),
        assistant([{ type: 'toolCall', id: 'c|3', name: 'c', arguments: {} }]),
      ],
      target,
    );
    expect(out.map((m) => (m.role === 'toolResult' ? `result ${m.toolCallId} ${m.isError}` : m.role))).toEqual([
      'assistant',
      'result c_1 false',
      'result c_2 true',
      'user',
      'assistant',
      'result c_3 true',
    ]);
    expect((out[2] as ToolResultMessage).content).toEqual([{ type: 'text', text: MISSING_TOOL_RESULT }]);
    expect((out[0] as AssistantMessage).content.map((b) => (b as { id: string }).id)).toEqual(['c_1', 'c_2']);
  });
});

describe('normalizeToolCallId', () => {
  it('keeps valid ids, replaces other characters, cuts long ids with a hash tail that keeps them distinct', () => {
    expect(normalizeToolCallId('toolu_01NRLabs', 64)).toBe('toolu_01NRLabs');
    expect(normalizeToolCallId('call.1|fc:2', 64)).toBe('call_1_fc_2');
    const a = normalizeToolCallId(`${'x'.repeat(40)}-a`, 40);
    const b = normalizeToolCallId(`${'x'.repeat(40)}-b`, 40);
    expect(a).toHaveLength(40);
    expect(a).not.toBe(b);
    expect(normalizeToolCallId(`${'x'.repeat(40)}-a`, 40)).toBe(a);
    expect(normalizeToolCallId('', 40)).toMatch(/^call_[0-9a-f]{8}$/);
  });
});

describe('parseRetryAfter', () => {
  it('reads retry-after-ms, retry-after seconds, and an HTTP date; ignores nonsense', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '1500.4', 'retry-after': '9' }))).toBe(1500);
    expect(parseRetryAfter(new Headers({ 'retry-after': '7' }))).toBe(7000);
    expect(parseRetryAfter({ 'retry-after': '0.5' })).toBe(500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }), now)).toBe(30_000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 00:00:00 GMT' }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(new Headers())).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

describe('classifyError', () => {
  class APIError extends Error {
    constructor(
      readonly status: number | undefined,
      readonly error: unknown,
      message: string,
      readonly headers?: Headers,
    ) {
      super(message);
    }
  }
  class APIConnectionError extends APIError {}
  class APIUserAbortError extends APIError {}
  const sdk = { APIError, APIConnectionError, APIUserAbortError };

  it('tells aborts and lost connections apart from HTTP errors, though all subclass APIError', () => {
    expect(classifyError(new APIUserAbortError(undefined, undefined, 'aborted'), sdk).kind).toBe('aborted');
    expect(classifyError(new APIConnectionError(undefined, undefined, 'Connection error.'), sdk).kind).toBe(
      'unavailable',
    );
    const reset = new TypeError('terminated', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    expect(classifyError(reset, sdk)).toMatchObject({
      kind: 'unavailable',
      message: 'Connection lost: terminated (other side closed)',
    });
    expect(classifyError(new SyntaxError('Unexpected end of JSON input'), sdk).kind).toBe('unknown');
  });

  it('needs only APIError for a provider over fetch: aborts and lost connections are recognised without a class', () => {
    const onlyApiError = { APIError };
    expect(classifyError(new DOMException('This operation was aborted', 'AbortError'), onlyApiError).kind).toBe(
      'aborted',
    );
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
    });
    expect(classifyError(refused, onlyApiError).kind).toBe('unavailable');
    const limited = new APIError(429, { error: { code: 'rate_limit_exceeded', message: 'slow down' } }, '429', {
      'retry-after': '2',
    } as unknown as Headers);
    expect(classifyError(limited, onlyApiError)).toEqual({
      kind: 'rate_limited',
      message: 'HTTP 429 rate_limit_exceeded: slow down',
      retryAfterMs: 2000,
    });
  });

  it('classifies insufficient_quota as bad_request even on a 429 (waiting does not fix it)', () => {
    const quota = new APIError(
      429,
      { message: 'You exceeded your current quota', code: 'insufficient_quota' },
      '429',
      new Headers(),
    );
    expect(classifyError(quota, sdk)).toMatchObject({
      kind: 'bad_request',
      message: 'HTTP 429 insufficient_quota: You exceeded your current quota',
    });
  });

  it('classifies stream error codes', () => {
    expect(classifyErrorCode('overloaded_error')).toBe('unavailable');
    expect(classifyErrorCode('rate_limit_exceeded')).toBe('rate_limited');
    expect(classifyErrorCode('context_length_exceeded')).toBe('context_overflow');
    expect(classifyErrorCode('invalid_request_error', 'input is too long for the model')).toBe('context_overflow');
    expect(classifyErrorCode('invalid_request_error', 'bad field')).toBe('bad_request');
    expect(classifyErrorCode('something_new')).toBe('unknown');
  });
});

describe('stallTimeouts', () => {
  it('defaults to 2 min for a model known not to reason and 10 min otherwise (reasoning, or unknown)', () => {
    expect(stallTimeouts(undefined, false)).toEqual({ firstEventMs: 120_000, idleMs: 120_000 });
    expect(stallTimeouts(undefined, true)).toEqual({ firstEventMs: 600_000, idleMs: 600_000 });
    expect(stallTimeouts({}, undefined)).toEqual({ firstEventMs: 600_000, idleMs: 600_000 });
    expect([DEFAULT_STALL_TIMEOUT_MS, DEFAULT_REASONING_STALL_TIMEOUT_MS]).toEqual([120_000, 600_000]);
  });

  it('takes the request options over the defaults, Infinity included, and refuses what is not a positive number', () => {
    expect(stallTimeouts({ firstEventTimeoutMs: 5, idleTimeoutMs: Infinity }, false)).toEqual({
      firstEventMs: 5,
      idleMs: Infinity,
    });
    for (const bad of [0, -1, NaN, '10']) {
      expect(() => stallTimeouts({ idleTimeoutMs: bad as number }, true)).toThrow(ConfigurationError);
    }
  });
});
