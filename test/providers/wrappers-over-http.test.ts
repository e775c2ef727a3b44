// Wrappers over the real SDKs and a local server speaking the wire format: retry, fallback, deadlines.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  fallback,
  findModel,
  retry,
  textOf,
  type AgentEvent,
  type AssistantMessage,
  type ModelAttemptEvent,
  type ModelFallbackEvent,
} from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { OpenAIProvider } from 'cubepi/providers/openai';
import { expectConsistentTranscript } from '../helpers.js';
import { recordingBodies } from './recordings.js';
import { ReplayServer, sse } from './replay-server.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const anthropicText = recordingBodies('anthropic', 'text-basic.vercel-ai.jsonl')[0]!;
const anthropicToolUse = recordingBodies('anthropic', 'text-then-tool-use.anthropic-sdk-ts.sse')[0]!;
const chatText = recordingBodies('openai-chat', 'text-with-usage.openai-python.sse')[0]!;
const anthropic = () => new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url });
const sonnet = findModel('claude-sonnet-4-6')!;

function record(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.subscribe((e) => void events.push(e));
  return events;
}

describe('retry over HTTP', () => {
  it('429 then 200: one retry, after the retry-after the server asked for', async () => {
    server.reply(
      {
        kind: 'status',
        status: 429,
        headers: { 'retry-after-ms': '120' },
        body: { type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests' } },
      },
      sse(anthropicText),
    );
    const agent = new Agent({
      provider: anthropic(),
      model: sonnet,
      middleware: [retry({ backoff: { initialMs: 1, jitter: 0 } })],
    });
    const events = record(agent);
    const times: number[] = [];
    agent.subscribe((e) => void (e.type === 'model_attempt' && times.push(performance.now())));
    const added = await agent.prompt('Hi');
    expect(server.requests).toHaveLength(2);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(115);
    const attempts = events.filter((e): e is ModelAttemptEvent => e.type === 'model_attempt');
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(attempts[0]!.invocationId).toBe(attempts[1]!.invocationId);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expect(textOf(added.at(-1)!)).toMatch(/^Hello! I'm doing well/);
  });

  it('an error after the first text delta is never retried: the error and the partial text are kept', async () => {
    // The recorded answer, cut after its first text delta, then the API's own mid-stream error event.
    const events = anthropicText.split('\n\n').filter((e) => e.trim() !== '');
    const firstDelta = events.findIndex((e) => e.includes('text_delta'));
    const body =
      events.slice(0, firstDelta + 1).join('\n\n') +
      '\n\nevent: error\ndata: {"type":"error","error":{"type":"api_error","message":"Internal server error"}}\n\n';
    server.reply(sse(body), sse(anthropicText));
    const agent = new Agent({
      provider: anthropic(),
      model: sonnet,
      middleware: [retry({ backoff: { initialMs: 1 } })],
    });
    const added = await agent.prompt('Hi');
    expect(server.requests).toHaveLength(1);
    const last = added.at(-1) as AssistantMessage;
    expect(last).toMatchObject({ stopReason: 'error', errorKind: 'unavailable' });
    expect(textOf(last).length).toBeGreaterThan(0);
  });
});

describe('fallback over HTTP', () => {
  it('a run that starts on Anthropic continues on OpenAI when Anthropic is overloaded mid-run', async () => {
    server.reply(
      sse(anthropicToolUse), // turn 1: Anthropic asks for the weather
      {
        kind: 'status',
        status: 529,
        body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      },
      sse(chatText), // turn 2 moves to OpenAI
    );
    const getWeather = defineTool({
      name: 'get_weather',
      description: 'Current weather for a location',
      parameters: z.object({ location: z.string() }),
      execute: () => 'Paris: 21 °C, sunny',
    });
    const agent = new Agent({
      provider: anthropic(),
      model: sonnet,
      tools: [getWeather],
      middleware: [
        fallback([
          { provider: new OpenAIProvider({ apiKey: 'test-key', baseURL: server.url }), model: findModel('gpt-4o')! },
        ]),
      ],
    });
    const events = record(agent);
    const added = await agent.prompt('What is the weather in Paris?');

    expect(added.map((m) => (m.role === 'assistant' ? `${m.role}:${m.provider}` : m.role))).toEqual([
      'user',
      'assistant:anthropic',
      'toolResult',
      'assistant:openai',
    ]);
    expectConsistentTranscript(added);
    const moved = events.find((e): e is ModelFallbackEvent => e.type === 'model_fallback');
    expect(moved).toMatchObject({
      from: { provider: 'anthropic', model: 'claude-sonnet-4-6' },
      to: { provider: 'openai', model: 'gpt-4o' },
      reason: expect.stringMatching(/Overloaded/),
    });
    // OpenAI received the Anthropic transcript converted: the tool call and its result, paired by id.
    const openaiRequest = server.requests[2]!;
    expect(openaiRequest.path).toMatch(/chat\/completions$/);
    const [assistantTurn, toolTurn] = openaiRequest.body.messages.slice(-2);
    expect(assistantTurn).toMatchObject({
      role: 'assistant',
      tool_calls: [{ type: 'function', function: { name: 'get_weather' } }],
    });
    expect(toolTurn).toMatchObject({
      role: 'tool',
      tool_call_id: assistantTurn.tool_calls[0].id,
      content: 'Paris: 21 °C, sunny',
    });
  });
});

describe('deadlines over HTTP', () => {
  it('a deadline hitting mid-stream aborts the request: the server sees the socket close', async () => {
    const events = anthropicText.split('\n\n').filter((e) => e.trim() !== '');
    server.reply({ kind: 'stall', body: events.slice(0, 4).join('\n\n') + '\n\n' });
    const agent = new Agent({ provider: anthropic(), model: sonnet, deadlineMs: 150 });
    const added = await agent.prompt('Hi');
    expect(added.at(-1)).toMatchObject({
      stopReason: 'aborted',
      errorMessage: 'Run aborted: deadline of 150 ms exceeded',
    });
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
  });

  it('a deadline during a retry backoff ends the wait and sends nothing more', async () => {
    server.reply(
      {
        kind: 'status',
        status: 429,
        headers: { 'retry-after': '30' },
        body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
      },
      sse(anthropicText),
    );
    const agent = new Agent({
      provider: anthropic(),
      model: sonnet,
      deadlineMs: 100,
      middleware: [retry({ backoff: { maxMs: 60_000 } })],
    });
    const started = performance.now();
    const added = await agent.prompt('Hi');
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
    expect(added.at(-1)).toMatchObject({ stopReason: 'aborted' });
  });
});
