// GoogleProvider through the real @google/genai client, against recorded Gemini API and Vertex AI streams served
// locally (test/fixtures/providers/google), and against error bodies in Google's documented shape.
import { tap } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  userMessage,
  type AssistantMessage,
  type Message,
  type Model,
  type ToolCall,
  type ToolResultMessage,
} from 'cubepi';
import { GEMINI_DUMMY_SIGNATURE, GoogleProvider, type GoogleProviderOptions } from 'cubepi/providers/google';
import {
  fakeVertexAuth,
  googleBodies,
  googleChunks,
  googleJson,
  googleRequests,
  recordedParts,
  recordedSignatures,
} from './google-recordings.js';
import { ReplayServer, sse, type Reply } from './replay-server.js';
import { collectStream, expectWellFormed, trace } from './stream-harness.js';

/** Passed in, as a user would for a model the table may not know; priced so cost assertions mean something. */
const PRO: Model = {
  id: 'gemini-3-pro-preview',
  provider: 'google',
  reasoning: true,
  cost: { input: 2, output: 12, cacheRead: 0.2, cacheWrite: 0 },
};
const FLASH: Model = { id: 'gemini-3-flash-preview', provider: 'google', reasoning: true };
const GEMINI_25: Model = { id: 'gemini-2.5-pro', provider: 'google', reasoning: true };

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const gemini = (options: GoogleProviderOptions = {}) =>
  new GoogleProvider({ apiKey: 'test-key', baseURL: server.url, ...options });
const vertex = (options: GoogleProviderOptions = {}) =>
  new GoogleProvider({
    vertexai: true,
    project: 'test-project',
    location: 'us-central1',
    googleAuthOptions: fakeVertexAuth,
    baseURL: server.url,
    ...options,
  });

/** Serves one recorded body and streams it through `provider`, checking the stream contract. */
async function replay(file: string, options: { step?: number; model?: Model; provider?: GoogleProvider } = {}) {
  const body = googleBodies(file)[options.step ?? 0]!;
  server.reply(sse(body));
  const provider = options.provider ?? (file.startsWith('vertex-') ? vertex() : gemini());
  const stream = await collectStream(provider.stream(options.model ?? PRO, [userMessage('Hi')]));
  expectWellFormed(stream);
  return { ...stream, body, parts: recordedParts(body), signatures: recordedSignatures(body) };
}

const calls = (message: AssistantMessage) => message.content.filter((b): b is ToolCall => b.type === 'toolCall');
/** The concatenated answer text (not thought) of the recorded parts. */
const recordedText = (parts: { text?: string; thought?: boolean }[], thought = false) =>
  parts
    .filter((p) => typeof p.text === 'string' && (p.thought === true) === thought)
    .map((p) => p.text)
    .join('');

