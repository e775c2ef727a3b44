// The run's reasoning setting (a ResolvedReasoning) on AnthropicProvider, through the real @anthropic-ai/sdk client
// against a local server: `thinking` and `output_config.effort` in the request body, per model family, and the
// provider-specific options (`thinkingBudget`, `thinking`) winning over it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findModel, userMessage, type Model, type ResolvedReasoning } from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { anthropicMessagesWire } from 'cubepi/testing';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream } from './stream-harness.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

// Opus 4.5's facts under another id: the SDK warns on every request to a deprecated model id.
const model = (id: string): Model =>
  id === 'claude-opus-4-5' ? { ...findModel(id)!, id: 'claude-opus-4-5-facts' } : findModel(id)!;
const OK = () => sse(anthropicMessagesWire.text(['ok'], { input: 3, output: 1 }).chunks.join(''));

async function bodyFor(m: Model, reasoning: ResolvedReasoning | undefined, options: Record<string, unknown> = {}) {
  server.reply(OK());
  const { message } = await collectStream(
    new AnthropicProvider({ apiKey: 'k', baseURL: server.url }).stream(m, [userMessage('hi')], {
      ...(reasoning ? { reasoning } : {}),
      options: { maxTokens: 4_000, ...options },
    }),
  );
  expect(message.stopReason).toBe('stop');

  const body = server.requests.at(-1)!.body;
  return { thinking: body.thinking, outputConfig: body.output_config, maxTokens: body.max_tokens };
}

describe('AnthropicProvider: request.reasoning', () => {
  it.each<[string, string, ResolvedReasoning, unknown, unknown, number]>([
    // model, case, reasoning → thinking, output_config, max_tokens
    [
      'claude-haiku-4-5',
      'a budget: manual thinking, max_tokens grows by it',
      { requested: 'medium', budgetTokens: 8_000 },
      { type: 'enabled', budget_tokens: 8_000 },
      undefined,
      12_000,
    ],
    [
      'claude-haiku-4-5',
      'off: thinking disabled',
      { requested: 'off', off: true },
      { type: 'disabled' },
      undefined,
      4_000,
    ],
    [
      'claude-opus-4-5',
      'effort and budget: both',
      { requested: 'high', effort: 'high', budgetTokens: 16_000 },
      { type: 'enabled', budget_tokens: 16_000 },
      { effort: 'high' },
      20_000,
    ],
    [
      'claude-opus-4-5',
      'effort alone on a budget model: effort, no thinking',
      { requested: 'low', effort: 'low' },
      undefined,
      { effort: 'low' },
      4_000,
    ],
    [
      'claude-opus-4-6',
      'effort: adaptive thinking at that effort',
      { requested: 'max', effort: 'max' },
      { type: 'adaptive' },
      { effort: 'max' },
      4_000,
    ],
    [
      'claude-sonnet-4-6',
      'minimal is sent as low, the lowest the API takes',
      { requested: 'minimal', effort: 'minimal', clamped: true },
      { type: 'adaptive' },
      { effort: 'low' },
      4_000,
    ],
    [
      'claude-opus-4-5',
      'max without thinking is sent as high (Claude caps effort there)',
      { requested: 'max', effort: 'max' },
      undefined,
      { effort: 'high' },
      4_000,
    ],
    [
      'claude-opus-5',
      'xhigh on Claude 5',
      { requested: 'high', effort: 'xhigh' },
      { type: 'adaptive' },
      { effort: 'xhigh' },
      4_000,
    ],
    [
      'claude-opus-5',
      'a budget on an adaptive-only model: adaptive',
      { requested: { budgetTokens: 5_000 }, budgetTokens: 5_000 },
      { type: 'adaptive' },
      undefined,
      4_000,
    ],
    ['claude-opus-5', 'off on Claude 5', { requested: 'off', off: true }, { type: 'disabled' }, undefined, 4_000],
    [
      'claude-3-haiku-20240307',
      'off on a model that does not reason: nothing sent',
      { requested: 'off', off: true },
      undefined,
      undefined,
      4_000,
    ],
  ])('%s, %s', async (id, _, reasoning, thinking, outputConfig, maxTokens) => {
    const sent = await bodyFor(model(id), reasoning);
    expect(sent).toEqual({ thinking, outputConfig, maxTokens });
  });

  it('no reasoning setting: no thinking field and no effort (the model default), as before', async () => {
    expect(await bodyFor(model('claude-opus-4-6'), undefined)).toEqual({
      thinking: undefined,
      outputConfig: undefined,
      maxTokens: 4_000,
    });
  });

  it('thinkingBudget wins over the run setting, in both directions', async () => {
    // The setting says off; the option asks for a budget: the option is sent.
    expect(
      await bodyFor(model('claude-haiku-4-5'), { requested: 'off', off: true }, { thinkingBudget: 3_000 }),
    ).toEqual({
      thinking: { type: 'enabled', budget_tokens: 3_000 },
      outputConfig: undefined,
      maxTokens: 7_000,
    });
    // The setting asks for effort and a budget; the option's budget replaces both.
    expect(
      await bodyFor(
        model('claude-opus-4-5'),
        { requested: 'max', effort: 'high', budgetTokens: 30_000 },
        { thinkingBudget: 2_000 },
      ),
    ).toEqual({ thinking: { type: 'enabled', budget_tokens: 2_000 }, outputConfig: undefined, maxTokens: 6_000 });
  });

  it("thinking: 'disabled' wins over an effort setting, and 'adaptive' over off", async () => {
    expect(
      await bodyFor(model('claude-opus-4-6'), { requested: 'high', effort: 'high' }, { thinking: 'disabled' }),
    ).toEqual({
      thinking: { type: 'disabled' },
      outputConfig: undefined,
      maxTokens: 4_000,
    });
    expect(await bodyFor(model('claude-opus-4-6'), { requested: 'off', off: true }, { thinking: 'adaptive' })).toEqual({
      thinking: { type: 'adaptive' },
      outputConfig: undefined,
      maxTokens: 4_000,
    });
  });

  it('effort and structured output share output_config', async () => {
    server.reply(OK());
    await collectStream(
      new AnthropicProvider({ apiKey: 'k', baseURL: server.url }).stream(
        model('claude-opus-4-6'),
        [userMessage('hi')],
        {
          reasoning: { requested: 'low', effort: 'low' },
          output: { name: 'a', schema: { type: 'object', properties: {} }, strict: true },
        },
      ),
    );
    expect(server.requests.at(-1)!.body.output_config).toEqual({
      effort: 'low',
      format: { type: 'json_schema', schema: { type: 'object', properties: {}, additionalProperties: false } },
    });
  });
});
