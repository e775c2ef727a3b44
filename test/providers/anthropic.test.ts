// AnthropicProvider through the real @anthropic-ai/sdk client, against recorded Anthropic streams served locally.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { recordedPayloads, recordingBodies } from './recordings.js';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

// Not the recordings' claude-sonnet-4-5: the SDK warns on every request to a deprecated model.
const SONNET = findModel('claude-sonnet-4-6')!;
const SONNET_4: Model = {
  id: 'claude-sonnet-4-20250514',
  provider: 'anthropic',
  cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
};

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const provider = (options: ConstructorParameters<typeof AnthropicProvider>[0] = {}) =>
  new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url, ...options });

/** Serves one response of a recording and streams it through the provider, checking the stream contract. */
async function replay(file: string, options: { step?: number; model?: Model } = {}) {
  const body = recordingBodies('anthropic', file)[options.step ?? 0]!;
  server.reply(sse(body));
  const stream = await collectStream(provider().stream(options.model ?? SONNET, [userMessage('Hi')]));
  expectWellFormed(stream);
  return { ...stream, recorded: recordedPayloads(body) };
}

/** The concatenated text_delta texts of one wire block of a recorded response. */
function recordedText(
  recorded: { type: string; index?: number; delta?: { type: string; text?: string } }[],
  index: number,
) {
  return recorded
    .filter((e) => e.type === 'content_block_delta' && e.index === index && e.delta?.type === 'text_delta')
    .map((e) => e.delta!.text)
    .join('');
}