describe('GoogleProvider: every recorded stream', () => {
  it('text-usage-signature-empty-part: text, the signature of the empty last part kept on the text block, usage priced', async () => {
    const { events, message, parts, signatures } = await replay('text-usage-signature-empty-part.vercel-ai.jsonl');
    expect(trace(events)).toEqual(['start', 'text_start:0', 'text_delta:0×2', 'text_end:0', 'done']);
    expect(message.content).toEqual([{ type: 'text', text: recordedText(parts), signature: signatures[0] }]);
    expect(signatures).toHaveLength(1);
    expect(message).toMatchObject({
      stopReason: 'stop',
      provider: 'google',
      model: 'gemini-3-pro-preview',
      responseId: 'bH6LaZW8Fp_3nsEPqtaSwQ4',
    });
    // Thinking is billed as output: 23 candidates + 185 thoughts.
    expect(message.usage).toMatchObject({ input: 9, output: 208, reasoning: 185, cacheRead: 0, totalTokens: 217 });
    expect(message.usage.cost.total).toBeCloseTo((9 * 2 + 208 * 12) / 1e6, 12);
  });

  it('tool-call-whole-args-signature: one call with its args whole, an id made for it, its 6 KB signature kept', async () => {
    const { events, message, parts, signatures } = await replay('tool-call-whole-args-signature.vercel-ai.jsonl');
    // Arguments that come whole are streamed as one delta of their JSON: a call's deltas add up to it.
    expect(trace(events)).toEqual(['start', 'toolcall_start:0', 'toolcall_delta:0', 'toolcall_end:0', 'done']);
    expect(message.stopReason).toBe('toolUse');
    expect(calls(message)).toEqual([
      {
        type: 'toolCall',
        id: 'gcall_QHiLaa6LBrb8vdIPoNztsAg_0',
        name: 'weather',
        arguments: parts[0].functionCall.args,
        signature: signatures[0],
      },
    ]);
    expect(signatures[0]!.length).toBeGreaterThan(5000);
    expect(message.usage).toMatchObject({ input: 29, output: 819, reasoning: 804 });
  });

  it('reasoning-signature-only: no thought parts, so no thinking block; the signature on the text', async () => {
    const { message, parts, signatures } = await replay('reasoning-signature-only.vercel-ai.jsonl');
    expect(message.content).toEqual([{ type: 'text', text: recordedText(parts), signature: signatures[0] }]);
    expect(message.usage.reasoning).toBe(302);
  });

  it('empty-text-thought-signature: "4" then a signature-only part: one signed block', async () => {
    const { message, signatures } = await replay('empty-text-thought-signature.vercel-ai.jsonl', { model: FLASH });
    expect(message.content).toEqual([{ type: 'text', text: '4', signature: signatures[0] }]);
    expect(message.usage).toMatchObject({ input: 15, output: 53, reasoning: 52 });
    // A Model passed without cost is priced from the table's row for its id ($0.50 in, $3 out per million).
    expect(message.usage.cost.total).toBeCloseTo((15 * 0.5 + 53 * 3) / 1e6, 12);
  });

  it('vertex-thought-no-args-and-parallel-calls: a thought summary, a call without args, three parallel streamed calls', async () => {
    const { events, message, parts, signatures } = await replay(
      'vertex-thought-no-args-and-parallel-calls.vercel-ai.jsonl',
      { model: FLASH },
    );
    expect(trace(events).slice(0, 5)).toEqual([
      'start',
      'thinking_start:0',
      'thinking_delta:0',
      'thinking_end:0',
      'toolcall_start:1',
    ]);
    expect(message.content[0]).toEqual({ type: 'thinking', thinking: recordedText(parts, true) });
    const responseId = googleChunks(googleBodies('vertex-thought-no-args-and-parallel-calls.vercel-ai.jsonl')[0]!)[0]
      .responseId as string;
    expect(calls(message).map(({ id, name, arguments: args, signature }) => ({ id, name, args, signature }))).toEqual([
      { id: `gcall_${responseId}_0`, name: 'read_theme', args: {}, signature: signatures[0] },
      { id: `gcall_${responseId}_1`, name: 'read_screen', args: { id: 'A' }, signature: undefined },
      { id: `gcall_${responseId}_2`, name: 'read_screen', args: { id: 'B' }, signature: undefined },
      { id: `gcall_${responseId}_3`, name: 'read_screen', args: { id: 'C' }, signature: undefined },
    ]);
    expect(signatures).toHaveLength(1);
    expect(message.stopReason).toBe('toolUse');
    expect(message.usage.totalTokens).toBeGreaterThan(0);
  });

  it('vertex-parallel-calls-streamed-args: two calls assembled from partialArgs; only the first signed', async () => {
    const { message, signatures } = await replay('vertex-parallel-calls-streamed-args.vercel-ai.jsonl');
    expect(calls(message).map((c) => [c.name, c.arguments, c.signature])).toEqual([
      ['getWeather', { location: 'Boston' }, signatures[0]],
      ['getWeather', { location: 'San Francisco' }, undefined],
    ]);
    // Vertex sends the counts only on the last chunk: 26 prompt, 23 candidates + 132 thoughts.
    expect(message.usage).toMatchObject({ input: 26, output: 155, reasoning: 132, totalTokens: 181 });
    expect(message.stopReason).toBe('toolUse');
  });

  it('vertex-nested-array-args-streamed: nested objects and arrays by JSON path, strings in pieces, non-ASCII', async () => {
    const { message } = await replay('vertex-nested-array-args-streamed.vercel-ai.jsonl');
    const [call] = calls(message);
    const recipe = call!.arguments.recipe as {
      name: string;
      ingredients: { amount: string; name: string }[];
      steps: string[];
    };
    expect(call!.name).toBe('cookRecipe');
    expect(call!.invalidArguments).toBeUndefined();
    expect(recipe.name).toBe('Lasagna');
    expect(recipe.ingredients).toHaveLength(10);
    expect(recipe.ingredients[0]).toEqual({ amount: '16 oz', name: 'Lasagna noodles' });
    expect(recipe.ingredients[9]).toEqual({ amount: '1/2 tsp', name: 'Pepper' });
    expect(recipe.steps).toHaveLength(10);
    expect(recipe.steps[0]).toBe('Preheat oven to 375°F (190°C).');
    // Split over two fragments in the recording.
    expect(recipe.steps[1]).toBe('Cook lasagna noodles according to package directions, drain and set aside.');
  });

  it('vertex-array-args-no-terminal-call: the last piece without willContinue closes the call', async () => {
    const { message, events } = await replay('vertex-array-args-no-terminal-call.vercel-ai.jsonl', { model: FLASH });
    const [call] = calls(message);
    const operations = call!.arguments.operations as Record<string, unknown>[];
    expect(operations).toHaveLength(2);
    expect(operations[1]!.price).toBe(0.3);
    expect(events.filter((e) => e.type === 'toolcall_end')).toHaveLength(1);
    expect(message.stopReason).toBe('toolUse');
  });

  it("prompt-blocked: promptFeedback.blockReason → stopReason blocked, in Gemini's words, prompt usage kept", async () => {
    const { message, events } = await replay('prompt-blocked.vercel-ai.jsonl');
    expect(trace(events)).toEqual(['start', 'done']);
    expect(message).toMatchObject({ stopReason: 'blocked', blockReason: 'PROHIBITED_CONTENT', content: [] });
    expect(message.usage).toMatchObject({ input: 9, output: 0 });
  });

  it('thought-summaries (gemini-2.5-pro, the wire form with \\r\\n\\r\\n): thinking block of summaries, then text', async () => {
    const { message, parts, signatures } = await replay('thought-summaries.pydantic-ai.cassette.yaml', {
      model: GEMINI_25,
    });
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]).toEqual({ type: 'thinking', thinking: recordedText(parts, true) });
    expect(message.content[1]).toEqual({ type: 'text', text: recordedText(parts), signature: signatures[0] });
    expect(signatures).toHaveLength(1);
    expect(recordedText(parts, true)).toMatch(/^\*\*/);
    expect(message.usage.reasoning).toBeGreaterThan(0);
    expect(message.stopReason).toBe('stop');
  });

  it('tool-call-empty-args-signature: a call with args {} and its signature; the next request sends both back', async () => {
    const file = 'tool-call-empty-args-signature.pydantic-ai.cassette.yaml';
    const [first, second] = googleBodies(file);
    server.reply(sse(first!), sse(second!));
    const provider = gemini();
    const turn1 = await collectStream(provider.stream(PRO, [userMessage('What is the temperature?')]));
    expectWellFormed(turn1);
    const [call] = calls(turn1.message);
    expect(call).toMatchObject({ arguments: {}, signature: recordedSignatures(first!)[0] });
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: call!.id,
      toolName: call!.name,
      content: [{ type: 'text', text: '30°C' }],
      isError: false,
      timestamp: 2,
    };
    const turn2 = await collectStream(
      provider.stream(PRO, [userMessage('What is the temperature?'), turn1.message, result]),
    );
    expectWellFormed(turn2);
    expect(turn2.message.content).toEqual([{ type: 'text', text: recordedText(recordedParts(second!)) }]);
    const sent = server.requests[1]!.body.contents;
    expect(sent[1]).toEqual({
      role: 'model',
      parts: [{ functionCall: { name: call!.name, args: {} }, thoughtSignature: call!.signature }],
    });
    expect(sent[2]).toEqual({
      role: 'user',
      parts: [{ functionResponse: { name: call!.name, response: { output: '30°C' } } }],
    });
    // What the recording client (pydantic-ai) sent back is the same signature on the same call (its Python SDK
    // writes the bytes as URL-safe base64; the API's standard base64 is what cubepi keeps and sends back).
    const recorded = googleRequests(file)[1].contents[1].parts[0];
    expect(Buffer.from(recorded.thoughtSignature, 'base64url')).toEqual(Buffer.from(call!.signature!, 'base64'));
  });
});

