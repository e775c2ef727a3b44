// The runtime reads the capability table: a request a model cannot take (an input kind, tools, thinking, a context
// over its window) is not sent to it; the attempt says why (`incapable`), `fallback` moves on, and a chain that cannot
// serve it ends as a typed error, never a vendor's 400.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  canServe,
  ContextBudget,
  defineTool,
  fallback,
  findModel,
  modelIncapability,
  textOf,
  type AgentEvent,
  type AssistantMessage,
  type Message,
  type Model,
  type ModelAttemptEvent,
  type ModelFallbackEvent,
  type ModelRequest,
} from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const photo: Message = {
  role: 'user',
  content: [
    { type: 'text', text: 'what is this?' },
    { type: 'image', data: 'aGk=', mimeType: 'image/png' },
  ],
  timestamp: 1,
};
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a word up',
  parameters: z.object({ word: z.string() }),
  execute: (_id, { word }) => `${word}: a word`,
});

function record(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.subscribe((e) => void events.push(e));
  return events;
}
const attempts = (events: AgentEvent[]) => events.filter((e): e is ModelAttemptEvent => e.type === 'model_attempt');

describe('modelIncapability', () => {
  const request = (messages: Message[], extra: Partial<ModelRequest> = {}) => ({ messages, tools: [], ...extra });
  const hi: Message = { role: 'user', content: 'hi', timestamp: 1 };

  it('names what the model lacks: tools, reasoning, an input kind, the context window', () => {
    const tools = [{ name: 'lookup', description: 'd', inputSchema: { type: 'object' } }];
    expect(modelIncapability({ id: 'm', provider: 'p', tools: false }, request([hi], { tools }))).toEqual({
      reason: 'tools',
      message: 'Model m cannot call tools; the request offers 1',
    });
    expect(
      modelIncapability(
        { id: 'm', provider: 'p', reasoning: false },
        request([hi], { options: { thinkingBudget: 2048 } }),
      ),
    ).toMatchObject({ reason: 'reasoning' });
    expect(modelIncapability({ id: 'm', provider: 'p', input: ['text'] }, request([photo]))).toEqual({
      reason: 'input',
      kind: 'image',
      message: 'Model m cannot take image input',
    });
    const long: Message = { role: 'user', content: 'word '.repeat(2_000), timestamp: 1 };
    expect(modelIncapability({ id: 'm', provider: 'p', contextWindow: 1_000 }, request([long]))).toMatchObject({
      reason: 'context_window',
      contextWindow: 1_000,
      tokens: expect.any(Number) as number,
    });
  });

  it('an image in a tool result needs image input too', () => {
    const result: Message = {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'screenshot',
      content: [{ type: 'image', data: 'aGk=', mimeType: 'image/png' }],
      isError: false,
      timestamp: 2,
    };
    expect(modelIncapability({ id: 'm', provider: 'p', input: ['text'] }, request([hi, result]))?.reason).toBe('input');
  });

  it('takes the table’s facts for a known id, the model’s own facts first, and checks nothing it is not told', () => {
    // o3-mini takes text only (the table says so); a Model that says otherwise wins.
    expect(findModel('o3-mini')?.input).toEqual(['text']);
    expect(modelIncapability({ id: 'o3-mini', provider: 'openai' }, request([photo]))).toMatchObject({ kind: 'image' });
    expect(modelIncapability({ id: 'o3-mini', provider: 'openai', input: ['text', 'image'] }, request([photo]))).toBe(
      undefined,
    );
    // gpt-4.1 does not reason (table); a model the table does not know, stating nothing, is not refused anything.
    expect(
      modelIncapability({ id: 'gpt-4.1', provider: 'openai' }, request([hi], { options: { thinkingBudget: 1024 } })),
    ).toMatchObject({ reason: 'reasoning' });
    const anything = request([photo], {
      tools: [{ name: 'x', description: 'd', inputSchema: {} }],
      options: { thinkingBudget: 1024 },
    });
    expect(modelIncapability({ id: 'my-local-model', provider: 'ollama' }, anything)).toBeUndefined();
    expect(canServe({ id: 'gemini-2.5-flash', provider: 'google' }, anything as ModelRequest)).toBe(true);
  });
});

