// The run's reasoning setting (a ResolvedReasoning) on BedrockProvider, through the real AWS SDK client against the
// local HTTP/2 server: Claude's `thinking` and `outputConfig.effort`, Nova 2's `reasoningConfig`, gpt-oss's
// `reasoning_effort`, and the provider-specific options winning over the setting.
import { describe, expect, it } from 'vitest';
import { findModel, userMessage, type Model, type ResolvedReasoning } from 'cubepi';
import { answer, useBedrockServer } from './bedrock-native.js';
import { collectStream } from './stream-harness.js';

const { server, provider } = useBedrockServer();
const model = (id: string): Model => findModel(id) ?? { id, provider: 'bedrock' };

async function sent(
  m: Model,
  reasoning: ResolvedReasoning | undefined,
  options: Record<string, unknown> = {},
  providerFields?: Record<string, unknown>,
) {
  server().reply(answer('ok'));
  const { message } = await collectStream(
    provider(providerFields ? { additionalModelRequestFields: providerFields } : {}).stream(m, [userMessage('hi')], {
      ...(reasoning ? { reasoning } : {}),
      options: { maxTokens: 2_000, ...options },
    }),
  );
  expect(message.stopReason).toBe('stop');
  const body = server().requests.at(-1)!.body;
  return {
    fields: body.additionalModelRequestFields,
    outputConfig: body.outputConfig,
    maxTokens: body.inferenceConfig?.maxTokens,
  };
}

const HAIKU = 'global.anthropic.claude-haiku-4-5-20251001-v1:0';
const OPUS_46 = 'global.anthropic.claude-opus-4-6-v1';
const OPUS_5 = 'anthropic.claude-opus-5';
const NOVA_2 = 'global.amazon.nova-2-lite-v1:0';
const GPT_OSS = 'openai.gpt-oss-120b-1:0';
const LLAMA = 'meta.llama3-3-70b-instruct-v1:0';

describe('BedrockProvider: request.reasoning', () => {
  it.each<[string, string, ResolvedReasoning, unknown, unknown, number]>([
    [
      HAIKU,
      'a budget: manual thinking, maxTokens grows by it',
      { requested: 'medium', budgetTokens: 6_000 },
      { thinking: { type: 'enabled', budget_tokens: 6_000 } },
      undefined,
      8_000,
    ],
    [
      HAIKU,
      'off: thinking disabled',
      { requested: 'off', off: true },
      { thinking: { type: 'disabled' } },
      undefined,
      2_000,
    ],
    [
      OPUS_46,
      'an effort: adaptive thinking and outputConfig.effort',
      { requested: 'high', effort: 'high' },
      { thinking: { type: 'adaptive' } },
      { effort: 'high' },
      2_000,
    ],
    [
      OPUS_5,
      'a budget on Claude 5: adaptive, no growth',
      { requested: { budgetTokens: 9_000 }, budgetTokens: 9_000 },
      { thinking: { type: 'adaptive' } },
      undefined,
      2_000,
    ],
    [
      NOVA_2,
      'Nova 2, an effort: reasoningConfig',
      { requested: 'medium', effort: 'medium' },
      { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'medium' } },
      undefined,
      2_000,
    ],
    [
      NOVA_2,
      'Nova 2, max is sent as high',
      { requested: 'max', effort: 'max' },
      { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'high' } },
      undefined,
      2_000,
    ],
    [
      NOVA_2,
      'Nova 2, a budget alone picks the level',
      { requested: { budgetTokens: 2_000 }, budgetTokens: 2_000 },
      { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'low' } },
      undefined,
      2_000,
    ],
    [
      NOVA_2,
      'Nova 2, off: nothing (its thinking is off by default)',
      { requested: 'off', off: true },
      undefined,
      undefined,
      2_000,
    ],
    [
      GPT_OSS,
      'gpt-oss: reasoning_effort',
      { requested: 'minimal', effort: 'minimal' },
      { reasoning_effort: 'low' },
      undefined,
      2_000,
    ],
    [LLAMA, 'another family: nothing', { requested: 'high', effort: 'high' }, undefined, undefined, 2_000],
  ])('%s, %s', async (id, _, reasoning, fields, outputConfig, maxTokens) => {
    expect(await sent(model(id), reasoning)).toEqual({ fields, outputConfig, maxTokens });
  });

  it('thinkingBudget wins over the setting, in both directions', async () => {
    expect(await sent(model(HAIKU), { requested: 'off', off: true }, { thinkingBudget: 3_000 })).toEqual({
      fields: { thinking: { type: 'enabled', budget_tokens: 3_000 } },
      outputConfig: undefined,
      maxTokens: 5_000,
    });
    expect(await sent(model(OPUS_46), { requested: 'high', effort: 'max' }, { thinkingBudget: 1_500 })).toEqual({
      fields: { thinking: { type: 'enabled', budget_tokens: 1_500 } },
      outputConfig: undefined,
      maxTokens: 3_500,
    });
  });

  it('a reasoning field in additionalModelRequestFields (request or provider) wins over the setting', async () => {
    const own = { reasoningConfig: { type: 'enabled', maxReasoningEffort: 'high' } };
    expect(
      await sent(model(NOVA_2), { requested: 'low', effort: 'low' }, { additionalModelRequestFields: own }),
    ).toEqual({
      fields: own,
      outputConfig: undefined,
      maxTokens: 2_000,
    });
    const disabled = { thinking: { type: 'disabled' } };
    expect(await sent(model(OPUS_46), { requested: 'max', effort: 'max' }, {}, disabled)).toEqual({
      fields: disabled,
      outputConfig: undefined,
      maxTokens: 2_000,
    });
  });
});