describe('GoogleProvider: requests', () => {
  it('Gemini API: the model path, the key header, system prompt, tools as JSON Schema, tool choice, thinking', async () => {
    server.reply(sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!));
    const tools = [
      {
        name: 'weather',
        description: 'Weather in a city',
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    ];
    await collectStream(
      gemini().stream(FLASH, [userMessage('Hi')], {
        systemPrompt: 'Be brief.',
        tools,
        toolChoice: { type: 'tool', name: 'weather' },
        options: { maxTokens: 100, temperature: 0.2, thinkingLevel: 'low' },
      }),
    );
    const [request] = server.requests;
    expect(request!.path).toBe('/v1beta/models/gemini-3-flash-preview:streamGenerateContent?alt=sse');
    expect(request!.headers['x-goog-api-key']).toBe('test-key');
    expect(request!.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      systemInstruction: { role: 'user', parts: [{ text: 'Be brief.' }] },
      generationConfig: {
        maxOutputTokens: 100,
        temperature: 0.2,
        thinkingConfig: { thinkingLevel: 'LOW', includeThoughts: true },
      },
      tools: [
        {
          functionDeclarations: [
            {
              name: 'weather',
              description: 'Weather in a city',
              parametersJsonSchema: {
                type: 'object',
                properties: { city: { type: 'string' } },
                required: ['city'],
                additionalProperties: false,
              },
            },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } },
    });
  });

  it("Vertex AI: the project and location path, the auth client's token, streamed function-call arguments asked for", async () => {
    server.reply(sse(googleBodies('vertex-parallel-calls-streamed-args.vercel-ai.jsonl')[0]!));
    const tools = [{ name: 'getWeather', description: 'Weather', inputSchema: { type: 'object' } }];
    await collectStream(vertex({ streamFunctionCallArguments: true }).stream(PRO, [userMessage('Hi')], { tools }));
    const [request] = server.requests;
    expect(request!.path).toBe(
      '/v1beta1/projects/test-project/locations/us-central1/publishers/google/models/gemini-3-pro-preview:streamGenerateContent?alt=sse',
    );
    expect(request!.headers.authorization).toBe('Bearer vertex-test-token');
    expect(request!.headers['x-goog-api-key']).toBeUndefined();
    expect(request!.body.toolConfig).toEqual({ functionCallingConfig: { streamFunctionCallArguments: true } });
  });

  it("parallel results go back in one user content in the calls' order, errors as { error }, images inside (Gemini 3)", async () => {
    const { message } = await replay('vertex-parallel-calls-streamed-args.vercel-ai.jsonl');
    const [boston, sf] = calls(message);
    const results: ToolResultMessage[] = [
      {
        role: 'toolResult',
        toolCallId: boston!.id,
        toolName: 'getWeather',
        content: [
          { type: 'text', text: 'Sunny' },
          { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        ],
        isError: false,
        timestamp: 3,
      },
      {
        role: 'toolResult',
        toolCallId: sf!.id,
        toolName: 'getWeather',
        content: [{ type: 'text', text: 'Service down' }],
        isError: true,
        timestamp: 4,
      },
    ];
    server.reply(sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!));
    await collectStream(vertex().stream(PRO, [userMessage('Weather?'), message, ...results, userMessage('And?')]));
    const contents = server.requests[1]!.body.contents;
    expect(contents.map((c: { role: string }) => c.role)).toEqual(['user', 'model', 'user']);
    expect(contents[1].parts).toEqual([
      { functionCall: { name: 'getWeather', args: { location: 'Boston' } }, thoughtSignature: boston!.signature },
      { functionCall: { name: 'getWeather', args: { location: 'San Francisco' } } },
    ]);
    expect(contents[2].parts).toEqual([
      {
        functionResponse: {
          name: 'getWeather',
          response: { output: 'Sunny' },
          parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }],
        },
      },
      { functionResponse: { name: 'getWeather', response: { error: 'Service down' } } },
      { text: 'And?' },
    ]);
  });

  it('images in a tool result for a model before Gemini 3 go as inlineData parts after the response', async () => {
    const call: ToolCall = { type: 'toolCall', id: 'gcall_x_0', name: 'shot', arguments: {} };
    const history: Message[] = [
      userMessage('Look'),
      { ...assistant(GEMINI_25.id, [call]), stopReason: 'toolUse' },
      {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: 'shot',
        content: [{ type: 'image', data: 'R0lGOD==', mimeType: 'image/gif' }],
        isError: false,
        timestamp: 2,
      },
    ];
    server.reply(sse(googleBodies('thought-summaries.pydantic-ai.cassette.yaml')[0]!));
    await collectStream(gemini().stream(GEMINI_25, history));
    expect(server.requests[0]!.body.contents[2].parts).toEqual([
      { functionResponse: { name: 'shot', response: { output: '' } } },
      { inlineData: { mimeType: 'image/gif', data: 'R0lGOD==' } },
    ]);
  });

  it('thinkingBudget 0 turns thinking off (no thought summaries asked for); a budget asks for them', async () => {
    server.reply(
      sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!),
      sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!),
    );
    const flash25: Model = { id: 'gemini-2.5-flash', provider: 'google', reasoning: true };
    await collectStream(gemini().stream(flash25, [userMessage('Hi')], { options: { thinkingBudget: 0 } }));
    await collectStream(gemini().stream(flash25, [userMessage('Hi')], { options: { thinkingBudget: 512 } }));
    expect(server.requests[0]!.body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 0 });
    expect(server.requests[1]!.body.generationConfig.thinkingConfig).toEqual({
      thinkingBudget: 512,
      includeThoughts: true,
    });
  });

  it('usage: cached tokens are cacheRead (out of input), tool-use prompt tokens are input, all priced', async () => {
    // UsageMetadata as the API reference documents it (no recording has cached or tool-use-prompt counts).
    const chunk = {
      candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }],
      usageMetadata: {
        promptTokenCount: 1000,
        cachedContentTokenCount: 800,
        toolUsePromptTokenCount: 50,
        candidatesTokenCount: 20,
        thoughtsTokenCount: 30,
        totalTokenCount: 1100,
      },
      responseId: 'r5',
    };
    server.reply(sse(`data: ${JSON.stringify(chunk)}\n\n`));
    const { message } = await collectStream(gemini().stream(PRO, [userMessage('Hi')]));
    expect(message.usage).toMatchObject({ input: 250, cacheRead: 800, output: 50, reasoning: 30, totalTokens: 1100 });
    expect(message.usage.cost.total).toBeCloseTo((250 * 2 + 800 * 0.2 + 50 * 12) / 1e6, 12);
  });

  it("usage on every chunk: each delta carries its chunk's counts; a chunk repeating the counts keeps the Usage priced", async () => {
    // Gemini sends the cumulative usageMetadata on every chunk (see the text-usage recording): the mapper prices it
    // again only when a count changed, so the snapshots of a repeated count share one Usage.
    const usage = (candidatesTokenCount: number, cachedContentTokenCount = 0) => ({
      promptTokenCount: 10,
      cachedContentTokenCount,
      candidatesTokenCount,
      totalTokenCount: 10 + candidatesTokenCount,
    });
    const chunk = (text: string, usageMetadata: object, finishReason?: string) => ({
      candidates: [{ content: { role: 'model', parts: [{ text }] }, ...(finishReason ? { finishReason } : {}) }],
      usageMetadata,
      responseId: 'r6',
    });
    const chunks = [
      chunk('a', usage(1)),
      chunk('b', usage(1)),
      chunk('c', usage(1, 4)),
      chunk('d', usage(3, 4)),
      chunk('', usage(3, 4), 'STOP'),
    ];
    server.reply(sse(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')));
    const { events, message } = await collectStream(gemini().stream(PRO, [userMessage('Hi')]));
    const deltas = events.filter((e) => e.type === 'text_delta');
    expect(deltas.map((e) => e.delta)).toEqual(['a', 'b', 'c', 'd']);
    const usages = deltas.map((e) => e.partial.usage);
    expect(usages.map((u) => [u.input, u.cacheRead, u.output])).toEqual([
      [10, 0, 1],
      [10, 0, 1],
      [6, 4, 1],
      [6, 4, 3],
    ]);
    expect(usages[1]).toBe(usages[0]); // the same counts: not priced again
    expect(usages[2]!.cost.total).toBeCloseTo((6 * 2 + 4 * 0.2 + 1 * 12) / 1e6, 12);
    expect(message.usage).toEqual(usages[3]);
    expect(message.usage.cost.total).toBeCloseTo((6 * 2 + 4 * 0.2 + 3 * 12) / 1e6, 12);
  });

  it('a user image goes as inlineData', async () => {
    server.reply(sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!));
    const message: Message = {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image', data: 'aGVsbG8=', mimeType: 'image/jpeg' },
      ],
      timestamp: 1,
    };
    await collectStream(gemini().stream(FLASH, [message]));
    expect(server.requests[0]!.body.contents[0].parts).toEqual([
      { text: 'What is this?' },
      { inlineData: { mimeType: 'image/jpeg', data: 'aGVsbG8=' } },
    ]);
  });

  it("handoff: another provider's thinking goes as text, its calls without ids; Gemini 3 gets the documented dummy signature", async () => {
    const call: ToolCall = { type: 'toolCall', id: 'toolu_01', name: 'weather', arguments: { city: 'Oslo' } };
    const claude: AssistantMessage = {
      ...assistant('claude-sonnet-4-6', [
        { type: 'thinking', thinking: 'Look it up.', signature: 'anthropic-sig' },
        call,
      ]),
      provider: 'anthropic',
      stopReason: 'toolUse',
    };
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: 'toolu_01',
      toolName: 'weather',
      content: [{ type: 'text', text: 'Rain' }],
      isError: false,
      timestamp: 3,
    };
    server.reply(sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!));
    await collectStream(gemini().stream(FLASH, [userMessage('Oslo?'), claude, result]));
    const contents = server.requests[0]!.body.contents;
    expect(contents[1].parts).toEqual([
      { text: 'Look it up.' },
      { functionCall: { name: 'weather', args: { city: 'Oslo' } }, thoughtSignature: GEMINI_DUMMY_SIGNATURE },
    ]);
    expect(contents[2].parts).toEqual([{ functionResponse: { name: 'weather', response: { output: 'Rain' } } }]);
    expect(server.requests[0]!.rawBody).not.toContain('anthropic-sig');
  });

  it("another Gemini model's signatures are dropped, as the other providers drop theirs", async () => {
    const { message } = await replay('tool-call-whole-args-signature.vercel-ai.jsonl');
    server.reply(sse(googleBodies('thought-summaries.pydantic-ai.cassette.yaml')[0]!));
    const [call] = calls(message);
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: call!.id,
      toolName: call!.name,
      content: [{ type: 'text', text: 'Fog' }],
      isError: false,
      timestamp: 3,
    };
    await collectStream(gemini().stream(GEMINI_25, [userMessage('SF?'), message, result]));
    expect(server.requests[1]!.rawBody).not.toContain(call!.signature!);
    expect(server.requests[1]!.body.contents[1].parts).toEqual([
      { functionCall: { name: 'weather', args: { location: 'San Francisco' } } },
    ]);
  });

  it('a Gemini id on a call is sent back on the call and on its response; a made one never is', async () => {
    const withId: ToolCall = { type: 'toolCall', id: 'abc123', name: 'a', arguments: {}, signature: 's1' };
    const made: ToolCall = { type: 'toolCall', id: 'gcall_r_1', name: 'b', arguments: {} };
    const answer = (id: string, name: string): ToolResultMessage => ({
      role: 'toolResult',
      toolCallId: id,
      toolName: name,
      content: [{ type: 'text', text: 'ok' }],
      isError: false,
      timestamp: 2,
    });
    server.reply(sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!));
    const history: Message[] = [
      userMessage('Go'),
      { ...assistant(FLASH.id, [withId, made]), stopReason: 'toolUse' },
      answer('abc123', 'a'),
      answer('gcall_r_1', 'b'),
    ];
    await collectStream(gemini().stream(FLASH, history));
    const contents = server.requests[0]!.body.contents;
    expect(contents[1].parts).toEqual([
      { functionCall: { id: 'abc123', name: 'a', args: {} }, thoughtSignature: 's1' },
      { functionCall: { name: 'b', args: {} } },
    ]);
    expect(contents[2].parts.map((p: { functionResponse: { id?: string } }) => p.functionResponse.id)).toEqual([
      'abc123',
      undefined,
    ]);
  });
});