describe('the loop refuses what a model cannot take', () => {
  it('without wrappers: the request is not sent, the attempt says why, the run ends with a typed error', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('never sent')] });
    const model: Model = { id: 'no-tools', provider: 'faux', tools: false };
    const agent = new Agent({ provider: faux, model, tools: [lookup] });
    const events = record(agent);
    const added = await agent.prompt('look up "cube"');
    expect(faux.callCount).toBe(0);
    expect(attempts(events)).toMatchObject([{ attempt: 1, model: 'no-tools', incapable: { reason: 'tools' } }]);
    const last = added.at(-1) as AssistantMessage;
    expect(last).toMatchObject({ role: 'assistant', stopReason: 'error', errorKind: 'model_incapable' });
    expect(last.errorMessage).toBe('Model no-tools cannot call tools; the request offers 1');
    expectConsistentTranscript(agent.state.messages);
  });

  it('a model given by id takes the table’s facts: o3-mini is sent no image', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('never sent')] });
    const agent = new Agent({ provider: faux, model: 'o3-mini' });
    expect(agent.state.model).toMatchObject({ id: 'o3-mini', input: ['text'], contextWindow: 200_000 });
    const events = record(agent);
    const added = await agent.prompt(photo);
    expect(faux.callCount).toBe(0);
    expect(added.at(-1)).toMatchObject({
      errorKind: 'model_incapable',
      errorMessage: 'Model o3-mini cannot take image input',
    });
    expect(attempts(events)[0]!.incapable).toEqual({
      reason: 'input',
      kind: 'image',
      message: 'Model o3-mini cannot take image input',
    });
  });

  it('fallback: a model that cannot take the images is refused (its attempt says so) and the next one answers', async () => {
    const textOnly = new FauxProvider({ id: 'text-only', responses: [fauxMessage('never')] });
    const vision = new FauxProvider({ id: 'vision', responses: [fauxMessage('I see a cat')] });
    const agent = new Agent({
      provider: textOnly,
      model: { id: 'text-1', provider: 'text-only', input: ['text'] },
      middleware: [
        fallback([{ provider: vision, model: { id: 'vision-1', provider: 'vision', input: ['text', 'image'] } }]),
      ],
    });
    const events = record(agent);
    const added = await agent.prompt(photo);
    expect(textOnly.callCount).toBe(0);
    expect(textOf(added.at(-1)!)).toBe('I see a cat');
    const [refused, served] = attempts(events);
    expect(refused).toMatchObject({ model: 'text-1', incapable: { reason: 'input', kind: 'image' } });
    expect(served).toMatchObject({ model: 'vision-1', previous: { errorKind: 'model_incapable' } });
    expect(served!.incapable).toBeUndefined();
    const moved = events.find((e): e is ModelFallbackEvent => e.type === 'model_fallback');
    expect(moved).toMatchObject({ to: { model: 'vision-1' }, reason: 'Model text-1 cannot take image input' });
  });

  it('fallback moves on from an incapable model even when `on` does not list model_incapable', async () => {
    const plain = new FauxProvider({ id: 'plain', responses: [fauxMessage('never')] });
    const thinker = new FauxProvider({ id: 'thinker', responses: [fauxMessage('thought about it')] });
    const agent = new Agent({
      provider: plain,
      model: { id: 'gpt-4.1', provider: 'plain' }, // the table: does not reason
      streamOptions: { thinkingBudget: 4_096 },
      middleware: [
        fallback([{ provider: thinker, model: { id: 'r1', provider: 'thinker', reasoning: true } }], {
          on: ['rate_limited'],
        }),
      ],
    });
    const events = record(agent);
    const added = await agent.prompt('think');
    expect(plain.callCount).toBe(0);
    expect(textOf(added.at(-1)!)).toBe('thought about it');
    expect(attempts(events)[0]).toMatchObject({ incapable: { reason: 'reasoning' } });
  });

  it('when no model of the chain can take the request: a typed model_incapable error, and no provider called', async () => {
    const a = new FauxProvider({ id: 'a', responses: [fauxMessage('never')] });
    const b = new FauxProvider({ id: 'b', responses: [fauxMessage('never')] });
    const agent = new Agent({
      provider: a,
      model: { id: 'a-1', provider: 'a', input: ['text'] },
      middleware: [fallback([{ provider: b, model: { id: 'o3-mini', provider: 'b' } }])],
    });
    const events = record(agent);
    const added = await agent.prompt(photo);
    expect(a.callCount + b.callCount).toBe(0);
    expect(added.at(-1)).toMatchObject({
      stopReason: 'error',
      errorKind: 'model_incapable',
      provider: 'b',
      model: 'o3-mini',
      errorMessage: 'Model o3-mini cannot take image input',
    });
    expect(attempts(events).map((e) => e.incapable?.reason)).toEqual(['input', 'input']);
    expectConsistentTranscript(agent.state.messages);
  });

  it('ContextBudget: a last turn over the whole window is refused as context_overflow, and fallback takes it to a larger window', async () => {
    const small = new FauxProvider({ id: 'small', responses: [fauxMessage('never')] });
    const large = new FauxProvider({ id: 'large', responses: [fauxMessage('read it all')] });
    const model: Model = { id: 'small-1', provider: 'small', contextWindow: 1_000, maxTokens: 100 };
    const huge = 'lorem ipsum '.repeat(1_000); // ~3,400 tokens by the estimate: over 1,000 whatever is trimmed
    const alone = new Agent({ provider: small, model, middleware: [new ContextBudget()] });
    const events = record(alone);
    const failed = await alone.prompt(huge);
    expect(small.callCount).toBe(0);
    expect(failed.at(-1)).toMatchObject({ stopReason: 'error', errorKind: 'context_overflow' });
    expect(attempts(events)[0]!.incapable).toMatchObject({ reason: 'context_window', contextWindow: 1_000 });
    expect((attempts(events)[0]!.incapable as { tokens: number }).tokens).toBeGreaterThan(1_000);

    const chained = new Agent({
      provider: small,
      model,
      middleware: [
        new ContextBudget(),
        fallback([{ provider: large, model: { id: 'large-1', provider: 'large', contextWindow: 100_000 } }]),
      ],
    });
    const added = await chained.prompt(huge);
    expect(small.callCount).toBe(0);
    expect(added.at(-1)).toMatchObject({ provider: 'large', model: 'large-1' });
    expect(textOf(added.at(-1)!)).toBe('read it all');
  });

  it('a model id the table does not know works with the Model you pass: sent as it is, priced by its own cost', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('hello from a fine-tune')] });
    const model: Model = {
      id: 'ft:my-org:custom-7',
      provider: 'faux',
      contextWindow: 32_000,
      input: ['text', 'image'],
      cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
    };
    expect(findModel(model.id)).toBeUndefined();
    const agent = new Agent({ provider: faux, model, tools: [lookup] });
    const events = record(agent);
    const added = await agent.prompt(photo);
    const answer = added.at(-1) as AssistantMessage;
    expect(answer).toMatchObject({ stopReason: 'stop', model: 'ft:my-org:custom-7' });
    expect(faux.callCount).toBe(1);
    expect(attempts(events)[0]!.incapable).toBeUndefined();
    const { input, output } = answer.usage;
    expect(answer.usage.cost.total).toBeCloseTo((input * 1 + output * 2) / 1e6, 12);
    expect(answer.usage.cost.total).toBeGreaterThan(0);
  });
});
