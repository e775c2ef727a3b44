// BedrockProvider through the real @aws-sdk/client-bedrock-runtime client (its default HTTP/2 handler, SigV4 signing
// with static fake credentials, its event-stream decoder), against the recorded Bedrock ConverseStream bodies served
// by a local HTTP/2 server: the JSONL recordings encoded frame by frame, the binary recordings served as they are.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tap } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent, defineTool, EMPTY_USAGE, userMessage, type AssistantMessage, type Message, type Model } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { BedrockProvider, type BedrockMetrics } from 'cubepi/providers/bedrock';
import { z } from 'zod';
import {
  BedrockServer,
  bedrockBodies,
  concat,
  decodeFrames,
  encodeFrame,
  framesBody,
  recordedEvents,
  streamOf,
  type Frame,
} from './bedrock-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

const OPUS: Model = {
  id: 'us.anthropic.claude-opus-4-6-v1',
  provider: 'bedrock',
  reasoning: true,
  cost: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
};
const NOVA: Model = { id: 'us.amazon.nova-micro-v1:0', provider: 'bedrock', reasoning: false };
const LLAMA: Model = { id: 'meta.llama3-3-70b-instruct-v1:0', provider: 'bedrock' };

let server: BedrockServer;
beforeAll(async () => {
  server = await BedrockServer.start();
});
afterAll(() => server.close());

const provider = (options: ConstructorParameters<typeof BedrockProvider>[0] = {}) =>
  new BedrockProvider({
    region: 'us-east-1',
    endpoint: server.url,
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'test-secret' },
    ...options,
  });

async function replay(body: Uint8Array, model: Model = OPUS, messages: Message[] = [userMessage('hi')]) {
  server.reply({ kind: 'stream', body });
  const collected = await collectStream(provider().stream(model, messages));
  expectWellFormed(collected);
  return collected;
}

const joined = (
  events: { contentBlockDelta?: { contentBlockIndex: number; delta: Record<string, unknown> } }[],
  index: number,
  pick: (delta: Record<string, unknown>) => unknown,
) =>
  events
    .filter((e) => e.contentBlockDelta?.contentBlockIndex === index)
    .map((e) => pick(e.contentBlockDelta!.delta))
    .filter((v): v is string => typeof v === 'string')
    .join('');

const lastRequest = () => server.requests[server.requests.length - 1]!;