describe('GoogleProvider: a signature-only part after the calls, through an Agent', () => {
  it('is kept as an empty signed text block after the calls and replayed there on the next request', async () => {
    // Built from a shape other projects report from the live API (a trailing `{ text: '', thoughtSignature }` after a
    // functionCall, cloudwego/eino-ext#757); none of our recordings has it after a call.
    const turn = {
      candidates: [
        {
          content: {
            role: 'model',
            parts: [
              { functionCall: { name: 'echo', args: { say: 'hi' } } },
              { text: '', thoughtSignature: 'trailing-sig' },
            ],
          },
          finishReason: 'STOP',
        },
      ],
      responseId: 'r9',
    };
    server.reply(
      sse(`data: ${JSON.stringify(turn)}\n\n`),
      sse(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!),
    );
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes',
      parameters: z.object({ say: z.string() }),
      execute: async (_id, { say }) => ({ content: [{ type: 'text', text: say }] }),
    });
    const agent = new Agent({ provider: gemini(), model: FLASH, tools: [echo] });
    const added = await agent.prompt('Echo hi');
    const first = added[1] as AssistantMessage;
    expect(first.content).toEqual([
      { type: 'toolCall', id: 'gcall_r9_0', name: 'echo', arguments: { say: 'hi' } },
      { type: 'text', text: '', signature: 'trailing-sig' },
    ]);
    expect(first.stopReason).toBe('toolUse');
    expect(server.requests[1]!.body.contents[1].parts).toEqual([
      { functionCall: { name: 'echo', args: { say: 'hi' } } },
      { text: '', thoughtSignature: 'trailing-sig' },
    ]);
    expect((added.at(-1) as AssistantMessage).content).toEqual([
      {
        type: 'text',
        text: '4',
        signature: recordedSignatures(googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!)[0],
      },
    ]);
  });
});

