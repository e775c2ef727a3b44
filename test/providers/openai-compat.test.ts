// OpenAIProvider's compat profiles and Azure OpenAI, through the real openai SDK against a local server. No recording
// exists of these servers' streams: each stream below is built from the server's documented chunk format (named in
// each test), on the Chat Completions chunk shape of the recordings in test/fixtures/providers/openai-chat.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConfigurationError, EMPTY_USAGE, userMessage, type Message, type Model, type ToolResultMessage } from 'cubepi';
import { detectOpenAICompat, OPENAI_COMPAT, OpenAIProvider, type OpenAICompatName } from 'cubepi/providers/openai';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const MODEL: Model = { id: 'local-model', provider: 'openai' };
const tools = [
  {
    name: 'weather',
    description: 'Weather',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

const provider = (options: ConstructorParameters<typeof OpenAIProvider>[0] = {}) =>
  new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1`, ...options });

const chunk = (choices: unknown[], extra: object = {}, id: string | undefined = 'chatcmpl-x') =>
  `data: ${JSON.stringify({ ...(id !== undefined ? { id } : {}), object: 'chat.completion.chunk', created: 1, model: 'local-model', choices, ...extra })}\n\n`;
const deltaChunk = (delta: object, finish: string | null = null, extra: object = {}, id?: string) =>
  chunk([{ index: 0, delta, finish_reason: finish }], extra, id);
const usageChunk = (prompt: number, completion: number) =>
  chunk([], { usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
const DONE = 'data: [DONE]\n\n';

async function run(body: string, p: OpenAIProvider, messages: Message[] = [userMessage('Hi')]) {
  server.reply(sse(body));
  const collected = await collectStream(p.stream(MODEL, messages, { tools }));
  expectWellFormed(collected);
  return collected;
}

describe('detectOpenAICompat: a profile from the base URL', () => {
  it.each([
    [undefined, 'openai'],
    ['https://api.openai.com/v1', 'openai'],
    ['https://api.deepseek.com', 'deepseek'],
    ['https://api.deepseek.com/v1', 'deepseek'],
    ['https://openrouter.ai/api/v1', 'openrouter'],
    ['http://localhost:8080/v1', 'llamacpp'],
    ['http://localhost:11434/v1', 'ollama'],
    ['https://ollama.com/v1', 'ollama'],
    ['http://127.0.0.1:1234/v1', 'lmstudio'],
    ['https://api.groq.com/openai/v1', 'groq'],
    ['https://generativelanguage.googleapis.com/v1beta/openai/', 'gemini'],
    ['https://my-resource.openai.azure.com/openai', 'azure'],
    // Ports match exactly: 12345 is not LM Studio's 1234, and a host merely containing a name is not that host.
    ['http://127.0.0.1:12345/v1', 'openai'],
    ['https://api.deepseek.com.example.org/v1', 'openai'],
    // vLLM has no fixed host or port (8000 is only its default): it is named, never guessed.
    ['http://gpu-box:8000/v1', 'openai'],
    ['not a url', 'openai'],
  ])('%s → %s', (url, name) => {
    expect(detectOpenAICompat(url).name).toBe(name);
  });

  it('the provider uses the detected profile and is named after it, unless told otherwise', () => {
    expect(new OpenAIProvider({ baseURL: 'http://localhost:11434/v1', apiKey: 'x' })).toMatchObject({
      id: 'ollama',
      compat: { name: 'ollama' },
    });
    expect(new OpenAIProvider({ baseURL: 'http://gpu:8000/v1', apiKey: 'x', compat: 'vllm' }).id).toBe('vllm');
    expect(new OpenAIProvider({ baseURL: 'http://localhost:11434/v1', apiKey: 'x', id: 'local' }).id).toBe('local');
    expect(new OpenAIProvider({ apiKey: 'x' }).id).toBe('openai');
  });

  it('an unknown profile name is a ConfigurationError naming the built-ins', () => {
    expect(() => provider({ compat: 'mistral' as OpenAICompatName })).toThrow(ConfigurationError);
    expect(() => provider({ compat: 'mistral' as OpenAICompatName })).toThrow(/unknown compat profile "mistral".*vllm/);
  });
});

describe('compat profiles: the request each server gets', () => {
  const send = async (p: OpenAIProvider) => {
    server.reply(sse(deltaChunk({ content: 'ok' }, 'stop') + usageChunk(1, 1) + DONE));
    await collectStream(
      p.stream(MODEL, [userMessage('Hi')], { tools, options: { maxTokens: 99, reasoningEffort: 'low' } }),
    );
    return server.requests.at(-1)!.body;
  };

  it.each(Object.keys(OPENAI_COMPAT) as OpenAICompatName[])(
    '%s: its max-tokens field, stream_options and reasoning_effort as declared; never strict',
    async (name) => {
      const profile = OPENAI_COMPAT[name];
      const body = await send(provider({ compat: name }));
      expect(body[profile.maxTokensField]).toBe(99);
      const other = profile.maxTokensField === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
      expect(body[other]).toBeUndefined();
      expect(body.stream_options).toEqual(profile.streamOptions ? { include_usage: true } : undefined);
      expect(body.reasoning_effort).toBe(profile.reasoningEffort ? 'low' : undefined);
      expect(JSON.stringify(body.tools)).not.toContain('strict');
    },
  );

  it('a profile of your own: a server that rejects stream_options gets none', async () => {
    const p = provider({ compat: { ...OPENAI_COMPAT.vllm, name: 'strict-proxy', streamOptions: false } });
    expect(p.id).toBe('strict-proxy');
    const body = await send(p);
    expect(body).not.toHaveProperty('stream_options');
    expect(body.max_tokens).toBe(99);
  });

  it('maxTokensField still overrides the profile', async () => {
    const body = await send(provider({ compat: 'deepseek', maxTokensField: 'max_completion_tokens' }));
    expect(body.max_completion_tokens).toBe(99);
    expect(body.max_tokens).toBeUndefined();
  });
});

describe('compat profiles: what each server streams', () => {
  it('DeepSeek: reasoning_content streams as thinking, and is never sent back (DeepSeek answers 400 to it)', async () => {
    // DeepSeek's documented deepseek-reasoner stream: delta.reasoning_content chunks, then delta.content.
    const p = provider({ compat: 'deepseek' });
    const { events, message } = await run(
      deltaChunk({ role: 'assistant', reasoning_content: 'Two ' }) +
        deltaChunk({ reasoning_content: 'plus two.' }) +
        deltaChunk({ content: '4' }) +
        deltaChunk({}, 'stop') +
        usageChunk(9, 12) +
        DONE,
      p,
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
    expect(message).toMatchObject({ provider: 'deepseek', usage: { input: 9, output: 12 } });
    expect(message.content[0]).toEqual({ type: 'thinking', thinking: 'Two plus two.' });
    await run(deltaChunk({ content: 'ok' }, 'stop') + usageChunk(1, 1) + DONE, p, [
      userMessage('2+2?'),
      message,
      userMessage('Sure?'),
    ]);
    const replayed = server.requests.at(-1)!.body.messages;
    expect(replayed[1]).toEqual({ role: 'assistant', content: '4' });
    expect(server.requests.at(-1)!.rawBody).not.toContain('reasoning_content');
  });

  it('OpenRouter: delta.reasoning streams as thinking', async () => {
    // OpenRouter's documented reasoning tokens: delta.reasoning (with reasoning_details beside it, not read here).
    const { message } = await run(
      deltaChunk({
        role: 'assistant',
        reasoning: 'Hmm.',
        reasoning_details: [{ type: 'reasoning.text', text: 'Hmm.', format: 'unknown', index: 0 }],
      }) +
        deltaChunk({ content: 'Yes.' }) +
        deltaChunk({}, 'stop') +
        usageChunk(3, 4) +
        DONE,
      provider({ compat: 'openrouter' }),
    );
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Hmm.' },
      { type: 'text', text: 'Yes.' },
    ]);
  });

  it('a missing usage chunk (older llama.cpp, servers ignoring stream_options): usage zero, marked unreported', async () => {
    const { message } = await run(
      deltaChunk({ role: 'assistant', content: 'Hello' }) + deltaChunk({}, 'stop') + DONE,
      provider({ compat: 'llamacpp' }),
    );
    expect(message.stopReason).toBe('stop');
    expect(message.usage).toMatchObject({ input: 0, output: 0, totalTokens: 0, unreported: true });
  });

  it('Groq: usage reported in x_groq.usage on the last chunk is the usage', async () => {
    // Groq's documented stream: the final chunk carries x_groq.usage (and no top-level usage).
    const { message } = await run(
      deltaChunk({ role: 'assistant', content: 'Fast.' }) +
        deltaChunk({}, 'stop', {
          x_groq: { id: 'req_1', usage: { prompt_tokens: 21, completion_tokens: 3, total_tokens: 24 } },
        }) +
        DONE,
      provider({ compat: 'groq' }),
    );
    expect(message.usage).toMatchObject({ input: 21, output: 3, totalTokens: 24 });
    expect(message.usage.unreported).toBeUndefined();
  });

  it('tool calls streamed whole without index (Ollama): one call each, keyed by id', async () => {
    const call = (id: string, city: string) => ({
      id,
      type: 'function',
      function: { name: 'weather', arguments: JSON.stringify({ city }) },
    });
    const { message } = await run(
      deltaChunk({ role: 'assistant', tool_calls: [call('call_p', 'Paris')] }) +
        deltaChunk({ tool_calls: [call('call_o', 'Oslo')] }) +
        deltaChunk({}, 'tool_calls') +
        usageChunk(5, 5) +
        DONE,
      provider({ compat: 'ollama' }),
    );
    expect(message.stopReason).toBe('toolUse');
    expect(message.content).toEqual([
      { type: 'toolCall', id: 'call_p', name: 'weather', arguments: { city: 'Paris' } },
      { type: 'toolCall', id: 'call_o', name: 'weather', arguments: { city: 'Oslo' } },
    ]);
  });

  it("arguments sent as a JSON object instead of a string are the call's arguments; malformed ones are invalid, not a crash", async () => {
    const { message } = await run(
      deltaChunk({
        role: 'assistant',
        tool_calls: [
          { index: 0, id: 'c_obj', type: 'function', function: { name: 'weather', arguments: { city: 'Lima' } } },
          { index: 1, id: 'c_bad', type: 'function', function: { name: 'weather', arguments: '{"city": Lima' } },
        ],
      }) +
        deltaChunk({}, 'tool_calls') +
        usageChunk(2, 2) +
        DONE,
      provider({ compat: 'ollama' }),
    );
    expect(message.content[0]).toEqual({ type: 'toolCall', id: 'c_obj', name: 'weather', arguments: { city: 'Lima' } });
    expect(message.content[1]).toMatchObject({ id: 'c_bad', arguments: {}, invalidArguments: '{"city": Lima' });
    expect(message.stopReason).toBe('toolUse');
  });

  it('tool calls without ids get ids made from the response id and position: stable, unique per response', async () => {
    const body = (responseId: string) =>
      deltaChunk(
        { role: 'assistant', tool_calls: [{ index: 0, function: { name: 'weather', arguments: '{"ci' } }] },
        null,
        {},
        responseId,
      ) +
      deltaChunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Rome"}' } }] }, null, {}, responseId) +
      deltaChunk(
        { tool_calls: [{ index: 1, function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
        null,
        {},
        responseId,
      ) +
      deltaChunk({}, 'tool_calls', {}, responseId) +
      DONE;
    const first = await run(body('chatcmpl-abc'), provider({ compat: 'llamacpp' }));
    const again = await run(body('chatcmpl-abc'), provider({ compat: 'llamacpp' }));
    const other = await run(body('chatcmpl-def'), provider({ compat: 'llamacpp' }));
    const ids = (m: typeof first.message) => m.content.map((b) => (b.type === 'toolCall' ? b.id : ''));
    expect(ids(first.message)).toEqual(['call_chatcmpl-abc_0', 'call_chatcmpl-abc_1']);
    expect(ids(again.message)).toEqual(ids(first.message));
    expect(ids(other.message)).toEqual(['call_chatcmpl-def_0', 'call_chatcmpl-def_1']);
    expect(first.message.content[0]).toMatchObject({ arguments: { city: 'Rome' } });
  });

  it('Gemini: extra_content thought signatures are kept on the calls and sent back byte for byte', async () => {
    // Gemini's OpenAI endpoint (ai.google.dev, "Thought signatures", OpenAI compatibility): each function call carries
    // extra_content.google.thought_signature, which must come back on the replayed call.
    const signature = 'CiQB0e2Kb+/signature==';
    const p = provider({ compat: 'gemini' });
    const { message } = await run(
      deltaChunk({
        role: 'assistant',
        tool_calls: [
          {
            index: 0,
            id: 'function-call-1',
            type: 'function',
            function: { name: 'weather', arguments: '{"city":' },
            extra_content: { google: { thought_signature: signature } },
          },
        ],
      }) +
        deltaChunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }) +
        deltaChunk({
          tool_calls: [
            {
              index: 1,
              id: 'function-call-2',
              type: 'function',
              function: { name: 'weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        }) +
        deltaChunk({}, 'tool_calls') +
        usageChunk(8, 6) +
        DONE,
      p,
    );
    expect(message.content).toEqual([
      { type: 'toolCall', id: 'function-call-1', name: 'weather', arguments: { city: 'Paris' }, signature },
      { type: 'toolCall', id: 'function-call-2', name: 'weather', arguments: { city: 'Oslo' } },
    ]);
    const result = (id: string): ToolResultMessage => ({
      role: 'toolResult',
      toolCallId: id,
      toolName: 'weather',
      content: [{ type: 'text', text: 'Sunny' }],
      isError: false,
      timestamp: 0,
    });
    // Restored as it would be from a checkpoint (JSON), then replayed.
    const restored = JSON.parse(JSON.stringify(message)) as typeof message;
    await run(deltaChunk({ content: 'Both sunny.' }, 'stop') + usageChunk(1, 1) + DONE, p, [
      userMessage('Weather?'),
      restored,
      result('function-call-1'),
      result('function-call-2'),
    ]);
    const calls = server.requests.at(-1)!.body.messages[1].tool_calls;
    expect(calls[0].extra_content).toEqual({ google: { thought_signature: signature } });
    expect(calls[1]).not.toHaveProperty('extra_content');
    expect(server.requests.at(-1)!.rawBody).toContain(`"thought_signature":${JSON.stringify(signature)}`);
  });

  it('Gemini: a signature from another provider is dropped, and other profiles never send extra_content', async () => {
    const foreign = {
      role: 'assistant' as const,
      content: [
        { type: 'toolCall' as const, id: 'c1', name: 'weather', arguments: { city: 'Rome' }, signature: 'sig-x' },
      ],
      stopReason: 'toolUse' as const,
      usage: EMPTY_USAGE,
      provider: 'google',
      model: 'gemini-3-pro',
      timestamp: 0,
    };
    const history = (m: Message): Message[] => [
      userMessage('Rome?'),
      m,
      {
        role: 'toolResult',
        toolCallId: 'c1',
        toolName: 'weather',
        content: [{ type: 'text', text: 'Warm' }],
        isError: false,
        timestamp: 0,
      },
    ];
    await run(
      deltaChunk({ content: 'ok' }, 'stop') + usageChunk(1, 1) + DONE,
      provider({ compat: 'gemini' }),
      history(foreign),
    );
    expect(server.requests.at(-1)!.rawBody).not.toContain('sig-x');
    const own = { ...foreign, provider: 'openai', model: MODEL.id };
    await run(deltaChunk({ content: 'ok' }, 'stop') + usageChunk(1, 1) + DONE, provider(), history(own));
    expect(server.requests.at(-1)!.rawBody).not.toContain('extra_content');
  });
});

describe('Azure OpenAI', () => {
  const azure = (extra: object = {}) =>
    new OpenAIProvider({
      azure: { endpoint: server.url, deployment: 'my-gpt4o', apiVersion: '2024-10-21', apiKey: 'azure-key', ...extra },
    });

  it('posts to the deployment with the api-version and the api-key header; the provider is named azure', async () => {
    const p = azure();
    expect(p.id).toBe('azure');
    const { message } = await run(
      deltaChunk({ role: 'assistant', content: 'Hi' }, 'stop') + usageChunk(2, 1) + DONE,
      p,
    );
    expect(message).toMatchObject({ provider: 'azure', stopReason: 'stop', content: [{ type: 'text', text: 'Hi' }] });
    const request = server.requests.at(-1)!;
    expect(request.path).toBe('/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21');
    expect(request.headers['api-key']).toBe('azure-key');
    expect(request.body.stream_options).toEqual({ include_usage: true });
  });

  it('an Entra ID token provider sends a bearer token instead of a key', async () => {
    const p = azure({ apiKey: undefined, azureADTokenProvider: () => Promise.resolve('entra-token') });
    await run(deltaChunk({ content: 'Hi' }, 'stop') + usageChunk(2, 1) + DONE, p);
    const request = server.requests.at(-1)!;
    expect(request.headers.authorization).toBe('Bearer entra-token');
    expect(request.headers['api-key']).toBeUndefined();
  });

  it('a missing key, endpoint or API version is a ConfigurationError at construction', () => {
    const saved = { ...process.env };
    delete process.env.AZURE_OPENAI_API_KEY;
    delete process.env.AZURE_OPENAI_ENDPOINT;
    delete process.env.OPENAI_API_VERSION;
    try {
      expect(() => azure({ apiKey: undefined })).toThrow(/no API key.*AZURE_OPENAI_API_KEY/);
      expect(() => new OpenAIProvider({ azure: { apiKey: 'k', apiVersion: '2024-10-21' } })).toThrow(
        ConfigurationError,
      );
      expect(() => new OpenAIProvider({ azure: { apiKey: 'k', endpoint: server.url } })).toThrow(/API version/);
    } finally {
      process.env = saved;
    }
  });
});
