// OpenAIResponsesProvider through the real openai SDK client, against recorded Responses streams served locally.
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
import { OpenAIResponsesProvider } from 'cubepi/providers/openai';
import { recordedPayloads, recordingBodies } from './recordings.js';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

const CODEX = findModel('gpt-5.1-codex-max')!;
const MULTI_STEP = 'reasoning-summary-function-calls-multi-step.vercel-ai.jsonl';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const provider = () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });

async function replayBody(body: string, model: Model = CODEX, messages: Message[] = [userMessage('Hi')]) {
  server.reply(sse(body));
  const stream = await collectStream(provider().stream(model, messages));
  expectWellFormed(stream);
  return { ...stream, recorded: recordedPayloads(body) };
}
const replay = (file: string, options: { step?: number; model?: Model } = {}) =>
  replayBody(recordingBodies('openai-responses', file)[options.step ?? 0]!, options.model);

/** The `output_item.done` items of a recorded response, by type. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const doneItems = (recorded: any[], type: string) =>
  recorded.filter((e) => e.type === 'response.output_item.done' && e.item.type === type).map((e) => e.item);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const recordedText = (recorded: any[]) =>
  recorded
    .filter((e) => e.type === 'response.output_text.delta')
    .map((e) => e.delta)
    .join('');

/** A Responses stream: `response.created`, then `events`, each with a sequence number. */
function responsesBody(events: Record<string, unknown>[]) {
  const created = {
    type: 'response.created',
    response: { id: 'resp_x', model: 'gpt-5.4', status: 'in_progress', output: [] },
  };
  return [created, ...events]
    .map((event, i) => `event: ${String(event.type)}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`)
    .join('');
}
const textEvents = (text: string) => [
  {
    type: 'response.output_item.added',
    output_index: 0,
    item: { id: 'msg_1', type: 'message', role: 'assistant', status: 'in_progress', content: [] },
  },
  {
    type: 'response.content_part.added',
    output_index: 0,
    content_index: 0,
    item_id: 'msg_1',
    part: { type: 'output_text', text: '', annotations: [] },
  },
  { type: 'response.output_text.delta', output_index: 0, content_index: 0, item_id: 'msg_1', delta: text },
];
const usage = {
  input_tokens: 10,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 15,
};