describe('GoogleProvider: bad input and errors', () => {
  const saved = { GEMINI_API_KEY: process.env.GEMINI_API_KEY, GOOGLE_API_KEY: process.env.GOOGLE_API_KEY };
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  /** Streams one request against `reply` and returns the terminal message. */
  async function failWith(reply: Reply, provider = gemini()) {
    server.reply(reply);
    const stream = await collectStream(provider.stream(PRO, [userMessage('Hi')]));
    expectWellFormed(stream);
    return stream.message;
  }

  it("a 400 INVALID_ARGUMENT recorded from gemini-3.1-pro-preview → bad_request in Google's words", async () => {
    const body = googleJson('errors-400-thinking-config.vercel-ai.json').reasoningNoneResponse;
    const message = await failWith({ kind: 'status', status: 400, body });
    expect(message).toMatchObject({
      stopReason: 'error',
      errorKind: 'bad_request',
      errorMessage:
        'HTTP 400 INVALID_ARGUMENT: Thinking level MINIMAL is not supported for this model. Please retry with other thinking level.',
    });
  });

  it("a 429 with google.rpc.RetryInfo → rate_limited with retryAfterMs (no recording exists: Google's documented shape)", async () => {
    // The error model of https://ai.google.dev/gemini-api/docs/troubleshooting and google.rpc.Status: code, message,
    // status and details, RetryInfo.retryDelay a Duration in seconds. Built by hand: no recorded Gemini 429 exists.
    const body = {
      error: {
        code: 429,
        message: 'You exceeded your current quota, please check your plan and billing details.',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests' }],
          },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '27s' },
        ],
      },
    };
    const message = await failWith({ kind: 'status', status: 429, body });
    expect(message).toMatchObject({
      errorKind: 'rate_limited',
      retryAfterMs: 27_000,
      errorMessage:
        'HTTP 429 RESOURCE_EXHAUSTED: You exceeded your current quota, please check your plan and billing details.',
    });
    expect(server.requests).toHaveLength(1); // the SDK did not retry on its own
  });

  it('without RetryInfo, a retry-after header of the response gives retryAfterMs (a proxy or front end may send one)', async () => {
    const body = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } };
    const message = await failWith({ kind: 'status', status: 503, body, headers: { 'retry-after': '5' } });
    expect(message).toMatchObject({ errorKind: 'unavailable', retryAfterMs: 5000 });
  });

  it.each([
    [403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers.", 'auth'],
    [404, 'NOT_FOUND', 'models/gemini-9-pro is not found for API version v1beta.', 'bad_request'],
    [
      400,
      'INVALID_ARGUMENT',
      'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
      'context_overflow',
    ],
    [500, 'INTERNAL', 'An internal error has occurred.', 'unavailable'],
    [503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.', 'unavailable'],
  ])('HTTP %i %s → %s', async (status, code, text, kind) => {
    const message = await failWith({
      kind: 'status',
      status,
      body: { error: { code: status, message: text, status: code } },
    });
    expect(message).toMatchObject({ errorKind: kind, errorMessage: `HTTP ${status} ${code}: ${text}` });
  });

  it('an error object inside the stream ends it classified, the text so far kept', async () => {
    const [good] = googleChunks(googleBodies('text-usage-signature-empty-part.vercel-ai.jsonl')[0]!);
    const failure = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } };
    const message = await failWith(sse(`data: ${JSON.stringify(good)}\n\ndata: ${JSON.stringify(failure)}\n\n`));
    expect(message).toMatchObject({
      errorKind: 'unavailable',
      errorMessage: 'HTTP 503 UNAVAILABLE: The model is overloaded.',
    });
    expect(message.content).toEqual([{ type: 'text', text: 'There are **3**' }]);
  });

  it('a stream cut before its finishReason → unavailable (truncated), content kept', async () => {
    const chunks = googleChunks(googleBodies('text-usage-signature-empty-part.vercel-ai.jsonl')[0]!);
    const message = await failWith(
      sse(
        chunks
          .slice(0, 2)
          .map((c) => `data: ${JSON.stringify(c)}\n\n`)
          .join(''),
      ),
    );
    expect(message).toMatchObject({ stopReason: 'error', errorKind: 'unavailable' });
    expect(message.errorMessage).toMatch(/truncated/);
    expect(message.content).toHaveLength(1);
  });

  it('a safety stop → blocked with the finish reason and message (built from the documented candidate shape)', async () => {
    // No recording of a SAFETY finish exists; this is the Candidate of the API reference (finishReason,
    // finishMessage, safetyRatings with blocked: true), after a first chunk of text. The SDK's Gemini API mapping
    // drops finishMessage (Vertex keeps it: next test), so the blocking rating is what names the category.
    const chunks = [
      { candidates: [{ content: { role: 'model', parts: [{ text: 'Here is how' }] } }], responseId: 'r1' },
      {
        candidates: [
          {
            content: { role: 'model', parts: [] },
            finishReason: 'SAFETY',
            finishMessage: 'Response was blocked due to DANGEROUS_CONTENT.',
            safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true }],
          },
        ],
        responseId: 'r1',
      },
    ];
    const message = await failWith(sse(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')));
    expect(message).toMatchObject({
      stopReason: 'blocked',
      blockReason: 'SAFETY: HARM_CATEGORY_DANGEROUS_CONTENT: HIGH',
      content: [{ type: 'text', text: 'Here is how' }],
    });
  });

  it('on Vertex AI the finishMessage is kept in the block reason (same hand-built shape)', async () => {
    const chunk = {
      candidates: [
        { content: { role: 'model', parts: [] }, finishReason: 'PROHIBITED_CONTENT', finishMessage: 'Blocked.' },
      ],
    };
    const message = await failWith(sse(`data: ${JSON.stringify(chunk)}\n\n`), vertex());
    expect(message).toMatchObject({ stopReason: 'blocked', blockReason: 'PROHIBITED_CONTENT: Blocked.', content: [] });
  });

  it('no candidate, and a STOP with nothing in it → typed errors saying so', async () => {
    const none = await failWith(sse(`data: ${JSON.stringify({ candidates: [], responseId: 'r2' })}\n\n`));
    expect(none).toMatchObject({
      errorKind: 'unknown',
      errorMessage: 'Gemini returned no candidate (an empty response)',
    });
    const empty = { candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'STOP' }], responseId: 'r3' };
    const blank = await failWith(sse(`data: ${JSON.stringify(empty)}\n\n`));
    expect(blank).toMatchObject({
      errorKind: 'unknown',
      errorMessage: 'Gemini returned an empty candidate (finishReason STOP)',
    });
  });

  it('MALFORMED_FUNCTION_CALL → an unknown error naming it; arguments that are not an object → invalidArguments', async () => {
    const malformed = {
      candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'MALFORMED_FUNCTION_CALL' }],
    };
    const message = await failWith(sse(`data: ${JSON.stringify(malformed)}\n\n`));
    expect(message.errorMessage).toBe('Gemini stopped the response: finishReason MALFORMED_FUNCTION_CALL');
    const notAnObject = {
      candidates: [
        { content: { role: 'model', parts: [{ functionCall: { name: 'f', args: ['x', 1] } }] }, finishReason: 'STOP' },
      ],
      responseId: 'r4',
    };
    const answer = await failWith(sse(`data: ${JSON.stringify(notAnObject)}\n\n`));
    expect(answer.usage).toMatchObject({ unreported: true, totalTokens: 0 }); // the chunk had no usageMetadata
    const call = calls(answer)[0];
    expect(call).toMatchObject({ name: 'f', arguments: {}, invalidArguments: '["x",1]' });
  });

  it('no API key anywhere → an auth error event, nothing sent', async () => {
    delete process.env.GEMINI_API_KEY;
    delete process.env.GOOGLE_API_KEY;
    const stream = await collectStream(new GoogleProvider({ baseURL: server.url }).stream(PRO, [userMessage('Hi')]));
    expect(stream.message).toMatchObject({ stopReason: 'error', errorKind: 'auth' });
    expect(stream.message.errorMessage).toMatch(/GEMINI_API_KEY/);
    expect(server.requests).toHaveLength(0);
  });

  it('project and location without vertexai are a configuration error', () => {
    expect(() => new GoogleProvider({ project: 'p' })).toThrow(/vertexai: true/);
  });
});

