// Native structured output and the run's reasoning setting on OpenAI Chat Completions and the Responses API, through
// the real openai SDK against a local server: the request bodies asserted, the answer's JSON text read back.
//
// The recordings in test/fixtures/providers/ hold no structured-output stream (none of the source repositories
// recorded one): the answers below are streams written in the wire format, split into several deltas the way the
// API streams a JSON answer.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  findModel,
  userMessage,
  type Model,
  type NativeOutputRequest,
  type ResolvedReasoning,
  type StreamRequest,
} from 'cubepi';
import { OPENAI_COMPAT, OpenAIProvider, OpenAIResponsesProvider, type OpenAICompatName } from 'cubepi/providers/openai';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const ANSWER = { city: 'Paris', temperatureC: 21.5, tags: ['sunny', 'dry'] };
const ANSWER_JSON = JSON.stringify(ANSWER);
/** The answer's JSON in deltas of 7 characters, as a constrained model streams it. */
const deltas = (text: string) => text.match(/.{1,7}/gs)!;

const OUTPUT: NativeOutputRequest = {
  name: 'weather',
  description: 'The weather in one city',
  schema: {
    type: 'object',
    properties: {
      city: { type: 'string' },
      temperatureC: { type: 'number' },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['city', 'temperatureC', 'tags'],
    additionalProperties: false,
  },
  strict: true,
};

const reasoning = (fields: Omit<ResolvedReasoning, 'requested'>, requested: ResolvedReasoning['requested']) => ({
  requested,
  ...fields,
});

describe('OpenAI Chat Completions', () => {
  const chatBody = (text: string) => {
    const chunk = (choices: unknown[], extra: object = {}) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-o', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-2024-08-06', choices, ...extra })}\n\n`;
    return (
      chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) +
      deltas(text)
        .map((d) => chunk([{ index: 0, delta: { content: d }, finish_reason: null }]))
        .join('') +
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]) +
      chunk([], { usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 } }) +
      'data: [DONE]\n\n'
    );
  };
  const provider = (compat?: OpenAICompatName) =>
    new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1`, ...(compat ? { compat } : {}) });
  const send = async (request: StreamRequest, model: Model = findModel('gpt-4o')!, compat?: OpenAICompatName) => {
    server.reply(sse(chatBody(ANSWER_JSON)));
    const stream = await collectStream(provider(compat).stream(model, [userMessage('Weather in Paris?')], request));
    expectWellFormed(stream);
    expect(stream.message.stopReason).toBe('stop');
    return { body: server.requests.at(-1)!.body, message: stream.message };
  };

  it('sends request.output as response_format json_schema, and the answer text is the JSON', async () => {
    const { body, message } = await send({ output: OUTPUT });
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'weather', description: 'The weather in one city', schema: OUTPUT.schema, strict: true },
    });
    expect(message.content).toEqual([{ type: 'text', text: ANSWER_JSON }]);
    expect(JSON.parse((message.content[0] as { text: string }).text)).toEqual(ANSWER);
  });

  it('sends strict false as given and no description when there is none; no response_format without output', async () => {
    const { body } = await send({ output: { name: 'answer', schema: { type: 'object' }, strict: false } });
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'answer', schema: { type: 'object' }, strict: false },
    });
    const plain = await send({});
    expect(plain.body).not.toHaveProperty('response_format');
  });

  it.each(['vllm', 'ollama', 'lmstudio', 'llamacpp', 'openrouter', 'groq', 'gemini'] as const)(
    'profile %s takes json_schema: response_format is sent',
    async (compat) => {
      const { body } = await send({ output: OUTPUT }, { id: 'local-model', provider: compat }, compat);
      expect(body.response_format.type).toBe('json_schema');
      expect(body.response_format.json_schema.schema).toEqual(OUTPUT.schema);
    },
  );

  it('on the deepseek profile (json_object only) ends with model_incapable before sending anything', async () => {
    expect(OPENAI_COMPAT.deepseek.responseFormat).toBe('json_object');
    const stream = await collectStream(
      provider('deepseek').stream({ id: 'deepseek-chat', provider: 'deepseek' }, [userMessage('Hi')], {
        output: OUTPUT,
      }),
    );
    expect(stream.events.map((e) => e.type)).toEqual(['error']);
    expect(stream.message).toMatchObject({ stopReason: 'error', errorKind: 'model_incapable', provider: 'deepseek' });
    expect(stream.message.errorMessage).toMatch(/deepseek profile takes no json_schema.*json_object only/);
    expect(server.requests).toHaveLength(0);
  });

  const GPT_54 = findModel('gpt-5.4')!;
  it('maps request.reasoning onto reasoning_effort: a level as is, off as none', async () => {
    const high = await send({ reasoning: reasoning({ effort: 'high' }, 'high') }, GPT_54);
    expect(high.body.reasoning_effort).toBe('high');
    const xhigh = await send({ reasoning: reasoning({ effort: 'xhigh', clamped: true }, 'max') }, GPT_54);
    expect(xhigh.body.reasoning_effort).toBe('xhigh');
    const off = await send({ reasoning: reasoning({ off: true }, 'off') }, GPT_54);
    expect(off.body.reasoning_effort).toBe('none');
  });

  it('options.reasoningEffort wins over request.reasoning, and request.reasoning fills in without it', async () => {
    const both = await send(
      { reasoning: reasoning({ effort: 'high' }, 'high'), options: { reasoningEffort: 'low' } },
      GPT_54,
    );
    expect(both.body.reasoning_effort).toBe('low');
    const option = await send({ options: { reasoningEffort: 'medium' } }, GPT_54);
    expect(option.body.reasoning_effort).toBe('medium');
    const setting = await send({ reasoning: reasoning({ effort: 'low' }, 'low') }, GPT_54);
    expect(setting.body.reasoning_effort).toBe('low');
  });

  it('sends no reasoning_effort to a model that does not reason, for a budget alone, or on a profile without it', async () => {
    const plain = await send({ reasoning: reasoning({ off: true }, 'off') }, findModel('gpt-4o'));
    expect(plain.body).not.toHaveProperty('reasoning_effort');
    const budget = await send({ reasoning: reasoning({ budgetTokens: 2048 }, { budgetTokens: 2048 }) }, GPT_54);
    expect(budget.body).not.toHaveProperty('reasoning_effort');
    const vllm = await send(
      { reasoning: reasoning({ effort: 'high' }, 'high') },
      { id: 'qwen3', provider: 'vllm' },
      'vllm',
    );
    expect(vllm.body).not.toHaveProperty('reasoning_effort');
    const ollama = await send(
      { reasoning: reasoning({ effort: 'high' }, 'high') },
      { id: 'gpt-oss:20b', provider: 'ollama' },
      'ollama',
    );
    expect(ollama.body.reasoning_effort).toBe('high');
  });
});

