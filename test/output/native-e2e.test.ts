// Native structured output through a whole Agent run, over the real SDKs against local servers: OpenAI Chat
// Completions, OpenAI Responses, Anthropic Messages and Gemini (one HTTP replay server), Bedrock Converse (the HTTP/2
// server). Each run has one tool round (the server answers a tool
// call first, then the JSON text), and `agent.prompt(…, { output })` resolves to the typed value. The request bodies
// are asserted: the vendor's native field and the run's tools on the request after the tool round, and — when the
// first JSON answer is invalid — the issues in a user message on the request that asks for the corrected one.
//
// No recording holds a structured-output stream: the answers are the conformance kit's wire builders (the documented
// formats; Converse's event-stream frames for Bedrock), the JSON split in pieces as a constrained model streams it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, findModel, OutputError, type AgentEvent, type Model, type Provider } from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { GoogleProvider } from 'cubepi/providers/google';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';
import {
  anthropicMessagesWire,
  geminiWire,
  openAIChatWire,
  openAIResponsesWire,
  type ConformanceWire,
  type WireReply,
} from 'cubepi/testing';
import { answer as bedrockAnswer, useBedrockServer } from '../providers/bedrock-native.js';
import { streamOf } from '../providers/bedrock-server.js';
import { ReplayServer, sse, type Reply } from '../providers/replay-server.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
const bedrock = useBedrockServer();
/** How many requests the Bedrock server had seen when the test began (it keeps them all). */
let bedrockMark = 0;
beforeEach(() => {
  server.reset();
  bedrockMark = bedrock.server().requests.length;
});

const Weather = z.object({ city: z.string(), celsius: z.number() });
const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'number' } },
  required: ['city', 'celsius'],
  additionalProperties: false,
};
const OUTPUT = { schema: Weather, name: 'weather', description: 'The weather in a city' } as const;

const lookups: string[] = [];
const lookupTool = defineTool({
  name: 'lookup',
  description: 'Looks up the current temperature of a city',
  parameters: z.object({ city: z.string() }),
  execute: (_id, { city }) => {
    lookups.push(city);
    return { content: [{ type: 'text', text: `${city}: 7 degrees C` }] };
  },
});

const USAGE = { input: 20, output: 10 };
const replyOf = (wire: WireReply): Reply => sse(wire.chunks.map((c) => String(c)).join(''));
const toolRound = (wire: ConformanceWire) =>
  replyOf(wire.toolCall({ id: 'call_1', name: 'lookup', argumentParts: ['{"ci', 'ty":"Os', 'lo"}'] }, USAGE));
const jsonAnswer = (wire: ConformanceWire, json: string) => replyOf(wire.text(json.match(/.{1,5}/gs)!, USAGE));

const httpQueue =
  (wire: ConformanceWire) =>
  (...answers: Answer[]) =>
    server.reply(...answers.map((a) => (a === 'tool' ? toolRound(wire) : jsonAnswer(wire, a.json))));

const bedrockFrames = (answer: Answer) =>
  answer !== 'tool'
    ? bedrockAnswer(...answer.json.match(/.{1,5}/gs)!)
    : streamOf([
        { type: 'messageStart', body: { role: 'assistant' } },
        {
          type: 'contentBlockStart',
          body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'call_1', name: 'lookup' } } },
        },
        ...['{"ci', 'ty":"Os', 'lo"}'].map((input) => ({
          type: 'contentBlockDelta',
          body: { contentBlockIndex: 0, delta: { toolUse: { input } } },
        })),
        { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
        { type: 'messageStop', body: { stopReason: 'tool_use' } },
        {
          type: 'metadata',
          body: { usage: { inputTokens: 20, outputTokens: 10, totalTokens: 30 }, metrics: { latencyMs: 1 } },
        },
      ]);

/** The text parts of a content field that is a string or a list of parts (`text` on every vendor's text part). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : '')).join('');
}

/** What the server answers next: the tool call round, or a text answer with this JSON. */
type Answer = 'tool' | { readonly json: string };

