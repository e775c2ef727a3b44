// OpenAIProvider (Chat Completions) through the real openai SDK client, against recorded streams served locally.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  findModel,
  EMPTY_USAGE,
  userMessage,
  type AssistantMessage,
  type Message,
  type Model,
  type ToolResultMessage,
} from 'cubepi';
import { OpenAIProvider } from 'cubepi/providers/openai';
import { recordedPayloads, recordingBodies } from './recordings.js';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

const GPT_4O = findModel('gpt-4o')!;

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const provider = (options: ConstructorParameters<typeof OpenAIProvider>[0] = {}) =>
  new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1`, ...options });

async function replayBody(body: string, model: Model = GPT_4O) {
  server.reply(sse(body));
  const stream = await collectStream(provider().stream(model, [userMessage('Hi')]));
  expectWellFormed(stream);
  return { ...stream, recorded: recordedPayloads(body) };
}
const replay = (file: string, model?: Model) => replayBody(recordingBodies('openai-chat', file)[0]!, model);

/** Choice `index`'s content deltas in a recorded stream, joined. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const recordedContent = (recorded: any[], index = 0) =>
  recorded
    .flatMap((c) =>
      c.choices
        .filter((ch: { index: number }) => ch.index === index)
        .map((ch: { delta: { content?: string } }) => ch.delta.content ?? ''),
    )
    .join('');

/** A Chat Completions stream made of these deltas (choice 0), then `finish`, then a usage chunk and [DONE]. */
function chatBody(
  deltas: Record<string, unknown>[],
  finish: string | null,
  usage = { prompt_tokens: 5, completion_tokens: 7 },
) {
  const chunk = (choices: unknown[], extra: object = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'local-model', choices, ...extra })}\n\n`;
  return (
    deltas.map((delta) => chunk([{ index: 0, delta, finish_reason: null }])).join('') +
    (finish === null ? '' : chunk([{ index: 0, delta: {}, finish_reason: finish }])) +
    chunk([], { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }) +
    'data: [DONE]\n\n'
  );
}