describe('BedrockProvider: recorded ConverseStream bodies', () => {
  it('assembles plain text, usage and the request id (Claude Opus 4.6, text-basic)', async () => {
    const [events] = recordedEvents('text-basic.vercel-ai.jsonl');
    const { events: out, message } = await replay(bedrockBodies('text-basic.vercel-ai.jsonl')[0]!);
    expect(trace(out)).toEqual(['start', 'text_start:0', 'text_delta:0×12', 'text_end:0', 'done']);
    expect(message.content).toEqual([{ type: 'text', text: joined(events!, 0, (d) => d.text) }]);
    expect(message).toMatchObject({ stopReason: 'stop', provider: 'bedrock', model: OPUS.id });
    expect(message.responseId).toBe(`req-${server.requests.length}`);
    expect(message.usage).toMatchObject({ input: 22, output: 55, cacheRead: 0, cacheWrite: 0, totalTokens: 77 });
    expect(message.usage.cost.total).toBeCloseTo((22 * 5 + 55 * 25) / 1e6, 12);
    const request = lastRequest();
    expect(request.path).toBe(`/model/${encodeURIComponent(OPUS.id)}/converse-stream`);
    expect(request.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\//,
    );
    expect(request.body.messages).toEqual([
      { role: 'user', content: [{ text: 'hi' }, { cachePoint: { type: 'default' } }] },
    ]);
  });

  it('replays the one real binary body (valid checksums, padding) byte for byte: "OK." with its usage', async () => {
    const [body] = bedrockBodies('text-eventstream-base64.vercel-ai.json');
    expect(body!.length).toBe(1157);
    expect(decodeFrames(body!).map((f) => f.type)).toEqual([
      'messageStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    const { message } = await replay(body!, { id: 'eu.anthropic.claude-sonnet-4-6', provider: 'bedrock' });
    expect(message.content).toEqual([{ type: 'text', text: 'OK.' }]);
    expect(message.stopReason).toBe('stop');
    expect(message.usage).toMatchObject({ input: 12, output: 5 });
  });

  it('keeps reasoning with its signature, then the text, and sends both back as received', async () => {
    const file = 'reasoning-signature-then-text.vercel-ai.jsonl';
    const [events] = recordedEvents(file);
    const { events: out, message } = await replay(bedrockBodies(file)[0]!);
    expect(trace(out)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_delta:0×10',
      'thinking_end:0',
      'text_start:1',
      'text_delta:1×9',
      'text_end:1',
      'done',
    ]);
    const signature = joined(events!, 0, (d) => (d.reasoningContent as { signature?: string }).signature);
    expect(signature.length).toBeGreaterThan(100);
    expect(message.content[0]).toEqual({
      type: 'thinking',
      thinking: joined(events!, 0, (d) => (d.reasoningContent as { text?: string }).text),
      signature,
    });
    expect(message.content[1]).toEqual({ type: 'text', text: joined(events!, 1, (d) => d.text) });

    await replay(framesBody(SHORT_ANSWER), OPUS, [userMessage('count'), message, userMessage('again')]);
    expect(lastRequest().body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          reasoningContent: {
            reasoningText: { text: (message.content[0] as { thinking: string }).thinking, signature },
          },
        },
        { text: (message.content[1] as { text: string }).text },
      ],
    });
  });

  it('keeps redacted reasoning opaque and replays its bytes; a streamed tool call is parsed (gpt on Bedrock)', async () => {
    const file = 'redacted-reasoning-then-tool-use.vercel-ai.jsonl';
    const [events] = recordedEvents(file);
    const redacted = (events![1].contentBlockDelta.delta.reasoningContent as { redactedContent: string })
      .redactedContent;
    const model: Model = { id: 'us.openai.gpt-5.6-luna', provider: 'bedrock' };
    const { events: out, message } = await replay(bedrockBodies(file)[0]!, model);
    expect(trace(out)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_end:0',
      'toolcall_start:1',
      'toolcall_delta:1×26',
      'toolcall_end:1',
      'done',
    ]);
    expect(message.content[0]).toEqual({ type: 'thinking', thinking: redacted, redacted: true });
    const input = joined(events!, 1, (d) => (d.toolUse as { input?: string }).input);
    expect(message.content[1]).toEqual({
      type: 'toolCall',
      id: 'call_75be1097e9375c5aaa95a748e208be0e',
      name: 'propose',
      arguments: JSON.parse(input) as Record<string, unknown>,
    });
    expect(message.stopReason).toBe('toolUse');

    const result: Message = {
      role: 'toolResult',
      toolCallId: 'call_75be1097e9375c5aaa95a748e208be0e',
      toolName: 'propose',
      content: [{ type: 'text', text: 'accepted' }],
      isError: false,
      timestamp: 1,
    };
    await replay(framesBody(SHORT_ANSWER), model, [userMessage('go'), message, result]);
    const sent = lastRequest().body.messages;
    // Another model family: no cache points; the redacted bytes go back as the base64 the wire carried.
    expect(sent[1]).toEqual({
      role: 'assistant',
      content: [
        { reasoningContent: { redactedContent: redacted } },
        { toolUse: { toolUseId: 'call_75be1097e9375c5aaa95a748e208be0e', name: 'propose', input: JSON.parse(input) } },
      ],
    });
    expect(sent[2]).toEqual({
      role: 'user',
      content: [
        {
          toolResult: {
            toolUseId: 'call_75be1097e9375c5aaa95a748e208be0e',
            content: [{ text: 'accepted' }],
            status: 'success',
          },
        },
      ],
    });
  });

  it('drops empty text blocks, keeps unsigned reasoning and an id Converse would reject, normalised on replay (Kimi K2)', async () => {
    const file = 'reasoning-then-tool-use-empty-text-blocks.vercel-ai.jsonl';
    const model: Model = { id: 'moonshot.kimi-k2-thinking', provider: 'bedrock' };
    const { message } = await replay(bedrockBodies(file)[0]!, model);
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'toolCall']);
    expect(message.content[1]).toEqual({
      type: 'toolCall',
      id: 'functions.glob_search:0',
      name: 'glob_search',
      arguments: { pattern: '**/*cursor*' },
    });
    const result: Message = {
      role: 'toolResult',
      toolCallId: 'functions.glob_search:0',
      toolName: 'glob_search',
      content: [],
      isError: true,
      timestamp: 1,
    };
    await replay(framesBody(SHORT_ANSWER), model, [userMessage('find'), message, result, userMessage('and?')]);
    const sent = lastRequest().body.messages;
    expect(sent).toHaveLength(3); // the tool result and the next user message are one user turn
    expect(sent[1].content[0]).toEqual({ text: (message.content[0] as { thinking: string }).thinking });
    expect(sent[1].content[1].toolUse.toolUseId).toBe('functions_glob_search_0');
    expect(sent[2].content).toEqual([
      { toolResult: { toolUseId: 'functions_glob_search_0', content: [{ text: 'Error' }], status: 'error' } },
      { text: 'and?' },
    ]);
  });

  it('ignores citation deltas and the padding field (document citations, Claude Sonnet 4)', async () => {
    const file = 'citations-with-padding-field.vercel-ai.jsonl';
    const [events] = recordedEvents(file);
    const { message } = await replay(bedrockBodies(file)[0]!);
    const texts = message.content.map((b) => (b.type === 'text' ? b.text : ''));
    const expected = [
      ...new Set(events!.map((e) => e.contentBlockDelta?.contentBlockIndex).filter((i) => i !== undefined)),
    ]
      .map((i) => joined(events!, i as number, (d) => d.text))
      .filter((t) => t !== '');
    expect(texts).toEqual(expected);
    expect(message.stopReason).toBe('stop');
  });

  it('keeps two redacted reasoning blocks from a binary recording (Claude 3.7 Sonnet)', async () => {
    const [body] = bedrockBodies('redacted-thinking-eventstream.pydantic-ai.cassette.yaml');
    const frames = decodeFrames(body!);
    const redacted = frames
      .filter((f) => f.type === 'contentBlockDelta')
      .map(
        (f) => (f.body.delta as { reasoningContent?: { redactedContent?: string } }).reasoningContent?.redactedContent,
      )
      .filter((r): r is string => r !== undefined);
    expect(redacted).toHaveLength(2);
    const { message } = await replay(body!, {
      id: 'us.anthropic.claude-3-7-sonnet-20250219-v1:0',
      provider: 'bedrock',
    });
    expect(message.content.slice(0, 2)).toEqual(
      redacted.map((thinking) => ({ type: 'thinking', thinking, redacted: true })),
    );
    expect(message.content[2]?.type).toBe('text');
    expect(message.stopReason).toBe('stop');
  });

  it('runs a two-step tool conversation through the Agent (Nova Micro, binary recordings, UTF-8 in the payload)', async () => {
    const [first, second] = bedrockBodies('tool-use-multi-step-eventstream.pydantic-ai.cassette.yaml');
    server.reply({ kind: 'stream', body: first! }, { kind: 'stream', body: second! });
    const calls: string[] = [];
    const temperature = defineTool({
      name: 'get_temperature',
      description: 'Get the temperature in a city.',
      parameters: z.object({ city: z.string() }),
      execute: async (_id, { city }) => {
        calls.push(city);
        return { content: [{ type: 'text', text: '30°C' }] };
      },
    });
    const agent = new Agent({
      provider: provider(),
      model: NOVA,
      tools: [temperature],
      systemPrompt: 'You are a helpful chatbot.',
    });
    const messages = await agent.prompt('What is the temperature of the capital of France?');
    expect(calls).toEqual(['Paris']);
    const answers = messages.filter((m): m is AssistantMessage => m.role === 'assistant');
    expect(answers.map((m) => m.stopReason)).toEqual(['toolUse', 'stop']);
    expect(answers[1]!.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toContain('30°C');
    const sent = lastRequest().body;
    // Nova takes cache points in the system prompt and messages, not after the tools.
    expect(sent.system).toEqual([{ text: 'You are a helpful chatbot.' }, { cachePoint: { type: 'default' } }]);
    expect(sent.toolConfig.tools).toHaveLength(1);
    const toolUse = sent.messages[1].content.find((b: { toolUse?: unknown }) => b.toolUse).toolUse;
    expect(sent.messages[2].content[0].toolResult).toEqual({
      toolUseId: toolUse.toolUseId,
      content: [{ text: '30°C' }],
      status: 'success',
    });
  });
});