interface Vendor {
  readonly name: string;
  /** Queues the answers on the vendor's server, in order. */
  readonly queue: (...answers: Answer[]) => void;
  /** The requests the vendor's server received in this test. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly requests: () => { path: string; body: any }[];
  readonly model: Model;
  readonly provider: () => Provider;
  /** The path the SDK posts to. */
  readonly path: RegExp;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- request bodies are read field by field
  readonly expectNative: (body: any) => void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly toolNames: (body: any) => string[];
  /** The last message of the request: its role as the vendor spells it, and its text. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly lastMessage: (body: any) => { role: string; text: string };
}

const vendors: Vendor[] = [
  {
    name: 'OpenAI Chat Completions (gpt-4o)',
    queue: httpQueue(openAIChatWire),
    requests: () => server.requests,
    model: findModel('gpt-4o')!,
    provider: () => new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
    path: /^\/v1\/chat\/completions$/,
    expectNative: (body) =>
      expect(body.response_format).toEqual({
        type: 'json_schema',
        json_schema: { name: 'weather', description: 'The weather in a city', schema: WEATHER_SCHEMA, strict: true },
      }),
    toolNames: (body) => body.tools.map((tool: { function: { name: string } }) => tool.function.name),
    lastMessage: (body) => {
      const last = body.messages.at(-1);
      return { role: last.role, text: textOf(last.content) };
    },
  },
  {
    name: 'OpenAI Responses (gpt-4.1)',
    queue: httpQueue(openAIResponsesWire),
    requests: () => server.requests,
    model: findModel('gpt-4.1')!,
    provider: () => new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
    path: /^\/v1\/responses$/,
    expectNative: (body) =>
      expect(body.text).toEqual({
        format: {
          type: 'json_schema',
          name: 'weather',
          description: 'The weather in a city',
          schema: WEATHER_SCHEMA,
          strict: true,
        },
      }),
    toolNames: (body) => body.tools.map((tool: { name: string }) => tool.name),
    lastMessage: (body) => {
      const last = body.input.at(-1);
      return { role: last.role, text: textOf(last.content) };
    },
  },
  {
    name: 'Anthropic Messages (claude-sonnet-4-6)',
    queue: httpQueue(anthropicMessagesWire),
    requests: () => server.requests,
    model: findModel('claude-sonnet-4-6')!,
    provider: () => new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url }),
    path: /^\/v1\/messages/,
    expectNative: (body) =>
      expect(body.output_config).toEqual({
        format: { type: 'json_schema', schema: { ...WEATHER_SCHEMA, description: 'The weather in a city' } },
      }),
    toolNames: (body) => body.tools.map((tool: { name: string }) => tool.name),
    lastMessage: (body) => {
      const last = body.messages.at(-1);
      return { role: last.role, text: textOf(last.content) };
    },
  },
  {
    name: 'Gemini (gemini-3-flash-preview)',
    queue: httpQueue(geminiWire),
    requests: () => server.requests,
    model: findModel('gemini-3-flash-preview')!,
    provider: () => new GoogleProvider({ apiKey: 'test-key', baseURL: server.url }),
    path: /\/models\/gemini-3-flash-preview:streamGenerateContent/,
    expectNative: (body) => {
      expect(body.generationConfig.responseMimeType).toBe('application/json');
      expect(body.generationConfig.responseJsonSchema).toEqual({
        ...WEATHER_SCHEMA,
        description: 'The weather in a city',
      });
    },
    toolNames: (body) =>
      body.tools.flatMap((tool: { functionDeclarations?: { name: string }[] }) =>
        (tool.functionDeclarations ?? []).map((declaration) => declaration.name),
      ),
    lastMessage: (body) => {
      const last = body.contents.at(-1);
      return { role: last.role, text: textOf(last.parts) };
    },
  },
  {
    name: 'Bedrock Converse (global.anthropic.claude-sonnet-4-5-20250929-v1:0)',
    queue: (...answers) => void bedrock.server().reply(...answers.map(bedrockFrames)),
    requests: () => bedrock.server().requests.slice(bedrockMark),
    model: findModel('global.anthropic.claude-sonnet-4-5-20250929-v1:0')!,
    provider: () => bedrock.provider({ cacheRetention: 'none' }),
    path: /^\/model\/global\.anthropic\.claude-sonnet-4-5-20250929-v1%3A0\/converse-stream$/,
    expectNative: (body) => {
      expect(body.outputConfig.textFormat).toMatchObject({
        type: 'json_schema',
        structure: { jsonSchema: { name: 'weather', description: 'The weather in a city' } },
      });
      expect(JSON.parse(body.outputConfig.textFormat.structure.jsonSchema.schema)).toEqual({
        ...WEATHER_SCHEMA,
        description: 'The weather in a city',
      });
    },
    toolNames: (body) => body.toolConfig.tools.map((tool: { toolSpec: { name: string } }) => tool.toolSpec.name),
    lastMessage: (body) => {
      const last = body.messages.at(-1);
      return { role: last.role, text: textOf(last.content) };
    },
  },
];

function run(vendor: Vendor) {
  const agent = new Agent({ provider: vendor.provider(), model: vendor.model, tools: [lookupTool] });
  const events: AgentEvent[] = [];
  agent.subscribe((event) => void events.push(event));
  return { agent, events };
}
const ofType = <T extends AgentEvent['type']>(events: readonly AgentEvent[], type: T) =>
  events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);

describe.each(vendors)('$name: output through a whole run', (vendor) => {
  it('the table says json_schema for this model', () => {
    expect(vendor.model.structuredOutput).toBe('json_schema');
  });

  it('one tool round, then the JSON text: prompt resolves to the typed value; the native field and the tools on the request', async () => {
    lookups.length = 0;
    vendor.queue('tool', { json: '{"city":"Oslo","celsius":7}' });
    const { agent, events } = run(vendor);

    const value = await agent.prompt('Weather in Oslo?', { output: OUTPUT });

    expect(value).toEqual({ city: 'Oslo', celsius: 7 });
    const typed: { city: string; celsius: number } = value;
    expect(typed.celsius).toBe(7);
    expect(lookups).toEqual(['Oslo']); // the tool ran, between the two requests
    expect(vendor.requests()).toHaveLength(2);
    for (const request of vendor.requests()) expect(request.path).toMatch(vendor.path);
    const second = vendor.requests()[1]!.body;
    vendor.expectNative(second);
    expect(vendor.toolNames(second)).toEqual(['lookup']); // the run's tools, no final tool
    vendor.expectNative(vendor.requests()[0]!.body);
    expect(JSON.stringify(second)).toContain('Oslo: 7 degrees C'); // the tool's result went back
    expect(ofType(events, 'model_attempt').map((event) => event.output)).toEqual([
      { mode: 'native' },
      { mode: 'native' },
    ]);
    const end = ofType(events, 'agent_end')[0]!;
    expect(end).toMatchObject({ outcome: 'completed', output: { city: 'Oslo', celsius: 7 } });
    expect(ofType(events, 'output_invalid')).toEqual([]);
  });

  it('an invalid JSON answer first: output_invalid, then the corrected one is asked with the issues in a user message', async () => {
    vendor.queue('tool', { json: '{"city":"Oslo","celsius":"seven"}' }, { json: '{"city":"Oslo","celsius":7}' });
    const { agent, events } = run(vendor);

    expect(await agent.prompt('Weather in Oslo?', { output: OUTPUT })).toEqual({ city: 'Oslo', celsius: 7 });

    const invalid = ofType(events, 'output_invalid');
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatchObject({ attempt: 1, retrying: true });
    expect(invalid[0]!.issues).toEqual([{ path: ['celsius'], message: expect.stringMatching(/expected number/) }]);
    expect(vendor.requests()).toHaveLength(3);
    const third = vendor.requests()[2]!.body;
    const last = vendor.lastMessage(third);
    expect(last.role).toBe('user');
    expect(last.text).toMatch(/^Your answer is not valid:\n- celsius: .*expected number/);
    expect(last.text).toMatch(/Answer again with only the corrected JSON value\.$/);
    expect(JSON.stringify(third)).toContain('seven'); // the invalid answer stays before the retry message
    vendor.expectNative(third);
    expect(vendor.toolNames(third)).toEqual(['lookup']);
    expect(ofType(events, 'model_attempt').map((event) => event.output?.mode)).toEqual(['native', 'native', 'native']);
    expect(ofType(events, 'agent_end')[0]).toMatchObject({
      outcome: 'completed',
      output: { city: 'Oslo', celsius: 7 },
    });
  });

  it('the budget spent (outputRetries 0, an invalid answer): prompt rejects with OutputError, nothing more is sent', async () => {
    vendor.queue('tool', { json: '{"city":"Oslo"}' });
    const { agent, events } = run(vendor);

    const error = (await agent
      .prompt('Weather in Oslo?', { output: OUTPUT, outputRetries: 0 })
      .catch((e: unknown) => e)) as OutputError;

    expect(error).toBeInstanceOf(OutputError);
    expect(error).toMatchObject({ reason: 'invalid', outcome: 'failed', attempts: 1 });
    expect(error.issues.map((issue) => issue.path)).toEqual([['celsius']]);
    expect(vendor.requests()).toHaveLength(2);
    expect(ofType(events, 'output_invalid').map((event) => [event.attempt, event.retrying])).toEqual([[1, false]]);
    const end = ofType(events, 'agent_end')[0]!;
    expect(end.outcome).toBe('failed');
    expect(end.output).toBeUndefined();
    expect(end.outputError).toEqual({ reason: 'invalid', issues: error.issues, attempts: 1 });
  });
});