describe('OpenAIProvider: every recorded stream', () => {
  it('text-with-usage: text deltas (the empty first one skipped), usage from the last chunk, priced', async () => {
    const { events, message, recorded } = await replay('text-with-usage.openai-python.sse');
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×30', 'text_end:0', 'done']);
    expect(message.content).toEqual([{ type: 'text', text: recordedContent(recorded) }]);
    expect((message.content[0] as { text: string }).text).toMatch(/^I'm unable to provide real-time weather updates\./);
    expect(message).toMatchObject({
      stopReason: 'stop',
      provider: 'openai',
      model: 'gpt-4o-2024-08-06',
      responseId: 'chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL',
    });
    expect(message.usage).toMatchObject({ input: 14, output: 30, cacheRead: 0, reasoning: 0, totalTokens: 44 });
    expect(message.usage.cost.total).toBeCloseTo((14 * 2.5 + 30 * 10) / 1e6, 12);
  });

  it('parallel-tool-calls: two calls keyed by stream index, each with its own arguments', async () => {
    const { events, message } = await replay('parallel-tool-calls.openai-python.sse');
    expect(trace(events)).toEqual([
      'start',
      'toolcall_start:0',
      'toolcall_delta:0×11',
      'toolcall_start:1',
      'toolcall_delta:1×9',
      'toolcall_end:0',
      'toolcall_end:1',
      'done',
    ]);
    expect(message.content).toEqual([
      {
        type: 'toolCall',
        id: 'call_JMW1whyEaYG438VE1OIflxA2',
        name: 'GetWeatherArgs',
        arguments: { city: 'Edinburgh', country: 'GB', units: 'c' },
      },
      {
        type: 'toolCall',
        id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou',
        name: 'get_stock_price',
        arguments: { ticker: 'AAPL', exchange: 'NASDAQ' },
      },
    ]);
    expect(message.stopReason).toBe('toolUse');
    expect(message.usage).toMatchObject({ input: 149, output: 60 });
  });

  it('single-tool-call: id and name from the first fragment, arguments from the rest', async () => {
    const { events, message } = await replay('single-tool-call.openai-python.sse');
    expect(trace(events)).toEqual(['start', 'toolcall_start:0', 'toolcall_delta:0×7', 'toolcall_end:0', 'done']);
    expect(message.content).toEqual([
      {
        type: 'toolCall',
        id: 'call_4XzlGBLtUe9dy3GVNV4jhq7h',
        name: 'get_weather',
        arguments: { city: 'New York City' },
      },
    ]);
    expect(message.stopReason).toBe('toolUse');
  });

  it('refusal: the refusal fragments are the answer text', async () => {
    const { message } = await replay('refusal.openai-python.sse');
    expect(message.content).toEqual([{ type: 'text', text: "I'm sorry, I can't assist with that request." }]);
    expect(message.stopReason).toBe('stop');
    expect(message.usage).toMatchObject({ input: 79, output: 11 });
  });

  it('finish-length: finish_reason "length" → stopReason length, the cut-off text kept', async () => {
    const { events, message } = await replay('finish-length.openai-python.sse');
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0', 'text_end:0', 'done']);
    expect(message.content).toEqual([{ type: 'text', text: '{"' }]);
    expect(message.stopReason).toBe('length');
  });

  it('n3-multiple-choices: only choice 0 becomes the message; the usage covers the whole request', async () => {
    const { events, message, recorded } = await replay('n3-multiple-choices.openai-python.sse');
    expect(recordedContent(recorded, 1)).not.toBe(recordedContent(recorded, 0));
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×14', 'text_end:0', 'done']);
    expect(message.content).toEqual([{ type: 'text', text: '{"city":"San Francisco","temperature":65,"units":"f"}' }]);
    expect(message.usage).toMatchObject({ input: 79, output: 42 });
  });

  it('text-obfuscation-usage (newer chunk shape): 300 deltas, detailed usage with cached and reasoning counts', async () => {
    const { message, recorded } = await replay('text-obfuscation-usage.vercel-ai.jsonl', findModel('gpt-4.1-nano'));
    expect(message.content).toEqual([{ type: 'text', text: recordedContent(recorded) }]);
    expect(message).toMatchObject({ stopReason: 'stop', model: 'gpt-4.1-nano-2025-04-14' });
    expect(message.usage).toMatchObject({ input: 16, output: 300, cacheRead: 0, reasoning: 0, totalTokens: 316 });
    expect(message.usage.cost.total).toBeCloseTo((16 * 0.1 + 300 * 0.4) / 1e6, 12);
  });
});

describe('OpenAIProvider: OpenAI-compatible servers and edge cases', () => {
  it('reasoning_content (DeepSeek, vLLM) and reasoning (Ollama) stream as thinking before the text', async () => {
    for (const field of ['reasoning_content', 'reasoning']) {
      const { events, message } = await replayBody(
        chatBody([{ role: 'assistant', [field]: 'Let me ' }, { [field]: 'think.' }, { content: 'Answer.' }], 'stop'),
        { id: 'local-model', provider: 'ollama' },
      );
      expect(trace(events)).toEqual([
        'start',
        'thinking_start:0',
        'thinking_delta:0×2',
        'thinking_end:0',
        'text_start:1',
        'text_delta:1',
        'text_end:1',
        'done',
      ]);
      expect(message.content).toEqual([
        { type: 'thinking', thinking: 'Let me think.' },
        { type: 'text', text: 'Answer.' },
      ]);
      expect(message.usage.cost.total).toBe(0); // a model the table does not know costs 0
    }
  });

  it('a server that says "stop" after tool calls still yields toolUse; whole arguments in one fragment parse', async () => {
    const { message } = await replayBody(
      chatBody(
        [{ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }] }],
        'stop',
      ),
    );
    expect(message.content).toEqual([{ type: 'toolCall', id: 'c1', name: 'f', arguments: { x: 1 } }]);
    expect(message.stopReason).toBe('toolUse');
  });

  it('finish_reason "content_filter" is blocked, unknown reasons an error naming the reason; content kept', async () => {
    const filtered = await replayBody(chatBody([{ content: 'Part' }], 'content_filter'));
    expect(filtered.events.at(-1)!.type).toBe('done');
    expect(filtered.message).toMatchObject({
      stopReason: 'blocked',
      blockReason: 'content_filter',
      content: [{ type: 'text', text: 'Part' }],
    });
    const odd = await replayBody(chatBody([{ content: 'Part' }], 'eos_token'));
    expect(odd.message.stopReason).toBe('error');
    expect(odd.message.errorMessage).toContain('"eos_token"');
  });

  it('cached prompt tokens are counted as cacheRead, not input', async () => {
    const body = chatBody([{ content: 'Hi' }], 'stop').replace(
      '"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}',
      '"usage":{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_tokens_details":{"cached_tokens":800},"completion_tokens_details":{"reasoning_tokens":20}}',
    );
    expect(body).toContain('"cached_tokens":800');
    const { message } = await replayBody(body);
    expect(message.usage).toMatchObject({ input: 200, cacheRead: 800, output: 50, reasoning: 20, totalTokens: 1050 });
    expect(message.usage.cost.cacheRead).toBeCloseTo((800 * 1.25) / 1e6, 12);
  });
});

