// Guardrails end to end: through the Agent, a real SDK against a local server, and real checkpointers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { filter, map } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  HookError,
  inputGuardrail,
  MemoryCheckpointer,
  outputGuardrail,
  textOf,
  toolGuardrail,
  userMessage,
  type AgentEvent,
  type Checkpointer,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { OpenAIProvider } from 'cubepi/providers/openai';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { recordingBodies } from './providers/recordings.js';
import { ReplayServer, type RecordedRequest } from './providers/replay-server.js';

let server: ReplayServer;
const dir = mkdtempSync(join(tmpdir(), 'cubepi-guardrails-'));
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => server.reset());

/** Waits (a bounded number of event-loop turns) until the server has received a request. */
async function requestArrived(): Promise<RecordedRequest> {
  for (let i = 0; i < 2000 && server.requests.length < 1; i++) await new Promise((r) => setTimeout(r, 5));
  expect(server.requests).toHaveLength(1);
  return server.requests[0]!;
}

describe('inputGuardrail through the OpenAI SDK', () => {
  it('a parallel input guardrail that trips while the response streams aborts the request: the socket closes', async () => {
    // The response's first events (some text), then the connection stays open: only an abort can end it.
    const body = recordingBodies('openai-chat', 'text-with-usage.openai-python.sse')[0]!;
    const partial = body
      .split('\n\n')
      .filter((e) => e.trim() !== '')
      .slice(0, 3)
      .map((e) => `${e}\n\n`)
      .join('');
    server.reply({ kind: 'stall', body: partial });
    let sawText!: () => void;
    const textArrived = new Promise<void>((resolve) => (sawText = resolve));
    const agent = new Agent({
      provider: new OpenAIProvider({
        client: new OpenAI({ apiKey: 'k', baseURL: `${server.url}/v1`, maxRetries: 0, logLevel: 'off' }),
      }),
      model: { id: 'gpt-4o', provider: 'openai' },
      middleware: [
        inputGuardrail({
          name: 'policy',
          inspect: async () => {
            await textArrived;
            return { trip: true, reason: 'off-topic' };
          },
        }),
      ],
    });
    const events: AgentEvent[] = [];
    const done = new Promise<void>((resolve, reject) =>
      agent.prompt$('Hi').subscribe({
        next: (event) => {
          events.push(event);
          if (event.type === 'message_update' && event.streamEvent.type === 'text_delta') sawText();
        },
        error: reject,
        complete: resolve,
      }),
    );
    const request = await requestArrived();
    await done;
    expect(await request.closed).toEqual({ finished: false });
    const types = events.map((event) => event.type);
    expect(types).toContain('message_update');
    expect(types.indexOf('guardrail_tripped')).toBeLessThan(types.indexOf('message_retracted'));
    expect(events.at(-1)).toMatchObject({
      type: 'agent_end',
      outcome: 'stopped',
      stoppedBy: { by: 'policy', reason: 'Guardrail policy tripped: off-topic' },
    });
    // The retracted answer is not in the transcript: the prompt and the closing message only.
    expect(agent.state.messages.map((m) => (m.role === 'assistant' ? m.stopReason : m.role))).toEqual([
      'user',
      'blocked',
    ]);
  });
});

const checkpointers: [string, () => Checkpointer][] = [
  ['MemoryCheckpointer', () => new MemoryCheckpointer()],
  ['SQLiteCheckpointer', () => new SQLiteCheckpointer(join(dir, 'threads.db'))],
];

describe.each(checkpointers)('outputGuardrail with %s', (_name, make) => {
  it('a tripped final answer is never stored: the thread holds the prompt and the closing message', async () => {
    const checkpointer = make();
    const threadId = `output-trip-${_name}`;
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('the secret is sk-123')] }),
      model: 'faux',
      checkpointer,
      threadId,
      middleware: [
        outputGuardrail({
          name: 'no-keys',
          text: (text) => (text.includes('sk-') ? { trip: true, reason: 'an API key' } : 'pass'),
        }),
      ],
    });
    await agent.prompt('tell me');
    const stored = (await checkpointer.load(threadId))!;
    expect(JSON.stringify(stored.messages)).not.toContain('sk-123');
    expect(stored.messages.map((m) => (m.role === 'assistant' ? m.stopReason : m.role))).toEqual(['user', 'blocked']);
  });
});