describe('BedrockProvider: replay data survives a restore', () => {
  it('signed and redacted reasoning, stored in SQLite, go back to Bedrock as received after a new Agent restores the thread', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-bedrock-'));
    const file = join(dir, 'threads.db');
    const model: Model = { id: 'us.anthropic.claude-3-7-sonnet-20250219-v1:0', provider: 'bedrock', reasoning: true };
    const [redactedBody] = bedrockBodies('redacted-thinking-eventstream.pydantic-ai.cassette.yaml');
    const [signedBody] = bedrockBodies('reasoning-signature-then-text.vercel-ai.jsonl');
    const first = new SQLiteCheckpointer(file);
    server.reply({ kind: 'stream', body: redactedBody! }, { kind: 'stream', body: signedBody! });
    const agent = new Agent({ provider: provider(), model, checkpointer: first, threadId: 't1' });
    await agent.prompt('one');
    await agent.prompt('two');
    await first.close();

    const second = new SQLiteCheckpointer(file);
    server.reply(streamOf(SHORT_ANSWER));
    const restored = new Agent({ provider: provider(), model, checkpointer: second, threadId: 't1' });
    await restored.prompt('three');
    await second.close();

    const redacted = decodeFrames(redactedBody!)
      .map((f) => (f.body.delta as { reasoningContent?: { redactedContent?: string } } | undefined)?.reasoningContent)
      .flatMap((r) =>
        r?.redactedContent === undefined ? [] : [{ reasoningContent: { redactedContent: r.redactedContent } }],
      );
    const [signedEvents] = recordedEvents('reasoning-signature-then-text.vercel-ai.jsonl');
    const signature = joined(signedEvents!, 0, (d) => (d.reasoningContent as { signature?: string }).signature);
    const sent = lastRequest().body.messages;
    expect(sent.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(sent[1].content.slice(0, 2)).toEqual(redacted);
    expect(sent[3].content[0].reasoningContent.reasoningText.signature).toBe(signature);
  });
});