describe('OpenAIProvider: the request', () => {
  const send = async (messages: Message[], request: Parameters<OpenAIProvider['stream']>[2] = {}, p = provider()) => {
    server.reply(sse(chatBody([{ content: 'ok' }], 'stop')));
    const { message } = await collectStream(p.stream(GPT_4O, messages, request));
    expect(message.stopReason).toBe('stop');
    return server.requests.at(-1)!;
  };
  const assistant = (
    content: AssistantMessage['content'],
    extra: Partial<AssistantMessage> = {},
  ): AssistantMessage => ({
    role: 'assistant',
    content,
    stopReason: 'toolUse',
    usage: EMPTY_USAGE,
    provider: 'openai',
    model: 'gpt-4o-2024-08-06',
    timestamp: 1,
    ...extra,
  });
  const result = (toolCallId: string, content: ToolResultMessage['content']): ToolResultMessage => ({
    role: 'toolResult',
    toolCallId,
    toolName: 'weather',
    content,
    isError: false,
    timestamp: 2,
  });
  const PNG = { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' };
  const tools = [
    {
      name: 'weather',
      description: 'Weather',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ];

  it('posts to /v1/chat/completions: streaming with usage, system message, tools, tool_choice, limits', async () => {
    const request = await send([userMessage('Hi')], {
      systemPrompt: 'Be brief.',
      tools,
      toolChoice: { type: 'tool', name: 'weather' },
      options: { maxTokens: 300, temperature: 0.2, reasoningEffort: 'low' },
    });
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe('Bearer test-key');
    expect(request.body).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [
        { type: 'function', function: { name: 'weather', description: 'Weather', parameters: tools[0]!.inputSchema } },
      ],
      tool_choice: { type: 'function', function: { name: 'weather' } },
      max_completion_tokens: 300,
      temperature: 0.2,
      reasoning_effort: 'low',
    });
  });

  it('maxTokensField "max_tokens" for older compatible servers', async () => {
    const request = await send(
      [userMessage('Hi')],
      { options: { maxTokens: 64 } },
      provider({ maxTokensField: 'max_tokens' }),
    );
    expect(request.body.max_tokens).toBe(64);
    expect(request.body.max_completion_tokens).toBeUndefined();
  });

  it('converts images, tool calls (sorted-key arguments), tool messages, and tool-result images after the results', async () => {
    const request = await send([
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, PNG], timestamp: 0 },
      assistant([
        { type: 'thinking', thinking: 'My own reasoning: not replayable here.' },
        { type: 'text', text: 'Checking.' },
        { type: 'toolCall', id: 'call_a', name: 'weather', arguments: { units: 'c', city: 'Paris' } },
        { type: 'toolCall', id: 'call_b', name: 'weather', arguments: { city: 'Oslo' } },
      ]),
      result('call_a', [{ type: 'text', text: 'Sunny' }]),
      result('call_b', [{ type: 'text', text: 'Radar:' }, PNG]),
    ]);
    const dataUrl = 'data:image/png;base64,iVBORw0KGgo=';
    expect(request.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look:' },
          { type: 'image_url', image_url: { url: dataUrl } },
        ],
      },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris","units":"c"}' } },
          { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'Sunny' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Radar:' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by the tools above:' },
          { type: 'image_url', image_url: { url: dataUrl } },
        ],
      },
    ]);
  });

  it('is byte-stable: the same transcript gives the same body whatever the key order it was stored with', async () => {
    const transcript = (args: Record<string, unknown>): Message[] => [
      { role: 'user', content: 'Go', timestamp: 1 },
      assistant([{ type: 'toolCall', id: 'call_1', name: 'weather', arguments: args }]),
      result('call_1', [{ type: 'text', text: 'ok' }]),
    ];
    const first = await send(transcript({ city: 'Paris', units: { wind: 'kmh', temp: 'c' } }), { tools });
    const second = await send(transcript({ units: { temp: 'c', wind: 'kmh' }, city: 'Paris' }), { tools });
    expect(first.rawBody).toBe(second.rawBody);
  });

  it('hands off an Anthropic transcript: thinking as text, long ids cut to 40 characters consistently', async () => {
    const longId = 'toolu_01NRLabsLyVHZPKxbKvkfSMn_and_a_very_long_suffix_beyond_forty';
    const request = await send([
      userMessage('Weather?'),
      assistant(
        [
          { type: 'thinking', thinking: 'Use the tool.', signature: 'sig' },
          { type: 'thinking', thinking: 'OPAQUE', redacted: true },
          { type: 'toolCall', id: longId, name: 'weather', arguments: { city: 'Paris' } },
        ],
        { provider: 'anthropic', model: 'claude-sonnet-4-6' },
      ),
      result(longId, [{ type: 'text', text: 'Sunny' }]),
    ]);
    const [, replayed, tool] = request.body.messages;
    expect(replayed.content).toBe('Use the tool.');
    const id = replayed.tool_calls[0].id as string;
    // 31 characters of the original, `_`, and 8 hex digits of its hash: 40.
    expect(id).toMatch(/^toolu_01NRLabsLyVHZPKxbKvkfSMn__[0-9a-f]{8}$/);
    expect(tool).toEqual({ role: 'tool', tool_call_id: id, content: 'Sunny' });
  });
});