describe('AnthropicProvider: every recorded stream', () => {
  it('text-basic: text deltas, ping ignored, usage and cost from the table, responseId and precise model', async () => {
    const { events, message } = await replay('text-basic.vercel-ai.jsonl');
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×6', 'text_end:0', 'done']);
    expect(message.content).toEqual([
      {
        type: 'text',
        text: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
      },
    ]);
    expect(message).toMatchObject({
      stopReason: 'stop',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5-20250929',
      responseId: 'msg_01QC4g3HwBThD4BaNtBckFDJ',
    });
    expect(message.usage).toMatchObject({ input: 12, output: 30, cacheRead: 0, cacheWrite: 0, totalTokens: 42 });
    expect(message.usage.cost.input).toBeCloseTo((12 * 3) / 1e6, 12);
    expect(message.usage.cost.total).toBeCloseTo((12 * 3 + 30 * 15) / 1e6, 12);
  });

  it('thinking-signature-then-text: thinking deltas (the empty one skipped), the signature kept on the block', async () => {
    const { events, message, recorded } = await replay('thinking-signature-then-text.vercel-ai.jsonl');
    const signature = recorded.find((e) => e.delta?.type === 'signature_delta').delta.signature as string;
    expect(signature).toHaveLength(332);
    expect(trace(events)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_delta:0×9',
      'thinking_end:0',
      'text_start:1',
      'text_delta:1×3',
      'text_end:1',
      'done',
    ]);
    expect(message.content).toEqual([
      {
        type: 'thinking',
        thinking: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185',
        signature,
      },
      { type: 'text', text: '925 ÷ 5 = 185' },
    ]);
    expect(message.stopReason).toBe('stop');
    expect(message.usage).toMatchObject({ input: 69, output: 53 });
  });

  it('tool-use-input-json-delta: streamed arguments previewed tolerantly, parsed strictly at the end', async () => {
    const { events, message } = await replay('tool-use-input-json-delta.vercel-ai.jsonl');
    expect(trace(events)).toEqual(['start', 'toolcall_start:0', 'toolcall_delta:0×2', 'toolcall_end:0', 'done']);
    const preview = events.find((e) => e.type === 'toolcall_delta')!;
    // The first fragment is a complete array but an open object: the preview closes it.
    expect('partial' in preview && preview.partial.content[0]).toMatchObject({
      arguments: { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] },
    });
    expect(message.content).toEqual([
      {
        type: 'toolCall',
        id: 'toolu_01KFbKqPYSuAKujiL6mTfzYA',
        name: 'json',
        arguments: { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] },
      },
    ]);
    expect(message).toMatchObject({ stopReason: 'toolUse', model: 'claude-haiku-4-5-20251001' });
    expect(message.usage).toMatchObject({ input: 849, output: 47 });
  });

  it('text-then-tool-use-empty-input: a call whose only fragment is empty has arguments {}', async () => {
    const { events, message } = await replay('text-then-tool-use-empty-input.vercel-ai.jsonl');
    expect(trace(events)).toEqual([
      'start',
      'text_start:0',
      'text_delta:0×2',
      'text_end:0',
      'toolcall_start:1',
      'toolcall_end:1',
      'done',
    ]);
    expect(message.content).toEqual([
      { type: 'text', text: "I'll update the issue list for you." },
      { type: 'toolCall', id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', arguments: {} },
    ]);
    expect(message.stopReason).toBe('toolUse');
  });

  it('tool-use-plus-server-tool, response 1: the client call is kept, the server-side tool_use is skipped', async () => {
    const { events, message, recorded } = await replay('tool-use-plus-server-tool-multi-step.vercel-ai.jsonl');
    expect(trace(events)).toEqual([
      'start',
      'text_start:0',
      'text_delta:0×10',
      'text_end:0',
      'toolcall_start:1',
      'toolcall_delta:1×4',
      'toolcall_end:1',
      'done',
    ]);
    expect(message.content).toEqual([
      { type: 'text', text: recordedText(recorded, 0) },
      {
        type: 'toolCall',
        id: 'toolu_01U8pzAHj2vNdPCA2Kf8JjeN',
        name: 'readNoteTree',
        arguments: { noteId: 'd10aa585-982b-4bd9-984e-420f9b3717f7' },
      },
    ]);
    expect(message).toMatchObject({ stopReason: 'toolUse', responseId: 'msg_01WUP4eZFC22KbkesuJGqVAw' });
  });

  it('tool-use-plus-server-tool, response 2: a server tool result block is skipped, indices stay dense', async () => {
    const { message, recorded } = await replay('tool-use-plus-server-tool-multi-step.vercel-ai.jsonl', { step: 1 });
    expect(message.content).toEqual([
      { type: 'text', text: recordedText(recorded, 1) },
      {
        type: 'toolCall',
        id: 'toolu_01QoRrvXNv6w4vZSyo9cnxP2',
        name: 'executeEditorOperation',
        arguments: {
          noteId: 'd10aa585-982b-4bd9-984e-420f9b3717f7',
          operations: [{ op: 'insert_node', type: 'bulletedListItem', text: 'bye', at: { type: 'path', path: [1] } }],
        },
      },
    ]);
    expect(message.usage).toMatchObject({ input: 1398, output: 213 });
  });

  it('tool-use-plus-server-tool, response 3: the final text answer', async () => {
    const { message, recorded } = await replay('tool-use-plus-server-tool-multi-step.vercel-ai.jsonl', { step: 2 });
    expect(message.content).toEqual([{ type: 'text', text: recordedText(recorded, 0) }]);
    expect((message.content[0] as { text: string }).text).toMatch(/^Great! I've successfully completed the task/);
    expect(message.stopReason).toBe('stop');
  });

  it('prompt-cache-usage: cache reads and writes counted apart from input (message_delta wins), priced', async () => {
    const { events, message } = await replay('prompt-cache-usage-server-tools.vercel-ai.jsonl', {
      model: findModel('claude-sonnet-5')!,
    });
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×2', 'text_end:0', 'done']);
    expect(message.content).toEqual([
      { type: 'text', text: 'The sum of the squares of the numbers 1 through 12 is **650**.' },
    ]);
    expect(message.usage).toMatchObject({
      input: 6,
      output: 198,
      cacheRead: 6289,
      cacheWrite: 3337,
      totalTokens: 6 + 198 + 6289 + 3337,
    });
    expect(message.usage.cost.cacheRead).toBeCloseTo((6289 * 0.2) / 1e6, 12);
    expect(message.usage.cost.cacheWrite).toBeCloseTo((3337 * 2.5) / 1e6, 12);
  });

  it('web-search: citation deltas ignored, 19 text blocks, usage priced with the caller’s Model.cost', async () => {
    const { message, recorded } = await replay('web-search-server-tool.vercel-ai.jsonl', { model: SONNET_4 });
    expect(message.content).toHaveLength(19);
    // Wire blocks 0 and 1 are the server tool call and its result; text blocks 2…20 become 0…18.
    message.content.forEach((block, i) => expect(block).toEqual({ type: 'text', text: recordedText(recorded, i + 2) }));
    expect(message.usage).toMatchObject({ input: 15665, output: 795 });
    expect(message.usage.cost.total).toBeCloseTo((15665 * 3 + 795 * 15) / 1e6, 12);
  });

  it('text-then-tool-use (raw SSE with event lines): text then a get_weather call with split arguments', async () => {
    const { events, message } = await replay('text-then-tool-use.anthropic-sdk-ts.sse', { model: SONNET_4 });
    expect(trace(events)).toEqual([
      'start',
      'text_start:0',
      'text_delta:0×2',
      'text_end:0',
      'toolcall_start:1',
      'toolcall_delta:1×4',
      'toolcall_end:1',
      'done',
    ]);
    expect(message.content).toEqual([
      { type: 'text', text: "I'll check the current weather in Paris for you." },
      { type: 'toolCall', id: 'toolu_01NRLabsLyVHZPKxbKvkfSMn', name: 'get_weather', arguments: { location: 'Paris' } },
    ]);
    // message_delta carries only output_tokens here: the input from message_start stays.
    expect(message.usage).toMatchObject({ input: 377, output: 65 });
  });

  it('redacted-thinking: each redacted block kept whole and opaque, marked redacted', async () => {
    const { events, message, recorded } = await replay('redacted-thinking.pydantic-ai.cassette.yaml');
    const data = recorded
      .filter((e) => e.type === 'content_block_start' && e.content_block.type === 'redacted_thinking')
      .map((e) => e.content_block.data as string);
    expect(data).toHaveLength(2);
    expect(trace(events)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_end:0',
      'thinking_start:1',
      'thinking_end:1',
      'text_start:2',
      'text_delta:2×15',
      'text_end:2',
      'done',
    ]);
    expect(message.content).toEqual([
      { type: 'thinking', thinking: data[0], redacted: true },
      { type: 'thinking', thinking: data[1], redacted: true },
      { type: 'text', text: recordedText(recorded, 2) },
    ]);
    expect(message.usage).toMatchObject({ input: 92, output: 189 });
  });

  it('thinking-signature-padded-sse: whitespace-padded data lines parse; 95 text deltas', async () => {
    const { events, message, recorded } = await replay('thinking-signature-padded-sse.pydantic-ai.cassette.yaml', {
      model: SONNET_4,
    });
    expect(trace(events)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_delta:0×13',
      'thinking_end:0',
      'text_start:1',
      'text_delta:1×95',
      'text_end:1',
      'done',
    ]);
    const signature = recorded.find((e) => e.delta?.type === 'signature_delta').delta.signature as string;
    expect(message.content[0]).toEqual({
      type: 'thinking',
      thinking:
        'This is a straightforward question about pedestrian safety. I should provide clear, helpful advice about how to safely cross a street. This is basic safety information that could help prevent accidents.',
      signature,
    });
    expect(message.content[1]).toEqual({ type: 'text', text: recordedText(recorded, 1) });
    expect(message.usage).toMatchObject({ input: 43, output: 282 });
  });
});