const SHORT_ANSWER: Frame[] = [
  { type: 'messageStart', body: { role: 'assistant' } },
  { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { text: 'Done.' } } },
  { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
  { type: 'messageStop', body: { stopReason: 'end_turn' } },
  {
    type: 'metadata',
    body: { usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 }, metrics: { latencyMs: 100 } },
  },
];

describe('BedrockProvider: errors', () => {
  it('an HTTP 400 before the stream (recorded: invalid model id) is bad_request in AWS words, with no start', async () => {
    server.reply({
      kind: 'status',
      status: 400,
      errorType: 'ValidationException',
      message: 'The provided model identifier is invalid.',
    });
    const { events, message } = await collectStream(
      provider().stream({ id: 'us.does-not-exist-model-v1:0', provider: 'bedrock' }, [userMessage('hello')]),
    );
    expect(trace(events)).toEqual(['error']);
    expect(message.stopReason).toBe('error');
    expect(message.errorKind).toBe('bad_request');
    expect(message.errorMessage).toBe('HTTP 400 ValidationException: The provided model identifier is invalid.');
  });

  // No recording exists of these: built from AWS's documented error shapes (HTTP status, x-amzn-errortype, { message }).
  it.each([
    [429, 'ThrottlingException', 'Too many requests, please wait before trying again.', 'rate_limited'],
    [403, 'AccessDeniedException', "You don't have access to the model with the specified model ID.", 'auth'],
    [400, 'ValidationException', 'Input is too long for requested model.', 'context_overflow'],
    [503, 'ServiceUnavailableException', 'Bedrock is unable to process your request.', 'unavailable'],
  ])('HTTP %i %s → %s', async (status, errorType, text, kind) => {
    server.reply({ kind: 'status', status, errorType, message: text });
    const { message } = await collectStream(provider().stream(OPUS, [userMessage('hi')]));
    expect(message.errorKind).toBe(kind);
    expect(message.errorMessage).toBe(`HTTP ${status} ${errorType}: ${text}`);
  });

  // No recording exists of a Bedrock exception mid-stream: these frames follow AWS's documented shape of an event-stream
  // exception (`:message-type: exception`, `:exception-type: <member>`, a JSON `{ "message" }` payload).
  it.each([
    ['throttlingException', 'Too many tokens, please wait before trying again.', 'rate_limited'],
    ['modelStreamErrorException', 'The model stream encountered an error.', 'unavailable'],
    ['serviceUnavailableException', 'Service unavailable.', 'unavailable'],
    ['internalServerException', 'The server encountered an internal error.', 'unavailable'],
    ['validationException', 'Input is too long for requested model.', 'context_overflow'],
  ])('an %s inside the stream ends it classified, the text so far kept', async (type, text, kind) => {
    const frames: Frame[] = [
      SHORT_ANSWER[0]!,
      { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { text: 'Partial' } } },
      { type, body: { message: text }, messageType: 'exception' },
    ];
    const collected = await replayCollected(streamOf(frames));
    expect(collected.message.content).toEqual([{ type: 'text', text: 'Partial' }]);
    expect(collected.message.errorKind).toBe(kind);
    const name = type.charAt(0).toUpperCase() + type.slice(1);
    expect(collected.message.errorMessage).toBe(`Bedrock ${name} in the stream: ${text}`);
  });

  it("a frame whose checksum fails is an error in the SDK's words; the tool call cut off is not valid", async () => {
    const bad = encodeFrame({
      type: 'contentBlockDelta',
      body: { contentBlockIndex: 1, delta: { toolUse: { input: '"x"}' } } },
    });
    bad[bad.length - 1]! ^= 0xff; // the message CRC32
    const body = concat([
      ...[
        SHORT_ANSWER[0]!,
        {
          type: 'contentBlockStart',
          body: { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_1', name: 'weather' } } },
        },
        { type: 'contentBlockDelta', body: { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } } },
      ].map(encodeFrame),
      bad,
      encodeFrame(SHORT_ANSWER[3]!),
    ]);
    const { message } = await replayCollected({ kind: 'stream', body });
    expect(message.stopReason).toBe('error');
    expect(message.errorKind).toBe('unknown');
    expect(message.errorMessage).toMatch(/checksum \(\d+\) did not match the expected value/);
    expect(message.content).toEqual([
      { type: 'toolCall', id: 'tooluse_1', name: 'weather', arguments: {}, invalidArguments: '{"city":' },
    ]);
  });

  it('a tool call whose arguments are not a JSON object is kept, never valid (malformed argument object)', async () => {
    const frames: Frame[] = [
      SHORT_ANSWER[0]!,
      {
        type: 'contentBlockStart',
        body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'tooluse_2', name: 'weather' } } },
      },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { toolUse: { input: '["Paris"]' } } } },
      { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
      { type: 'messageStop', body: { stopReason: 'tool_use' } },
      SHORT_ANSWER[4]!,
    ];
    const { message } = await replayCollected(streamOf(frames));
    expect(message.stopReason).toBe('toolUse');
    expect(message.content).toEqual([
      { type: 'toolCall', id: 'tooluse_2', name: 'weather', arguments: {}, invalidArguments: '["Paris"]' },
    ]);
  });

  it('a stream cut before messageStop is unavailable (truncated)', async () => {
    const { message } = await replayCollected(streamOf(SHORT_ANSWER.slice(0, 2)));
    expect(message.errorKind).toBe('unavailable');
    expect(message.errorMessage).toContain('truncated');
    expect(message.content).toEqual([{ type: 'text', text: 'Done.' }]);
  });

  it('malformed_model_output is an unknown error naming the stop reason', async () => {
    const frames = [
      ...SHORT_ANSWER.slice(0, 3),
      { type: 'messageStop', body: { stopReason: 'malformed_model_output' } },
      SHORT_ANSWER[4]!,
    ];
    const { message } = await replayCollected(streamOf(frames));
    expect(message.errorKind).toBe('unknown');
    expect(message.errorMessage).toBe('Bedrock stopped the response with stopReason "malformed_model_output"');
  });

  describe('without any credential', () => {
    const saved = { ...process.env };
    afterEach(() => {
      process.env = { ...saved };
    });

    it('is an auth error event, sending nothing (the default chain finds none)', async () => {
      for (const key of Object.keys(process.env)) if (key.startsWith('AWS_')) delete process.env[key];
      Object.assign(process.env, {
        AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
        AWS_CONFIG_FILE: '/nonexistent/config',
        AWS_EC2_METADATA_DISABLED: 'true',
      });
      const before = server.requests.length;
      const bare = new BedrockProvider({ region: 'us-east-1', endpoint: server.url });
      const { events, message } = await collectStream(bare.stream(OPUS, [userMessage('hi')]));
      expect(trace(events)).toEqual(['error']);
      expect(message.errorKind).toBe('auth');
      expect(message.errorMessage).toMatch(/Could not load credentials from any providers/);
      expect(server.requests.length).toBe(before);
    });
  });
});