describe('OpenAIResponsesProvider: every recorded stream', () => {
  it('text-short: one output_text part, the message item id kept as the block signature, usage', async () => {
    const { events, message } = await replay('text-short.vercel-ai.jsonl', { model: findModel('gpt-4.1-nano')! });
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×3', 'text_end:0', 'done']);
    expect(message.content).toEqual([
      { type: 'text', text: 'Dummy PDF file', signature: 'msg_051ebd7ab60063870069d4fe8c1b7c8194b701e22f1ef094dd' },
    ]);
    expect(message).toMatchObject({
      stopReason: 'stop',
      provider: 'openai-responses',
      model: 'gpt-4.1-nano-2025-04-14',
      responseId: 'resp_051ebd7ab60063870069d4fe8ac1348194bf06d0a4646af05f',
    });
    expect(message.usage).toMatchObject({ input: 44, output: 4, totalTokens: 48 });
  });

  it('function-call: arguments from deltas, the call id joined with the item id, priced via the snapshot’s family', async () => {
    const { events, message } = await replay('function-call.vercel-ai.jsonl', {
      model: { id: 'gpt-5.4-2026-03-05', provider: 'openai' },
    });
    expect(trace(events)).toEqual(['start', 'toolcall_start:0', 'toolcall_delta:0×13', 'toolcall_end:0', 'done']);
    expect(message.content).toEqual([
      {
        type: 'toolCall',
        id: 'call_Q7pq6EfVGRnauPLWSSYBGJ1l|fc_05147bbe356953b60069ab673745c081969b5c16c333b4f179',
        name: 'get_weather',
        arguments: { location: 'San Francisco, CA', unit: 'fahrenheit' },
      },
    ]);
    expect(message.stopReason).toBe('toolUse');
    expect(message.usage).toMatchObject({ input: 467, output: 26 });
    expect(message.usage.cost.total).toBeCloseTo((467 * 2.5 + 26 * 15) / 1e6, 12);
  });

  it('reasoning multi-step, response 1: the summary as thinking, the reasoning item (encrypted) as its signature', async () => {
    const { events, message, recorded } = await replay(MULTI_STEP);
    const [reasoning] = doneItems(recorded, 'reasoning');
    expect(trace(events)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_delta:0×32',
      'thinking_end:0',
      'toolcall_start:1',
      'toolcall_delta:1×13',
      'toolcall_end:1',
      'done',
    ]);
    const thinking = message.content[0] as { thinking: string; signature: string };
    expect(thinking.thinking).toBe(
      "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product.",
    );
    // The done item's encrypted content (it differs from the one announced in output_item.added).
    expect(JSON.parse(thinking.signature)).toEqual({
      id: reasoning.id,
      encrypted_content: reasoning.encrypted_content,
      summary: reasoning.summary,
    });
    expect(message.content[1]).toEqual({
      type: 'toolCall',
      id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn|fc_01830d662ab3856501693c32151234819091cfca267e98cc5f',
      name: 'calculator',
      arguments: { a: 12, b: 7, op: 'add' },
    });
    expect(message.usage).toMatchObject({ input: 134, output: 28 });
  });

  it('reasoning multi-step, responses 2–4: function calls, then the final text', async () => {
    const second = await replay(MULTI_STEP, { step: 1 });
    expect(second.message.content).toEqual([
      expect.objectContaining({ type: 'toolCall', name: 'calculator', arguments: { a: 19, b: 3, op: 'multiply' } }),
    ]);
    const third = await replay(MULTI_STEP, { step: 2 });
    expect(third.message.content).toEqual([
      expect.objectContaining({ type: 'toolCall', name: 'calculator', arguments: { a: 57, b: 10, op: 'multiply' } }),
    ]);
    const last = await replay(MULTI_STEP, { step: 3 });
    expect(last.message.content).toEqual([
      {
        type: 'text',
        text: 'The final result is **570**.',
        signature: 'msg_01830d662ab3856501693c32183a488190a612c410a0a39823',
      },
    ]);
    expect(last.message.stopReason).toBe('stop');
  });

  it('web-search: built-in tool items and empty reasoning items skipped; cached and reasoning tokens split out', async () => {
    const { events, message, recorded } = await replay('web-search-tool.vercel-ai.jsonl', {
      model: findModel('gpt-5-mini')!,
    });
    expect(doneItems(recorded, 'web_search_call')).toHaveLength(6);
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×121', 'text_end:0', 'done']);
    expect(message.content).toEqual([
      { type: 'text', text: recordedText(recorded), signature: doneItems(recorded, 'message')[0].id },
    ]);
    expect(message.usage).toMatchObject({
      input: 31073 - 3712,
      cacheRead: 3712,
      output: 4416,
      reasoning: 3712,
      totalTokens: 35489,
    });
  });

  it('error-response-failed: the error event ends the stream as a classified error (quota: no wait fixes it)', async () => {
    const { events, message } = await replay('error-response-failed.vercel-ai.jsonl');
    expect(trace(events)).toEqual(['start', 'error']);
    expect(message).toMatchObject({
      stopReason: 'error',
      errorKind: 'bad_request',
      content: [],
      responseId: 'resp_05500b38c2cd9bfc00691c7c9d222481a3b595421266dab424',
    });
    expect(message.errorMessage).toMatch(/^insufficient_quota: You exceeded your current quota/);
  });

  it('reasoning-item-function-call-usage (event lines): an encrypted reasoning item without summary, then a call', async () => {
    const { events, message, recorded } = await replay('reasoning-item-function-call-usage.pydantic-ai.cassette.yaml', {
      model: findModel('gpt-5')!,
    });
    const [reasoning] = doneItems(recorded, 'reasoning');
    expect(trace(events)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_end:0',
      'toolcall_start:1',
      'toolcall_delta:1×6',
      'toolcall_end:1',
      'done',
    ]);
    expect(message.content[0]).toEqual({
      type: 'thinking',
      thinking: '',
      signature: JSON.stringify({ id: reasoning.id, encrypted_content: reasoning.encrypted_content, summary: [] }),
    });
    expect(message.content[1]).toMatchObject({ name: 'final_result', arguments: { result: 6666 } });
    expect(message.usage).toMatchObject({ input: 53, output: 469, reasoning: 448 });
  });
});