describe('GoogleProvider: cancellation and stalls', () => {
  it('unsubscribing after the first delta closes the socket (the server sees it)', async () => {
    const [first] = googleChunks(googleBodies('text-usage-signature-empty-part.vercel-ai.jsonl')[0]!);
    server.reply({ kind: 'stall', body: `data: ${JSON.stringify(first)}\n\n` });
    await new Promise<void>((resolve, reject) => {
      const subscription = gemini()
        .stream(PRO, [userMessage('Hi')])
        .subscribe({
          next: (event) => {
            if (event.type === 'text_delta') {
              subscription.unsubscribe();
              resolve();
            }
          },
          error: reject,
        });
    });
    while (server.requests.length === 0) await new Promise((r) => setImmediate(r));
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it('unsubscribing while waiting for the first byte closes the socket too', async () => {
    server.reply({ kind: 'hang' });
    const subscription = vertex()
      .stream(PRO, [userMessage('Hi')])
      .subscribe();
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    subscription.unsubscribe();
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it("the caller's signal aborts with an aborted error event, content kept, socket closed", async () => {
    const [first] = googleChunks(googleBodies('text-usage-signature-empty-part.vercel-ai.jsonl')[0]!);
    server.reply({ kind: 'stall', body: `data: ${JSON.stringify(first)}\n\n` });
    const controller = new AbortController();
    const stream$ = gemini().stream(PRO, [userMessage('Hi')], { options: { signal: controller.signal } });
    const { message } = await collectStream(
      stream$.pipe(tap((event) => event.type === 'text_delta' && controller.abort())),
    );
    expect(message).toMatchObject({ stopReason: 'aborted', content: [{ type: 'text', text: 'There are **3**' }] });
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it("a silent stream ends with a timeout error event (the kit's idle limit) and its socket closed", async () => {
    const [first] = googleChunks(googleBodies('text-usage-signature-empty-part.vercel-ai.jsonl')[0]!);
    server.reply({ kind: 'stall', body: `data: ${JSON.stringify(first)}\n\n` });
    const { message } = await collectStream(
      gemini().stream(PRO, [userMessage('Hi')], { options: { idleTimeoutMs: 50 } }),
    );
    expect(message).toMatchObject({ stopReason: 'error', errorKind: 'timeout' });
    expect(message.errorMessage).toMatch(/^Gemini stream stalled: no stream event for 50 ms/);
    expect(message.content).toEqual([{ type: 'text', text: 'There are **3**' }]);
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });
});

function assistant(model: string, content: AssistantMessage['content']): AssistantMessage {
  return {
    role: 'assistant',
    content,
    stopReason: 'stop',
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    provider: 'google',
    model,
    timestamp: 1,
  };
}
