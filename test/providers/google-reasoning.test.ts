// `request.reasoning` (a ResolvedReasoning) → Gemini's thinkingConfig, through the real @google/genai client against
// a local server: levels on Gemini 3, budgets on Gemini 2.5, and the provider options winning when given.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { userMessage, type Model, type ResolvedReasoning, type StreamOptions } from 'cubepi';
import { GoogleProvider } from 'cubepi/providers/google';
import { geminiText } from './google-wire.js';
import { ReplayServer } from './replay-server.js';
import { collectStream } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const gemini = () => new GoogleProvider({ apiKey: 'test-key', baseURL: server.url });
const model = (id: string): Model => ({ id, provider: 'google' });

/** The thinkingConfig the SDK sent for one request. */
async function sent(id: string, reasoning: ResolvedReasoning | undefined, options: StreamOptions = {}) {
  server.reply(geminiText(['ok']));
  await collectStream(gemini().stream(model(id), [userMessage('Hi')], { reasoning, options }));
  return server.requests.at(-1)!.body.generationConfig?.thinkingConfig;
}

describe('GoogleProvider: request.reasoning → thinkingConfig', () => {
  // [model, resolved setting, thinkingConfig sent]; the table rows give each model's levels or budget range.
  it.each([
    ['gemini-3-pro-preview', { requested: 'high', effort: 'high' }, { thinkingLevel: 'HIGH', includeThoughts: true }],
    ['gemini-3-pro-preview', { requested: 'low', effort: 'low' }, { thinkingLevel: 'LOW', includeThoughts: true }],
    [
      'gemini-3-pro-preview',
      { requested: 'max', effort: 'max', clamped: true },
      { thinkingLevel: 'HIGH', includeThoughts: true },
    ],
    [
      'gemini-3-flash-preview',
      { requested: 'minimal', effort: 'minimal' },
      { thinkingLevel: 'MINIMAL', includeThoughts: true },
    ],
    [
      'gemini-3-flash-preview',
      { requested: 'medium', effort: 'medium' },
      { thinkingLevel: 'MEDIUM', includeThoughts: true },
    ],
    // Gemini 3 cannot stop thinking: its lowest level (3 Pro takes no MINIMAL), no thought summaries.
    ['gemini-3-pro-preview', { requested: 'off', off: true }, { thinkingLevel: 'LOW' }],
    ['gemini-3-flash-preview', { requested: 'off', off: true }, { thinkingLevel: 'MINIMAL' }],
    // A Gemini 3 the table does not know: levels, and LOW as its floor.
    ['gemini-3.9-pro-experimental', { requested: 'off', off: true }, { thinkingLevel: 'LOW' }],
    [
      'gemini-3.9-pro-experimental',
      { requested: 'high', effort: 'high' },
      { thinkingLevel: 'HIGH', includeThoughts: true },
    ],
    [
      'gemini-2.5-flash',
      { requested: { budgetTokens: 2048 }, budgetTokens: 2048 },
      { thinkingBudget: 2048, includeThoughts: true },
    ],
    ['gemini-2.5-flash', { requested: 'off', off: true }, { thinkingBudget: 0 }],
    // 2.5 Pro cannot stop thinking (budget 0 is a 400): its minimum.
    ['gemini-2.5-pro', { requested: 'off', off: true }, { thinkingBudget: 128 }],
    ['gemini-2.5-pro', { requested: 'high', budgetTokens: 24576 }, { thinkingBudget: 24576, includeThoughts: true }],
    // An effort alone on a budget model: a share of its range (128–32,768: medium is the middle).
    ['gemini-2.5-pro', { requested: 'medium', effort: 'medium' }, { thinkingBudget: 16448, includeThoughts: true }],
    // Both given on a level model: the level (Gemini refuses a budget and a level together).
    [
      'gemini-3-flash-preview',
      { requested: 'low', effort: 'low', budgetTokens: 1024 },
      { thinkingLevel: 'LOW', includeThoughts: true },
    ],
  ] as const)('%s, %j → %j', async (id, reasoning, expected) => {
    expect(await sent(id, reasoning as ResolvedReasoning)).toEqual(expected);
  });

  it('no reasoning: only the defaults (thought summaries on a model known to reason)', async () => {
    expect(await sent('gemini-3-pro-preview', undefined)).toEqual({ includeThoughts: true });
    expect(await sent('gemini-2.0-flash', undefined)).toBeUndefined();
  });
});

describe('GoogleProvider: the provider options win over request.reasoning', () => {
  const high: ResolvedReasoning = { requested: 'high', effort: 'high' };
  const budget: ResolvedReasoning = { requested: { budgetTokens: 4096 }, budgetTokens: 4096 };

  it('options.thinkingBudget over a resolved effort: the budget alone (never a budget and a level together)', async () => {
    expect(await sent('gemini-3-pro-preview', high, { thinkingBudget: 512 })).toEqual({
      thinkingBudget: 512,
      includeThoughts: true,
    });
  });

  it('options.thinkingLevel over a resolved budget: the level alone', async () => {
    expect(await sent('gemini-2.5-flash', budget, { thinkingLevel: 'low' })).toEqual({
      thinkingLevel: 'LOW',
      includeThoughts: true,
    });
  });

  it('options.thinkingBudget 0 over a resolved effort turns thinking off', async () => {
    expect(await sent('gemini-2.5-flash', high, { thinkingBudget: 0 })).toEqual({ thinkingBudget: 0 });
  });

  it('options.includeThoughts over the default, with the reasoning still mapped', async () => {
    expect(await sent('gemini-3-pro-preview', high, { includeThoughts: false })).toEqual({ thinkingLevel: 'HIGH' });
  });

  it('and the other direction: without those options the resolved setting is what is sent', async () => {
    expect(await sent('gemini-2.5-flash', budget, { maxTokens: 100 })).toEqual({
      thinkingBudget: 4096,
      includeThoughts: true,
    });
  });
});