describe('AnthropicProvider: the request', () => {
  const reply = () => server.reply(sse(recordingBodies('anthropic', 'text-basic.vercel-ai.jsonl')[0]!));
  const send = async (
    messages: Message[],
    request: Parameters<AnthropicProvider['stream']>[2] = {},
    model = SONNET,
  ) => {
    reply();
    const { message } = await collectStream(provider().stream(model, messages, request));
    expect(message.stopReason).toBe('stop');
    return server.requests.at(-1)!;
  };
  const assistant = (
    content: AssistantMessage['content'],
    extra: Partial<AssistantMessage> = {},
  ): AssistantMessage => ({
    role: 'assistant',
    content,
    stopReason: content.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
    usage: EMPTY_USAGE,
    provider: 'anthropic',
    model: 'claude-sonnet-4-6',
    timestamp: 1,
    ...extra,
  });
  const result = (toolCallId: string, content: ToolResultMessage['content'], isError = false): ToolResultMessage => ({
    role: 'toolResult',
    toolCallId,
    toolName: 'weather',
    content,
    isError,
    timestamp: 2,
  });
  const tools = [
    {
      name: 'weather',
      description: 'Weather',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    },
    { name: 'time', description: 'Time', inputSchema: { type: 'object', properties: {} } },
  ];
  const PNG = { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' };

  it('posts to /v1/messages with the key, streaming, system prompt, tools and tool_choice', async () => {
    const request = await send([userMessage('Hi')], { systemPrompt: 'Be brief.', tools, toolChoice: 'required' });
    expect(request.path).toBe('/v1/messages');
    expect(request.headers.authorization).toBe('Bearer test-key');
    expect(request.body).toMatchObject({
      model: 'claude-sonnet-4-6',
      stream: true,
      max_tokens: 32_000,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      tool_choice: { type: 'any' },
    });
    expect(request.body.tools).toEqual([
      { name: 'weather', description: 'Weather', input_schema: tools[0]!.inputSchema },
      { name: 'time', description: 'Time', input_schema: tools[1]!.inputSchema, cache_control: { type: 'ephemeral' } },
    ]);
    expect(request.body.thinking).toBeUndefined();
  });

  it('replays thinking with its signature and redacted thinking verbatim, merges consecutive tool results', async () => {
    const messages: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, PNG], timestamp: 0 },
      assistant([
        { type: 'thinking', thinking: 'Let me check both.', signature: 'sig-abc' },
        { type: 'thinking', thinking: 'ENCRYPTED', redacted: true },
        { type: 'text', text: 'Checking.' },
        { type: 'toolCall', id: 'toolu_1', name: 'weather', arguments: { city: 'Paris' } },
        { type: 'toolCall', id: 'toolu_2', name: 'weather', arguments: { city: 'Oslo' } },
      ]),
      result('toolu_1', [{ type: 'text', text: 'Sunny' }]),
      result('toolu_2', [{ type: 'text', text: 'Radar:' }, PNG], true),
      userMessage('Thanks'),
    ];
    const request = await send(messages, { options: { thinkingBudget: 2048 } });
    expect(request.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(request.body.max_tokens).toBe(32_000 + 2048);
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    expect(request.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, image] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Let me check both.', signature: 'sig-abc' },
          { type: 'redacted_thinking', data: 'ENCRYPTED' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Oslo' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny' }] },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            content: [{ type: 'text', text: 'Radar:' }, image],
            is_error: true,
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Thanks', cache_control: { type: 'ephemeral' } }] },
    ]);
  });

  it('cacheRetention: "long" asks for a 1-hour TTL, "none" sets no breakpoint; per request or per provider', async () => {
    const long = await send([userMessage('Hi')], { systemPrompt: 'S', options: { cacheRetention: 'long' } });
    expect(long.body.system[0].cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    expect(long.body.messages[0].content[0].cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    reply();
    await collectStream(
      provider({ cacheRetention: 'none' }).stream(SONNET, [userMessage('Hi')], { systemPrompt: 'S', tools }),
    );
    expect(server.requests.at(-1)!.rawBody).not.toContain('cache_control');
  });

  it('Claude 5 models get adaptive thinking for a budget (manual thinking is a 400 there); thinking: "adaptive" asks for it', async () => {
    const five = await send([userMessage('Hi')], { options: { thinkingBudget: 4096 } }, findModel('claude-sonnet-5-5'));
    expect(five.body.thinking).toEqual({ type: 'adaptive' });
    expect(five.body.max_tokens).toBe(32_000);
    const explicit = await send([userMessage('Hi')], { options: { thinking: 'adaptive' } });
    expect(explicit.body.thinking).toEqual({ type: 'adaptive' });
  });

  it('hands off a foreign transcript: thinking as text, ids normalised, failed turns dropped, missing results added', async () => {
    const foreign = (content: AssistantMessage['content'], extra: Partial<AssistantMessage> = {}) =>
      assistant(content, { provider: 'openai-responses', model: 'gpt-5.4', ...extra });
    const messages: Message[] = [
      userMessage('Plan a trip'),
      foreign([
        {
          type: 'thinking',
          thinking: 'Weather first.',
          signature: '{"id":"rs_1","encrypted_content":"x","summary":[]}',
        },
        { type: 'toolCall', id: 'call_1|fc_1', name: 'weather', arguments: { city: 'Paris' } },
        { type: 'toolCall', id: 'call_2|fc_2', name: 'weather', arguments: { city: 'Rome' } },
      ]),
      result('call_1|fc_1', [{ type: 'text', text: 'Sunny' }]),
      // call_2 never got a result
      userMessage('And Oslo?'),
      foreign([{ type: 'text', text: 'Partial answ' }], { stopReason: 'error', errorMessage: 'HTTP 500' }),
      // a different Claude model's thinking is foreign too (signatures are bound to their model)
      assistant(
        [
          { type: 'thinking', thinking: 'Opus thought.', signature: 'sig-opus' },
          { type: 'text', text: 'Oslo: rain.' },
        ],
        {
          model: 'claude-opus-4-8',
        },
      ),
      userMessage('Thanks'),
    ];
    const request = await send(messages);
    expect(request.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Plan a trip' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Weather first.' },
          { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'Sunny' }] },
          {
            type: 'tool_result',
            tool_use_id: 'call_2',
            content: [{ type: 'text', text: 'No result provided for this tool call.' }],
            is_error: true,
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'And Oslo?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Opus thought.' },
          { type: 'text', text: 'Oslo: rain.' },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'Thanks', cache_control: { type: 'ephemeral' } }] },
    ]);
  });

  it('is byte-stable: the same transcript gives the same body whatever the key order it was stored with', async () => {
    const call = (args: Record<string, unknown>): Message[] => [
      userMessage('Go'),
      assistant([{ type: 'toolCall', id: 'toolu_1', name: 'weather', arguments: args }]),
      result('toolu_1', [{ type: 'text', text: 'ok' }]),
    ];
    const fixedTime = (messages: Message[]) => messages.map((m) => ({ ...m, timestamp: 5 }));
    await send(fixedTime(call({ city: 'Paris', units: { temp: 'c', wind: 'kmh' } })), { systemPrompt: 'S', tools });
    await send(fixedTime(call({ units: { wind: 'kmh', temp: 'c' }, city: 'Paris' })), { systemPrompt: 'S', tools });
    const [first, second] = server.requests;
    expect(first!.rawBody).toBe(second!.rawBody);
    expect(first!.body.messages[1].content[0].input).toEqual({ city: 'Paris', units: { temp: 'c', wind: 'kmh' } });
  });
});

describe('AnthropicProvider: construction', () => {
  it('without any credential, constructs, and the first call ends in an auth error event without a request', async () => {
    // No key, no token, no profile: an empty config directory keeps the SDK's credential chain from finding any.
    const names = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_PROFILE', 'ANTHROPIC_FEDERATION_RULE_ID'];
    const saved = Object.fromEntries([...names, 'ANTHROPIC_CONFIG_DIR'].map((n) => [n, process.env[n]]));
    for (const name of names) delete process.env[name];
    process.env.ANTHROPIC_CONFIG_DIR = mkdtempSync(join(tmpdir(), 'cubepi-anthropic-'));
    try {
      const keyless = new AnthropicProvider({ baseURL: server.url });
      const { events, message } = await collectStream(keyless.stream(SONNET, [userMessage('Hi')]));
      expect(trace(events)).toEqual(['error']);
      expect(message).toMatchObject({ stopReason: 'error', errorKind: 'auth' });
      expect(server.requests).toHaveLength(0);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('rejects an unknown cacheRetention at construction', () => {
    expect(() => new AnthropicProvider({ apiKey: 'k', cacheRetention: 'forever' as never })).toThrow(/cacheRetention/);
  });
});