describe('guardrail failures', () => {
  it('a guardrail that throws fails the run with a HookError naming it (never a silent pass)', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('hello')] }),
      model: 'faux',
      middleware: [
        inputGuardrail({
          name: 'broken',
          text: () => {
            throw new Error('regex exploded');
          },
        }),
      ],
    });
    const failure = await agent.prompt('hi').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(HookError);
    expect((failure as HookError).middleware).toBe('input-guardrail:broken');
    expect(JSON.stringify(agent.state.messages)).not.toContain('hello');
  });
});

describe('toolGuardrail: the result before the model sees it', () => {
  it('a rewrite redacts the result: the model and the transcript get the redacted text', async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'd',
      parameters: z.object({}),
      execute: () => ({ content: [{ type: 'text', text: 'mail ann@example.com' }] }),
    });
    let seen = '';
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('lookup', {})]),
          (messages) => {
            seen = JSON.stringify(messages.at(-1));
            return fauxMessage('ok');
          },
        ],
      }),
      model: 'faux',
      tools: [lookup],
      middleware: [
        toolGuardrail({
          name: 'redact',
          text: (text) => ({ rewrite: true, text: text.replace(/\S+@\S+/g, '[email]') }),
        }),
      ],
    });
    await agent.prompt('find');
    expect(seen).toContain('mail [email]');
    expect(seen).not.toContain('ann@example.com');
    expect(JSON.stringify(agent.state.messages)).not.toContain('ann@example.com');
  });
});

describe("a guardrail's own model call", () => {
  it('goes through the run: announced as a model_attempt of its own invocation, its usage in agent_end.usage', async () => {
    const usage = (input: number, output: number) => ({
      input,
      output,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
      totalTokens: input + output,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    });
    // Blocking: the check's call is sent first, then the turn's own call (one scripted provider answers both, in order).
    const provider = new FauxProvider({
      responses: [fauxMessage('SAFE', { usage: usage(7, 1) }), fauxMessage('hello', { usage: usage(20, 3) })],
    });
    const seen: { text?: string; prompt?: string } = {};
    const agent = new Agent({
      provider,
      model: { id: 'faux', provider: 'faux' },
      middleware: [
        inputGuardrail({
          name: 'classifier',
          mode: 'blocking',
          text: (text, context) => {
            expect(context.callModel).toBeTypeOf('function');
            seen.prompt = text;
            return context.callModel!({ systemPrompt: 'Answer SAFE or UNSAFE.', messages: [userMessage(text)] }).pipe(
              filter((event) => event.type === 'done'),
              map((event) => {
                seen.text = textOf(event.message);
                return event.message.content.some((b) => b.type === 'text' && b.text === 'SAFE')
                  ? ('pass' as const)
                  : { trip: true as const, reason: 'unsafe' };
              }),
            );
          },
        }),
      ],
    });
    const events: AgentEvent[] = [];
    agent.events$.subscribe((event) => events.push(event));
    await agent.prompt('is this fine?');
    expect(seen).toEqual({ prompt: 'is this fine?', text: 'SAFE' });
    const attempts = events.filter((e) => e.type === 'model_attempt');
    expect(attempts).toHaveLength(2);
    // the check's call has an invocation of its own, not the turn's
    expect(new Set(attempts.map((a) => a.invocationId)).size).toBe(2);
    const end = events.find((e) => e.type === 'agent_end');
    expect(end?.type === 'agent_end' && end.usage.input).toBe(27);
    expect(end?.type === 'agent_end' && end.usage.output).toBe(4);
    expect(agent.state.messages.map(textOf)).toEqual(['is this fine?', 'hello']);
  });
});