async function replayCollected(reply: Parameters<BedrockServer['reply']>[0], model: Model = OPUS) {
  server.reply(reply);
  const collected = await collectStream(provider().stream(model, [userMessage('hi')]));
  expectWellFormed(collected);
  return collected;
}

describe('BedrockProvider: stop reasons, usage and metrics', () => {
  // Built from the documented shapes: messageStop.stopReason and metadata.trace.guardrail (no recording has one).
  it("a guardrail intervention is a blocked message with the guardrail's reason", async () => {
    const frames: Frame[] = [
      SHORT_ANSWER[0]!,
      {
        type: 'contentBlockDelta',
        body: { contentBlockIndex: 0, delta: { text: 'Sorry, the model cannot answer this question.' } },
      },
      { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
      { type: 'messageStop', body: { stopReason: 'guardrail_intervened' } },
      {
        type: 'metadata',
        body: {
          usage: { inputTokens: 10, outputTokens: 0, totalTokens: 10 },
          metrics: { latencyMs: 80 },
          trace: { guardrail: { actionReason: 'Guardrail blocked.', inputAssessment: {} } },
        },
      },
    ];
    const { message } = await replayCollected(streamOf(frames));
    expect(message.stopReason).toBe('blocked');
    expect(message.blockReason).toBe('guardrail_intervened: Guardrail blocked.');
    expect(message.content).toEqual([{ type: 'text', text: 'Sorry, the model cannot answer this question.' }]);
  });

  it('content_filtered is blocked too', async () => {
    const frames = [
      ...SHORT_ANSWER.slice(0, 3),
      { type: 'messageStop', body: { stopReason: 'content_filtered' } },
      SHORT_ANSWER[4]!,
    ];
    const { message } = await replayCollected(streamOf(frames));
    expect(message).toMatchObject({ stopReason: 'blocked', blockReason: 'content_filtered' });
  });

  it('max_tokens is length; cache read and write tokens are priced; onMetrics gets latency and the raw usage', async () => {
    const usage = {
      inputTokens: 20,
      outputTokens: 4,
      cacheReadInputTokens: 3000,
      cacheWriteInputTokens: 500,
      totalTokens: 3524,
    };
    const frames = [
      ...SHORT_ANSWER.slice(0, 3),
      { type: 'messageStop', body: { stopReason: 'max_tokens' } },
      { type: 'metadata', body: { usage, metrics: { latencyMs: 1234 } } },
    ];
    const metrics: BedrockMetrics[] = [];
    server.reply(streamOf(frames));
    const { message } = await collectStream(
      provider({ onMetrics: (m) => metrics.push(m) }).stream(OPUS, [userMessage('hi')]),
    );
    expect(message.stopReason).toBe('length');
    expect(message.usage).toMatchObject({ input: 20, output: 4, cacheRead: 3000, cacheWrite: 500, totalTokens: 3524 });
    expect(message.usage.cost.total).toBeCloseTo((20 * 5 + 4 * 25 + 3000 * 0.5 + 500 * 6.25) / 1e6, 12);
    expect(metrics).toEqual([{ requestId: message.responseId, latencyMs: 1234, usage, trace: undefined }]);
  });
});

describe('BedrockProvider: the request', () => {
  const tools = [
    {
      name: 'weather',
      description: 'Weather for a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ];
  const png = Buffer.from('\x89PNG fake').toString('base64');
  const pdf = Buffer.from('%PDF-1.4 fake').toString('base64');

  it('Claude: cache points after the system prompt, the tools and the last message; thinking; tool choice; images and documents', async () => {
    server.reply(streamOf(SHORT_ANSWER));
    const messages: Message[] = [
      userMessage([
        { type: 'text', text: 'Describe both' },
        { type: 'image', data: png, mimeType: 'image/png' },
        { type: 'image', data: pdf, mimeType: 'application/pdf' },
      ]),
    ];
    await collectStream(
      provider({ cacheRetention: 'long' }).stream(OPUS, messages, {
        systemPrompt: 'Be brief.',
        tools,
        toolChoice: 'required',
        options: { maxTokens: 1000, thinkingBudget: 2000, temperature: 1 },
      }),
    );
    const body = lastRequest().body;
    const cache = { cachePoint: { type: 'default', ttl: '1h' } };
    expect(body.system).toEqual([{ text: 'Be brief.' }, cache]);
    expect(body.toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: 'weather',
            description: 'Weather for a city',
            inputSchema: { json: tools[0]!.inputSchema },
          },
        },
        cache,
      ],
      toolChoice: { any: {} },
    });
    expect(body.messages[0].content).toEqual([
      { text: 'Describe both' },
      { image: { format: 'png', source: { bytes: png } } },
      { document: { format: 'pdf', name: 'document-1', source: { bytes: pdf } } },
      cache,
    ]);
    expect(body.inferenceConfig).toEqual({ maxTokens: 3000, temperature: 1 });
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 2000 } });
  });

  it('another model family gets no cache points unless asked; guardrail and extra fields are passed through', async () => {
    server.reply(streamOf(SHORT_ANSWER));
    const guardrail = { guardrailIdentifier: 'gr-1', guardrailVersion: '1', trace: 'enabled' as const };
    await collectStream(
      provider({ guardrail, additionalModelRequestFields: { top_k: 50 } }).stream(LLAMA, [userMessage('hi')], {
        systemPrompt: 'Be brief.',
        tools,
        options: { additionalModelRequestFields: { top_p_extra: 1 } },
      }),
    );
    const body = lastRequest().body;
    expect(body.system).toEqual([{ text: 'Be brief.' }]);
    expect(body.toolConfig.tools).toHaveLength(1);
    expect(body.messages).toEqual([{ role: 'user', content: [{ text: 'hi' }] }]);
    expect(body.guardrailConfig).toEqual(guardrail);
    expect(body.additionalModelRequestFields).toEqual({ top_k: 50, top_p_extra: 1 });
  });

  it('two subscriptions at once are two requests, each message with its own request id', async () => {
    server.reply(streamOf(SHORT_ANSWER), streamOf(SHORT_ANSWER));
    const before = server.requests.length;
    const stream$ = provider().stream(LLAMA, [userMessage('hi')]);
    const [a, b] = await Promise.all([collectStream(stream$), collectStream(stream$)]);
    expect(server.requests.length).toBe(before + 2);
    expect(new Set([a.message.responseId, b.message.responseId])).toEqual(
      new Set([`req-${before + 1}`, `req-${before + 2}`]),
    );
  });

  it('a transcript with tool calls but no tools still gets the toolConfig Converse requires', async () => {
    server.reply(streamOf(SHORT_ANSWER));
    const call: AssistantMessage = {
      role: 'assistant',
      content: [{ type: 'toolCall', id: 'tooluse_1', name: 'weather', arguments: { city: 'Oslo' } }],
      stopReason: 'toolUse',
      usage: EMPTY_USAGE,
      provider: 'bedrock',
      model: LLAMA.id,
      timestamp: 1,
    };
    await collectStream(provider().stream(LLAMA, [userMessage('weather?'), call]));
    const body = lastRequest().body;
    expect(body.toolConfig).toEqual({
      tools: [
        {
          toolSpec: {
            name: 'weather',
            description: 'This tool is no longer available; do not call it.',
            inputSchema: { json: { type: 'object' } },
          },
        },
      ],
    });
    // The call left without a result gets the synthetic error result, so every toolUse has its toolResult.
    expect(body.messages[2].content[0].toolResult).toMatchObject({ toolUseId: 'tooluse_1', status: 'error' });
  });

  it("hands off another provider's transcript: its thinking as text, its redacted thinking dropped", async () => {
    server.reply(streamOf(SHORT_ANSWER));
    const claude: AssistantMessage = {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Let me think.', signature: 'anthropic-signature' },
        { type: 'thinking', thinking: 'c2VjcmV0', redacted: true },
        { type: 'text', text: 'Hello.' },
      ],
      stopReason: 'stop',
      usage: EMPTY_USAGE,
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      timestamp: 1,
    };
    await collectStream(provider().stream(OPUS, [userMessage('hi'), claude, userMessage('more')]));
    expect(lastRequest().body.messages[1]).toEqual({
      role: 'assistant',
      content: [{ text: 'Let me think.' }, { text: 'Hello.' }],
    });
  });

  it("maxTokens defaults to the model's largest output (at most 32 000); data that is not base64 is an error event", async () => {
    server.reply(streamOf(SHORT_ANSWER));
    await collectStream(provider().stream({ ...LLAMA, maxTokens: 64_000 }, [userMessage('hi')]));
    expect(lastRequest().body.inferenceConfig).toEqual({ maxTokens: 32_000 });
    const before = server.requests.length;
    const { message } = await collectStream(
      provider().stream(OPUS, [userMessage([{ type: 'image', data: '%%% not base64', mimeType: 'image/png' }])]),
    );
    expect(message.errorMessage).toBe('Bedrock request: the data of an image/png block is not valid base64');
    expect(server.requests.length).toBe(before);
  });

  it('a block of a kind Converse cannot take is an error event naming it, nothing sent', async () => {
    const before = server.requests.length;
    const { message } = await collectStream(
      provider().stream(OPUS, [userMessage([{ type: 'image', data: png, mimeType: 'audio/wav' }])]),
    );
    expect(message.stopReason).toBe('error');
    expect(message.errorMessage).toContain('not "audio/wav"');
    expect(server.requests.length).toBe(before);
  });
});