describe('OpenAIResponsesProvider: terminal events', () => {
  it('response.incomplete (max_output_tokens) → stopReason length, text kept', async () => {
    const { message } = await replayBody(
      responsesBody([
        ...textEvents('Cut'),
        {
          type: 'response.incomplete',
          response: { id: 'resp_x', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage },
        },
      ]),
    );
    expect(message).toMatchObject({ stopReason: 'length', content: [{ type: 'text', text: 'Cut' }] });
    expect(message.usage).toMatchObject({ input: 10, output: 5 });
  });

  it('response.incomplete (content_filter) → blocked, blockReason content_filter, content kept', async () => {
    const { message } = await replayBody(
      responsesBody([
        ...textEvents('Cut'),
        {
          type: 'response.incomplete',
          response: { id: 'resp_x', status: 'incomplete', incomplete_details: { reason: 'content_filter' } },
        },
      ]),
    );
    expect(message).toMatchObject({
      stopReason: 'blocked',
      blockReason: 'content_filter',
      content: [{ type: 'text', text: 'Cut' }],
    });
  });

  it('response.failed on its own → an error classified by its code, content kept', async () => {
    const { events, message } = await replayBody(
      responsesBody([
        ...textEvents('Half'),
        {
          type: 'response.failed',
          response: {
            id: 'resp_x',
            status: 'failed',
            error: { code: 'server_error', message: 'The server had an error' },
          },
        },
      ]),
    );
    expect(events.at(-1)).toMatchObject({ type: 'error', errorKind: 'unavailable' });
    expect(message).toMatchObject({
      stopReason: 'error',
      errorKind: 'unavailable',
      errorMessage: 'server_error: The server had an error',
      content: [{ type: 'text', text: 'Half' }],
    });
  });

  it('an error event with the code at the top level → classified (rate_limit_exceeded → rate_limited)', async () => {
    const { message } = await replayBody(
      responsesBody([{ type: 'error', code: 'rate_limit_exceeded', message: 'Slow down', param: null }]),
    );
    expect(message).toMatchObject({
      stopReason: 'error',
      errorKind: 'rate_limited',
      errorMessage: 'rate_limit_exceeded: Slow down',
    });
  });

  it('a wire event the mapper cannot place (a reasoning item without its summary) → an unknown error, text kept', async () => {
    const { events, message } = await replayBody(
      responsesBody([
        ...textEvents('Half'),
        {
          type: 'response.output_item.done',
          output_index: 1,
          item: { id: 'rs_1', type: 'reasoning', encrypted_content: 'enc' }, // `summary` is required
        },
        { type: 'response.completed', response: { id: 'resp_x', status: 'completed', usage } },
      ]),
    );
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0', 'error']);
    expect(events.at(-1)).toMatchObject({ type: 'error', errorKind: 'unknown' });
    expect(message).toMatchObject({ stopReason: 'error', errorKind: 'unknown' });
    expect(message.errorMessage).toMatch(/^Unexpected OpenAI Responses stream event: /);
    expect(message.content).toEqual([{ type: 'text', text: 'Half' }]);
  });
});

