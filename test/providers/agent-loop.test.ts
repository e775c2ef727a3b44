// The agent loop end to end over each real provider: recorded tool-calling conversations, served locally, driven by
// the public Agent with real tools.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  findModel,
  Agent,
  defineTool,
  textOf,
  userMessage,
  type AssistantMessage,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { OpenAIProvider, OpenAIResponsesProvider } from 'cubepi/providers/openai';
import { expectConsistentTranscript } from '../helpers.js';
import { recordingBodies } from './recordings.js';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const roles = (messages: readonly Message[]) =>
  messages.map((m) => (m.role === 'assistant' ? `assistant(${m.stopReason})` : m.role));

describe('the agent loop over each provider', () => {
  it('AnthropicProvider: a tool call, its result sent back as tool_result, then the final answer', async () => {
    server.reply(
      sse(recordingBodies('anthropic', 'text-then-tool-use.anthropic-sdk-ts.sse')[0]!),
      sse(recordingBodies('anthropic', 'text-basic.vercel-ai.jsonl')[0]!),
    );
    const calls: unknown[] = [];
    const getWeather = defineTool({
      name: 'get_weather',
      description: 'Current weather for a location',
      parameters: z.object({ location: z.string() }),
      execute: (_id, args) => (calls.push(args), { content: [{ type: 'text', text: 'Paris: 21 °C, sunny' }] }),
    });
    const agent = new Agent({
      provider: new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url }),
      model: findModel('claude-sonnet-4-6')!,
      systemPrompt: 'You are a weather bot.',
      tools: [getWeather],
    });

    const added = await agent.prompt('What is the weather in Paris?');

    expect(roles(added)).toEqual(['user', 'assistant(toolUse)', 'toolResult', 'assistant(stop)']);
    expect(calls).toEqual([{ location: 'Paris' }]);
    expect(textOf(added[3]!)).toMatch(/^Hello! I'm doing well/);
    expectConsistentTranscript(added);
    const [first, second] = server.requests;
    expect(first!.body.tools).toEqual([
      expect.objectContaining({ name: 'get_weather', input_schema: expect.objectContaining({ type: 'object' }) }),
    ]);
    expect(second!.body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: "I'll check the current weather in Paris for you." },
          { type: 'tool_use', id: 'toolu_01NRLabsLyVHZPKxbKvkfSMn', name: 'get_weather', input: { location: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01NRLabsLyVHZPKxbKvkfSMn',
            content: [{ type: 'text', text: 'Paris: 21 °C, sunny' }],
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ]);
    // Usage of the run, per message.
    expect((added[1] as AssistantMessage).usage).toMatchObject({ input: 377, output: 65 });
  });

  it('OpenAIProvider: a tool call, its result sent back as a tool message, then the final answer', async () => {
    server.reply(
      sse(recordingBodies('openai-chat', 'single-tool-call.openai-python.sse')[0]!),
      sse(recordingBodies('openai-chat', 'text-with-usage.openai-python.sse')[0]!),
    );
    const getWeather = defineTool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ city: z.string() }),
      execute: (_id, { city }) => ({ content: [{ type: 'text', text: `${city}: 18 °C, cloudy` }] }),
    });
    const agent = new Agent({
      provider: new OpenAIProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
      model: findModel('gpt-4o')!,
      tools: [getWeather],
    });

    const added = await agent.prompt('Weather in New York?');

    expect(roles(added)).toEqual(['user', 'assistant(toolUse)', 'toolResult', 'assistant(stop)']);
    expect((added[2] as ToolResultMessage).content).toEqual([{ type: 'text', text: 'New York City: 18 °C, cloudy' }]);
    expectConsistentTranscript(added);
    expect(server.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'Weather in New York?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_4XzlGBLtUe9dy3GVNV4jhq7h',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"New York City"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_4XzlGBLtUe9dy3GVNV4jhq7h', content: 'New York City: 18 °C, cloudy' },
    ]);
  });

  it('OpenAIResponsesProvider: four recorded turns, the encrypted reasoning replayed with its paired call', async () => {
    const bodies = recordingBodies('openai-responses', 'reasoning-summary-function-calls-multi-step.vercel-ai.jsonl');
    server.reply(...bodies.map(sse));
    const calculator = defineTool({
      name: 'calculator',
      description: 'Adds or multiplies two numbers',
      parameters: z.object({ a: z.number(), b: z.number(), op: z.enum(['add', 'multiply']) }),
      execute: (_id, { a, b, op }) => String(op === 'add' ? a + b : a * b),
    });
    const agent = new Agent({
      provider: new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` }),
      model: findModel('gpt-5.1-codex-max')!,
      tools: [calculator],
    });

    const added = await agent.prompt('Compute (12 + 7) × 3 × 10 with the calculator, one step at a time.');

    expect(roles(added)).toEqual([
      'user',
      'assistant(toolUse)',
      'toolResult',
      'assistant(toolUse)',
      'toolResult',
      'assistant(toolUse)',
      'toolResult',
      'assistant(stop)',
    ]);
    expect(added.filter((m) => m.role === 'toolResult').map(textOf)).toEqual(['19', '57', '570']);
    expect(textOf(added.at(-1)!)).toBe('The final result is **570**.');
    expectConsistentTranscript(added);

    const reasoning = JSON.parse(((added[1] as AssistantMessage).content[0] as { signature: string }).signature);
    for (const request of server.requests.slice(1)) {
      // Every later turn replays the first turn's reasoning item, then its call with the item id it is paired by.
      expect(request.body.input.slice(1, 3)).toEqual([
        {
          type: 'reasoning',
          id: reasoning.id,
          summary: reasoning.summary,
          encrypted_content: reasoning.encrypted_content,
        },
        expect.objectContaining({
          type: 'function_call',
          call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
          id: expect.stringMatching(/^fc_/),
        }),
      ]);
    }
    expect(server.requests[3]!.body.input.at(-1)).toEqual({
      type: 'function_call_output',
      call_id: 'call_Zl5vIMnD7dVAjgU6FkhmiCZh',
      output: '570',
    });
  });

  it('a transcript started on OpenAI Responses continues on Anthropic (cross-provider handoff)', async () => {
    // Turn 1 on the Responses API: reasoning (encrypted) and a calculator call with a `call_…|fc_…` id.
    server.reply(
      sse(recordingBodies('openai-responses', 'reasoning-summary-function-calls-multi-step.vercel-ai.jsonl')[0]!),
    );
    const responses = new OpenAIResponsesProvider({ apiKey: 'test-key', baseURL: `${server.url}/v1` });
    const prompt = userMessage('Compute 12 + 7.');
    const { message: first } = await collectStream(responses.stream(findModel('gpt-5.1-codex-max')!, [prompt]));
    const call = first.content[1] as { id: string };
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: call.id,
      toolName: 'calculator',
      content: [{ type: 'text', text: '19' }],
      isError: false,
      timestamp: Date.now(),
    };

    // Turn 2 on Claude, resuming that transcript.
    server.reply(sse(recordingBodies('anthropic', 'text-basic.vercel-ai.jsonl')[0]!));
    const agent = new Agent({
      provider: new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url }),
      model: findModel('claude-sonnet-4-6')!,
      messages: [prompt, first, result],
    });
    const added = await agent.resume();

    expect(roles(added)).toEqual(['assistant(stop)']);
    expect(server.requests[1]!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Compute 12 + 7.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: (first.content[0] as { thinking: string }).thinking },
          {
            type: 'tool_use',
            id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
            name: 'calculator',
            input: { a: 12, b: 7, op: 'add' },
          },
        ],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
            content: [{ type: 'text', text: '19' }],
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ]);
  });
});