describe('BedrockProvider: cancellation', () => {
  it('is cold, and unsubscribing resets the HTTP/2 stream the server is still writing', async () => {
    const before = server.requests.length;
    const stream$ = provider().stream(OPUS, [userMessage('hi')]);
    expect(server.requests.length).toBe(before); // cold: nothing sent before subscribing
    server.reply({ kind: 'stall', body: concat(SHORT_ANSWER.slice(0, 2).map(encodeFrame)) });
    let resolveDelta!: () => void;
    const sawDelta = new Promise<void>((resolve) => (resolveDelta = resolve));
    const subscription = stream$.subscribe((event) => {
      if (event.type === 'text_delta') resolveDelta();
    });
    await sawDelta;
    subscription.unsubscribe();
    await expect(lastRequest().closed).resolves.toEqual({ finished: false });
  });

  it('a stream that goes silent ends with a timeout error after idleTimeoutMs, the stream reset', async () => {
    server.reply({ kind: 'stall', body: framesBody(SHORT_ANSWER.slice(0, 2)) });
    const { message } = await collectStream(
      provider().stream(OPUS, [userMessage('hi')], { options: { idleTimeoutMs: 200 } }),
    );
    expect(message.errorKind).toBe('timeout');
    expect(message.errorMessage).toBe(
      'Bedrock ConverseStream stream stalled: no stream event for 200 ms (idleTimeoutMs); the request was aborted',
    );
    expect(message.content).toEqual([{ type: 'text', text: 'Done.' }]);
    await expect(lastRequest().closed).resolves.toEqual({ finished: false });
  });

  it("the caller's signal aborting ends the stream as aborted, the text kept, the stream reset", async () => {
    server.reply({ kind: 'stall', body: concat(SHORT_ANSWER.slice(0, 2).map(encodeFrame)) });
    const controller = new AbortController();
    const stream$ = provider().stream(OPUS, [userMessage('hi')], { options: { signal: controller.signal } });
    const collected = collectStream(stream$.pipe(tap((event) => event.type === 'text_delta' && controller.abort())));
    const { message } = await collected;
    expect(message.stopReason).toBe('aborted');
    expect(message.content).toEqual([{ type: 'text', text: 'Done.' }]);
    await expect(lastRequest().closed).resolves.toEqual({ finished: false });
  });
});