describe('OpenAIResponsesProvider: the request', () => {
  const send = async (
    messages: Message[],
    request: Parameters<OpenAIResponsesProvider['stream']>[2] = {},
    model: Model = CODEX,
  ) => {
    server.reply(
      sse(
        responsesBody([
          ...textEvents('ok'),
          { type: 'response.completed', response: { id: 'resp_x', status: 'completed', usage } },
        ]),
      ),
    );
    const { message } = await collectStream(provider().stream(model, messages, request));
    expect(message.stopReason).toBe('stop');
    return server.requests.at(-1)!;
  };
  const result = (toolCallId: string, content: ToolResultMessage['content']): ToolResultMessage => ({
    role: 'toolResult',
    toolCallId,
    toolName: 'calculator',
    content,
    isError: false,
    timestamp: 2,
  });
  const tools = [
    {
      name: 'calculator',
      description: 'Arithmetic',
      inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
    },
  ];

  it('posts a stateless request: store false, instructions, non-strict tools, reasoning with encrypted content', async () => {
    const request = await send([userMessage('Hi')], {
      systemPrompt: 'Be exact.',
      tools,
      toolChoice: 'required',
      options: { maxTokens: 500, reasoningEffort: 'high' },
    });
    expect(request.path).toBe('/v1/responses');
    expect(request.body).toEqual({
      model: 'gpt-5.1-codex-max',
      input: [{ role: 'user', content: 'Hi' }],
      stream: true,
      store: false,
      instructions: 'Be exact.',
      tools: [
        {
          type: 'function',
          name: 'calculator',
          description: 'Arithmetic',
          parameters: tools[0]!.inputSchema,
          strict: false,
        },
      ],
      tool_choice: 'required',
      max_output_tokens: 500,
      reasoning: { effort: 'high', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
    });
  });

  it('asks a model that does not reason for no reasoning; reasoningSummary "none" leaves the summary out', async () => {
    const plain = await send([userMessage('Hi')], {}, findModel('gpt-4.1'));
    expect(plain.body.reasoning).toBeUndefined();
    expect(plain.body.include).toBeUndefined();
    const quiet = await send([userMessage('Hi')], { options: { reasoningSummary: 'none' } });
    expect(quiet.body.reasoning).toEqual({});
  });

  it('replays its own reasoning item (encrypted) and keeps the paired function call item id', async () => {
    server.reply(sse(recordingBodies('openai-responses', MULTI_STEP)[0]!));
    const { message: first } = await collectStream(provider().stream(CODEX, [userMessage('Compute')]));
    const call = first.content[1] as { id: string };
    const request = await send([userMessage('Compute'), first, result(call.id, [{ type: 'text', text: '19' }])]);
    const reasoning = JSON.parse((first.content[0] as { signature: string }).signature) as Record<string, unknown>;
    expect(request.body.input).toEqual([
      { role: 'user', content: 'Compute' },
      {
        type: 'reasoning',
        id: reasoning.id,
        summary: reasoning.summary,
        encrypted_content: reasoning.encrypted_content,
      },
      {
        type: 'function_call',
        call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
        name: 'calculator',
        arguments: '{"a":12,"b":7,"op":"add"}',
        id: 'fc_01830d662ab3856501693c32151234819091cfca267e98cc5f',
      },
      { type: 'function_call_output', call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', output: '19' },
    ]);
  });

  it('pairs a text item with its reasoning by the message id; without reasoning, sends neither item id', async () => {
    const own = (content: AssistantMessage['content']): AssistantMessage => ({
      role: 'assistant',
      content,
      stopReason: 'stop',
      usage: EMPTY_USAGE,
      provider: 'openai-responses',
      model: 'gpt-5.1-codex-max',
      timestamp: 1,
    });
    const signature = JSON.stringify({ id: 'rs_1', encrypted_content: 'ENC', summary: [] });
    const paired = await send([
      userMessage('a'),
      own([
        { type: 'thinking', thinking: '', signature },
        { type: 'text', text: 'Yes.', signature: 'msg_1' },
      ]),
      userMessage('b'),
    ]);
    expect(paired.body.input.slice(1, 3)).toEqual([
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'ENC' },
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_1',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Yes.', annotations: [] }],
      },
    ]);
    const unpaired = await send([
      userMessage('a'),
      own([
        { type: 'text', text: 'Yes.', signature: 'msg_1' },
        { type: 'toolCall', id: 'call_9|fc_9', name: 'calculator', arguments: {} },
      ]),
      result('call_9|fc_9', [{ type: 'text', text: 'done' }]),
    ]);
    expect(unpaired.body.input.slice(1)).toEqual([
      { role: 'assistant', content: 'Yes.' },
      { type: 'function_call', call_id: 'call_9', name: 'calculator', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_9', output: 'done' },
    ]);
  });

  it('is byte-stable: the same transcript gives the same body whatever the key order it was stored with', async () => {
    const transcript = (args: Record<string, unknown>): Message[] => [
      { role: 'user', content: 'Go', timestamp: 1 },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'call_1|fc_1', name: 'calculator', arguments: args }],
        stopReason: 'toolUse',
        usage: EMPTY_USAGE,
        provider: 'openai-responses',
        model: 'gpt-5.1-codex-max',
        timestamp: 2,
      },
      result('call_1|fc_1', [{ type: 'text', text: '3' }]),
    ];
    const first = await send(transcript({ a: 1, b: 2, op: 'add' }), { tools });
    const second = await send(transcript({ op: 'add', b: 2, a: 1 }), { tools });
    expect(first.rawBody).toBe(second.rawBody);
    expect(first.body.input[1].arguments).toBe('{"a":1,"b":2,"op":"add"}');
  });

  it('hands off an Anthropic transcript: thinking as assistant text, tool ids as call ids, images as input_image', async () => {
    const PNG = { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' };
    const request = await send([
      { role: 'user', content: [{ type: 'text', text: 'Chart?' }, PNG], timestamp: 0 },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Plot it.', signature: 'sig' },
          { type: 'toolCall', id: 'toolu_01', name: 'calculator', arguments: { a: 1 } },
        ],
        stopReason: 'toolUse',
        usage: EMPTY_USAGE,
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        timestamp: 1,
      },
      result('toolu_01', [{ type: 'text', text: 'Chart:' }, PNG]),
    ]);
    const image = { type: 'input_image', detail: 'auto', image_url: 'data:image/png;base64,iVBORw0KGgo=' };
    expect(request.body.input).toEqual([
      { role: 'user', content: [{ type: 'input_text', text: 'Chart?' }, image] },
      { role: 'assistant', content: 'Plot it.' },
      { type: 'function_call', call_id: 'toolu_01', name: 'calculator', arguments: '{"a":1}' },
      { type: 'function_call_output', call_id: 'toolu_01', output: [{ type: 'input_text', text: 'Chart:' }, image] },
    ]);
  });
});