describe('OpenAI Responses', () => {
  const responsesBody = (text: string) => {
    const events: Record<string, unknown>[] = [
      { type: 'response.created', response: { id: 'resp_o', model: 'gpt-5.4', status: 'in_progress', output: [] } },
      {
        type: 'response.output_item.added',
        output_index: 0,
        item: { id: 'msg_o', type: 'message', role: 'assistant', status: 'in_progress', content: [] },
      },
      {
        type: 'response.content_part.added',
        output_index: 0,
        content_index: 0,
        item_id: 'msg_o',
        part: { type: 'output_text', text: '', annotations: [] },
      },
      ...deltas(text).map((delta) => ({
        type: 'response.output_text.delta',
        output_index: 0,
        content_index: 0,
        item_id: 'msg_o',
        delta,
      })),
      {
        type: 'response.completed',
        response: {
          id: 'resp_o',
          status: 'completed',
          usage: {
            input_tokens: 9,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 12,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 21,
          },
        },
      },
    ];
    return events
      .map((event, i) => `event: ${String(event.type)}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`)
      .join('');
  };
  const provider = () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });
  const GPT_54 = findModel('gpt-5.4')!;
  const send = async (request: StreamRequest, model: Model = GPT_54) => {
    server.reply(sse(responsesBody(ANSWER_JSON)));
    const stream = await collectStream(provider().stream(model, [userMessage('Weather in Paris?')], request));
    expectWellFormed(stream);
    expect(stream.message.stopReason).toBe('stop');
    return { body: server.requests.at(-1)!.body, message: stream.message };
  };

  it('sends request.output as text.format json_schema, and the answer text is the JSON', async () => {
    const { body, message } = await send({ output: OUTPUT });
    expect(server.requests.at(-1)!.path).toBe('/v1/responses');
    expect(body.text).toEqual({
      format: {
        type: 'json_schema',
        name: 'weather',
        description: 'The weather in one city',
        schema: OUTPUT.schema,
        strict: true,
      },
    });
    expect(message.content).toEqual([{ type: 'text', text: ANSWER_JSON }]);
    expect(JSON.parse((message.content[0] as { text: string }).text)).toEqual(ANSWER);
    const plain = await send({});
    expect(plain.body).not.toHaveProperty('text');
  });

  it('maps request.reasoning onto reasoning.effort (off as none); options.reasoningEffort wins', async () => {
    const high = await send({ reasoning: reasoning({ effort: 'high' }, 'high') });
    expect(high.body.reasoning).toEqual({ effort: 'high', summary: 'auto' });
    expect(high.body.include).toEqual(['reasoning.encrypted_content']);
    const off = await send({ reasoning: reasoning({ off: true }, 'off') });
    expect(off.body.reasoning).toEqual({ effort: 'none', summary: 'auto' });
    const both = await send({ reasoning: reasoning({ effort: 'high' }, 'high'), options: { reasoningEffort: 'low' } });
    expect(both.body.reasoning).toEqual({ effort: 'low', summary: 'auto' });
    const budget = await send({ reasoning: reasoning({ budgetTokens: 4096 }, { budgetTokens: 4096 }) });
    expect(budget.body.reasoning).toEqual({ summary: 'auto' });
  });

  it('sends no reasoning to a model that does not reason, whatever request.reasoning says', async () => {
    const { body } = await send({ reasoning: reasoning({ off: true }, 'off') }, findModel('gpt-4.1'));
    expect(body).not.toHaveProperty('reasoning');
    expect(body).not.toHaveProperty('include');
  });
});

