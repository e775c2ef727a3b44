// Seed 002 §9.4: "Fallback 前确认目标模型支持所需 tool/structured output/multimodal 能力". `canServe` checks what the loop
// refuses an attempt for — tools, thinking, image and file inputs, the context window (files counted), the output mode —
// and `fallback` never sends a request to a target that cannot take it: each row below runs a chain primary
// (rate-limited) → the incapable target → a capable one, and the incapable one is never called.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  canServe,
  ConfigurationError,
  defineTool,
  fallback,
  servingRefusal,
  type AgentEvent,
  type AssistantMessage,
  type FileContent,
  type Message,
  type Model,
  type ModelAttemptEvent,
  type OutputSpec,
  type RunOptions,
  type ServeRequest,
  type StreamOptions,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

const Weather = z.object({ city: z.string() });
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a word up',
  parameters: z.object({ word: z.string() }),
  execute: (_id, { word }) => `${word}: a word`,
});
const lookupDefinition = { name: 'lookup', description: 'Looks a word up', inputSchema: { type: 'object' } };
const b64 = (text: string) => Buffer.from(text, 'latin1').toString('base64');
/** A PDF of `pages` page objects. */
function pdf(pages: number): string {
  const objects = Array.from({ length: pages }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj\n`);
  return b64(
    `%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count ${pages} >> endobj\n${objects.join('')}%%EOF\n`,
  );
}
const pdfBlock = (pages: number): FileContent => ({ type: 'file', mimeType: 'application/pdf', data: pdf(pages) });
const user = (content: Message['content']): Message => ({ role: 'user', content, timestamp: 1 }) as Message;
const rateLimited = () =>
  fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited', errorMessage: 'rate_limited!' });

interface Row {
  readonly name: string;
  /** The facts of the target that cannot take the request. */
  readonly skipped: Omit<Model, 'id' | 'provider'>;
  readonly prompt: Message;
  readonly tools?: boolean;
  readonly streamOptions?: Omit<StreamOptions, 'signal'>;
  readonly output?: OutputSpec;
  readonly incapable: Record<string, unknown>;
  /** What the capable last target answers. */
  readonly answer: AssistantMessage;
}

const ok = fauxMessage('served');
const rows: Row[] = [
  {
    name: 'tools offered to a model without tools',
    skipped: { tools: false },
    prompt: user('look up "cube"'),
    tools: true,
    incapable: { reason: 'tools' },
    answer: ok,
  },
  {
    name: 'a thinking budget for a model that does not reason',
    skipped: { reasoning: false },
    prompt: user('think'),
    streamOptions: { thinkingBudget: 2_048 },
    incapable: { reason: 'reasoning' },
    answer: ok,
  },
  {
    name: 'an image for a text-only model',
    skipped: { input: ['text'] },
    prompt: user([
      { type: 'text', text: 'what is this?' },
      { type: 'image', data: 'aGk=', mimeType: 'image/png' },
    ]),
    incapable: { reason: 'input', kind: 'image' },
    answer: ok,
  },
  {
    name: 'a PDF file for a model without pdf input',
    skipped: { input: ['text', 'image'] },
    prompt: user([{ type: 'text', text: 'summarise' }, pdfBlock(1)]),
    incapable: { reason: 'input', kind: 'pdf' },
    answer: ok,
  },
  {
    name: 'text over the context window (the token estimate)',
    skipped: { contextWindow: 1_000 },
    prompt: user('lorem ipsum '.repeat(1_000)),
    incapable: { reason: 'context_window', contextWindow: 1_000 },
    answer: ok,
  },
  {
    name: 'files over the context window (pages counted)',
    skipped: { contextWindow: 4_000, input: ['text', 'image', 'pdf'] },
    prompt: user([{ type: 'text', text: 'read' }, pdfBlock(6)]),
    incapable: { reason: 'context_window', contextWindow: 4_000 },
    answer: ok,
  },
  {
    name: 'output in native mode for a model without native structured output',
    skipped: { structuredOutput: false },
    prompt: user('weather?'),
    output: { schema: Weather, mode: 'native' },
    incapable: { reason: 'output', message: expect.stringMatching(/no native structured output/) as string },
    answer: fauxMessage('{"city":"Oslo"}'),
  },
  {
    name: 'output in tool mode for a model without tools',
    skipped: { tools: false },
    prompt: user('weather?'),
    output: { schema: Weather, mode: 'tool' },
    incapable: { reason: 'output', message: expect.stringMatching(/cannot take the output in tool mode/) as string },
    answer: fauxMessage([fauxToolCall('final_answer', { city: 'Oslo' })], { stopReason: 'toolUse' }),
  },
];

describe('canServe and fallback refuse the same requests (seed 002 §9.4)', () => {
  for (const row of rows) {
    it(`${row.name}: canServe says no, and fallback never sends it the request`, async () => {
      const primary = new FauxProvider({ id: 'primary', responses: [rateLimited()] });
      const skipped = new FauxProvider({ id: 'skipped', responses: [fauxMessage('never sent')] });
      const last = new FauxProvider({ id: 'last', responses: [row.answer] });
      // The two others state only what the row needs: a fact no one states is not checked.
      const able = { structuredOutput: 'json_schema' } as const;
      const skippedModel: Model = { id: 'skipped-1', provider: 'skipped', ...row.skipped };
      const lastModel: Model = { id: 'last-1', provider: 'last', ...able };
      const request: ServeRequest = {
        messages: [row.prompt],
        systemPrompt: '',
        tools: row.tools ? [lookupDefinition] : [],
        options: row.streamOptions,
        output: row.output,
      };
      expect(canServe(skippedModel, request)).toBe(false);
      expect(servingRefusal(skippedModel, request)).toMatchObject(row.incapable);
      expect(canServe(lastModel, request)).toBe(true);

      const agent = new Agent({
        provider: primary,
        model: { id: 'primary-1', provider: 'primary', ...able },
        ...(row.tools ? { tools: [lookup] } : {}),
        ...(row.streamOptions ? { streamOptions: row.streamOptions } : {}),
        middleware: [
          fallback([
            { provider: skipped, model: skippedModel },
            { provider: last, model: lastModel },
          ]),
        ],
      });
      const events: AgentEvent[] = [];
      agent.subscribe((event) => void events.push(event));
      const runOptions: RunOptions | undefined = row.output ? { output: row.output } : undefined;
      await agent.prompt(row.prompt, runOptions);

      expect(skipped.callCount).toBe(0);
      expect([primary.callCount, last.callCount]).toEqual([1, 1]);
      const attempts = events.filter((e): e is ModelAttemptEvent => e.type === 'model_attempt');
      expect(attempts.map((a) => a.model)).toEqual(['primary-1', 'skipped-1', 'last-1']);
      // The attempt's refusal is servingRefusal's, word for word: one rule.
      expect(attempts[1]!.incapable).toEqual(servingRefusal(skippedModel, request));
      expect(attempts[2]!.incapable).toBeUndefined();
      expect(agent.state.messages.filter((m) => m.role === 'assistant').at(-1)).toMatchObject({ model: 'last-1' });
    });
  }

  it('a capable target is served: every row’s request passes canServe on a model that states nothing', () => {
    for (const row of rows) {
      const request: ServeRequest = {
        messages: [row.prompt],
        tools: row.tools ? [lookupDefinition] : [],
        options: row.streamOptions,
        output: row.output,
      };
      expect(canServe({ id: 'unknown-local', provider: 'ollama', structuredOutput: 'json_schema' }, request)).toBe(
        true,
      );
    }
  });

  it('mode auto is never refused for output (it takes the strongest mode the model has)', () => {
    const request: ServeRequest = { messages: [user('weather?')], output: Weather };
    expect(canServe({ id: 'plain', provider: 'p', tools: false, structuredOutput: false }, request)).toBe(true);
  });

  it('a malformed output is a ConfigurationError, not a no', () => {
    const request = { messages: [user('x')], output: { schema: 42 } } as unknown as ServeRequest;
    expect(() => canServe({ id: 'm', provider: 'p' }, request)).toThrow(ConfigurationError);
  });
});
