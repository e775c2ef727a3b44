// The model table: lookups by id, alias and dated snapshot, and which prices a call is charged with.
import { describe, expect, it } from 'vitest';
import { findModel, modelPricing, MODELS, sameModel, type Model } from 'cubepi';

describe('the model table', () => {
  // Since the table is generated (issue 29) it holds Gemini and Bedrock too, and rows where the output is as large as
  // the window (GPT-4: 8,192 both) or priced as the input (Llama on Bedrock): the bounds below say ≥, not >.
  it('every row is a complete, frozen Model of a known provider with non-negative prices', () => {
    expect(MODELS.length).toBeGreaterThan(150);
    expect(Object.isFrozen(MODELS)).toBe(true);
    expect(new Set(MODELS.map((m) => m.id)).size).toBe(MODELS.length);
    expect(new Set(MODELS.map((m) => m.provider))).toEqual(new Set(['anthropic', 'openai', 'google', 'bedrock']));
    for (const model of MODELS) {
      expect(Object.isFrozen(model), model.id).toBe(true);
      expect(model.contextWindow, model.id).toBeGreaterThanOrEqual(model.maxTokens!);
      expect(model.maxTokens, model.id).toBeGreaterThan(0);
      expect(model.input).toContain('text');
      expect(typeof model.reasoning).toBe('boolean');
      expect(typeof model.tools).toBe('boolean');
      expect(typeof model.parallelTools).toBe('boolean');
      expect([false, 'json_schema', 'json_mode']).toContain(model.structuredOutput);
      expect([false, 'explicit', 'automatic']).toContain(model.promptCaching);
      for (const price of Object.values(model.cost!)) expect(price).toBeGreaterThanOrEqual(0);
      expect(model.cost!.output, model.id).toBeGreaterThanOrEqual(model.cost!.input);
      if (model.thinking !== undefined) {
        expect(model.reasoning, model.id).toBe(true);
        expect(model.thinking.efforts ?? model.thinking.budget, model.id).toBeDefined();
        if (model.thinking.budget) expect(model.thinking.budget.max).toBeLessThan(model.maxTokens!);
      }
    }
  });

  it('finds a model by id, by alias, and by dated snapshot, carrying the id that was asked for', () => {
    expect(findModel('claude-sonnet-5-5')).toMatchObject({ provider: 'anthropic', cost: { input: 2, output: 10 } });
    expect(findModel('claude-sonnet-4-5-20250929')).toMatchObject({
      id: 'claude-sonnet-4-5-20250929',
      name: 'Claude Sonnet 4.5',
    });
    expect(findModel('gpt-4o-2024-08-06')).toMatchObject({
      id: 'gpt-4o-2024-08-06',
      provider: 'openai',
      cost: { input: 2.5 },
    });
    expect(findModel('gpt-5.4-2026-03-05')).toMatchObject({ id: 'gpt-5.4-2026-03-05', name: 'GPT-5.4' });
    expect(findModel('claude-sonnet-4-6')).toBe(MODELS.find((m) => m.id === 'claude-sonnet-4-6'));
    expect(findModel('llama3.1:8b')).toBeUndefined();
    expect(findModel('gpt-4o-mini-2024-07-18')?.name).toBe('GPT-4o mini');
  });

  it('sameModel: an alias and its snapshot are the same model; different models are not', () => {
    expect(sameModel('claude-sonnet-4-5', 'claude-sonnet-4-5-20250929')).toBe(true);
    expect(sameModel('gpt-5', 'gpt-5-2025-08-07')).toBe(true);
    expect(sameModel('my-model-20250101', 'my-model')).toBe(true);
    expect(sameModel('claude-sonnet-4-5', 'claude-opus-4-5')).toBe(false);
    expect(sameModel('gpt-5', 'gpt-5-mini')).toBe(false);
  });

  it('prices a call with the caller’s cost first, then the table by requested id, then by the reported id', () => {
    const custom: Model = {
      id: 'gpt-4o',
      provider: 'openai',
      cost: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    };
    expect(modelPricing(custom)).toBe(custom);
    expect(modelPricing({ id: 'gpt-4o', provider: 'openai' })?.cost?.input).toBe(2.5);
    expect(modelPricing({ id: 'my-alias', provider: 'openai' }, 'gpt-4.1-2025-04-14')?.cost?.input).toBe(2);
    expect(modelPricing({ id: 'local', provider: 'ollama' }, 'llama')).toBeUndefined();
  });
});