describe('a strict schema OpenAI would reject is refused before sending, naming the path', () => {
  const strict = (schema: Record<string, unknown>): NativeOutputRequest => ({ name: 'answer', schema, strict: true });
  const cases = [
    [
      'an optional property',
      {
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'number' } },
        required: ['a'],
        additionalProperties: false,
      },
      /\$: a strict schema requires every property \(not in required: b;/,
    ],
    [
      'a nested open object',
      {
        type: 'object',
        properties: { rows: { type: 'array', items: { type: 'object', properties: { x: { type: 'number' } } } } },
        required: ['rows'],
        additionalProperties: false,
      },
      /\$\.properties\.rows\.items: every object of a strict schema needs additionalProperties: false/,
    ],
    [
      'a root anyOf',
      { anyOf: [{ type: 'string' }, { type: 'number' }] },
      /\$: the root of a strict schema must be an object/,
    ],
  ] as const;
  const chat = () => new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });
  const responses = () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });

  it.each(cases)('Chat Completions: %s', async (_what, schema, message) => {
    const stream = await collectStream(
      chat().stream(findModel('gpt-4o')!, [userMessage('Hi')], { output: strict(schema) }),
    );
    expect(stream.events.map((e) => e.type)).toEqual(['error']);
    expect(stream.message).toMatchObject({ errorKind: 'bad_request', stopReason: 'error' });
    expect(stream.message.errorMessage).toMatch(
      /^OpenAI Chat Completions cannot take the output schema "answer" in strict mode: /,
    );
    expect(stream.message.errorMessage).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });

  it.each(cases)('Responses: %s', async (_what, schema, message) => {
    const stream = await collectStream(
      responses().stream(findModel('gpt-5.4')!, [userMessage('Hi')], { output: strict(schema) }),
    );
    expect(stream.events.map((e) => e.type)).toEqual(['error']);
    expect(stream.message).toMatchObject({ errorKind: 'bad_request', stopReason: 'error' });
    expect(stream.message.errorMessage).toMatch(
      /^OpenAI Responses cannot take the output schema "answer" in strict mode: /,
    );
    expect(stream.message.errorMessage).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });
});

describe('the model table says json_schema exactly for the OpenAI models that have Structured Outputs', () => {
  it.each([
    ['gpt-4o', 'json_schema'],
    ['gpt-4o-mini', 'json_schema'],
    ['gpt-4.1', 'json_schema'],
    ['gpt-5.4', 'json_schema'],
    ['o3', 'json_schema'],
    ['o3-mini', 'json_schema'],
    ['gpt-4o-2024-05-13', 'json_mode'],
    ['gpt-4-turbo', 'json_mode'],
    ['gpt-4', false],
  ] as const)('%s: %s', (id, expected) => {
    expect(findModel(id)?.structuredOutput).toBe(expected);
  });
});