describe('the capabilities the table states (generated from the pinned catalog snapshot and the overrides)', () => {
  it('Gemini and Bedrock models are in it, with their input kinds, tools and caching', () => {
    expect(findModel('gemini-2.5-pro')).toMatchObject({
      provider: 'google',
      contextWindow: 1_048_576,
      input: ['text', 'image', 'pdf', 'audio', 'video', 'file'],
      tools: true,
      parallelTools: true,
      structuredOutput: 'json_schema',
      promptCaching: 'automatic',
      cost: { input: 1.25, output: 10 },
    });
    expect(findModel('anthropic.claude-opus-4-7')).toMatchObject({
      provider: 'bedrock',
      input: ['text', 'image', 'pdf', 'file'],
      promptCaching: 'explicit',
      cost: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
    });
    expect(findModel('us.meta.llama3-3-70b-instruct-v1:0')).toMatchObject({
      provider: 'bedrock',
      input: ['text'],
      tools: true,
      parallelTools: false,
    });
    expect(findModel('us.deepseek.r1-v1:0')).toMatchObject({ tools: false, parallelTools: false, reasoning: true });
    expect(findModel('claude-sonnet-4-5')).toMatchObject({ input: ['text', 'image', 'pdf', 'file'], tools: true });
    expect(findModel('o3-mini')?.input).toEqual(['text']);
  });

  it('a Bedrock regional profile is the same model at its own prices', () => {
    const base = findModel('anthropic.claude-opus-4-7')!;
    const au = findModel('au.anthropic.claude-opus-4-7')!;
    expect(au).toMatchObject({
      id: 'au.anthropic.claude-opus-4-7',
      name: base.name,
      contextWindow: base.contextWindow,
    });
    expect(au.cost).toEqual({ input: 5.5, output: 27.5, cacheRead: 0.55, cacheWrite: 6.875 });
    expect(findModel('eu.anthropic.claude-opus-4-7')!.cost).toEqual(base.cost);
    expect(sameModel('au.anthropic.claude-opus-4-7', 'anthropic.claude-opus-4-7')).toBe(true);
    expect(sameModel('eu.anthropic.claude-opus-4-7', 'anthropic.claude-opus-4-8')).toBe(false);
  });

  it('says how each reasoning model is driven: effort levels, a budget range, whether it can be off', () => {
    // Anthropic budgets: at least 1,024 and below max_tokens; adaptive models take efforts.
    expect(findModel('claude-haiku-4-5')!.thinking).toEqual({ budget: { min: 1_024, max: 63_999 }, canDisable: true });
    expect(findModel('claude-opus-4-7')!.thinking).toEqual({
      efforts: ['low', 'medium', 'high', 'xhigh', 'max'],
      canDisable: true,
    });
    // Gemini: 2.5 Pro always thinks (128–32,768); 2.5 Flash can be off (0–24,576); Gemini 3 takes levels only.
    expect(findModel('gemini-2.5-pro')!.thinking).toEqual({ budget: { min: 128, max: 32_768 }, canDisable: false });
    expect(findModel('gemini-2.5-flash')!.thinking).toEqual({ budget: { min: 0, max: 24_576 }, canDisable: true });
    expect(findModel('gemini-3.1-pro-preview')!.thinking).toEqual({ efforts: ['low', 'high'], canDisable: false });
    // OpenAI: efforts; the o-series cannot turn reasoning off.
    expect(findModel('gpt-5')!.thinking).toEqual({ efforts: ['minimal', 'low', 'medium', 'high'], canDisable: true });
    expect(findModel('o4-mini')!.thinking?.canDisable).toBe(false);
    // A model that does not reason has no thinking control.
    expect(findModel('gpt-4.1')).toMatchObject({ reasoning: false });
    expect(findModel('gpt-4.1')!.thinking).toBeUndefined();
  });

  it('the checked-in table is what scripts/generate-models.mjs makes from the pinned snapshot', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { stdout } = await promisify(execFile)('node', ['scripts/generate-models.mjs', '--check']);
    expect(stdout).toMatch(/is up to date \(\d+ models\)/);
  });
});
