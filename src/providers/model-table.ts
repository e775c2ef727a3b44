/**
 * The current Anthropic and OpenAI models: prices, limits and capabilities. Plain data; loads no SDK.
 * @module
 */
import type { Model, ModelCost } from '../types/model.js';

type Input = Model['input'];
const TEXT_IMAGE: Input = Object.freeze(['text', 'image'] as const);

/** One row: the canonical id first, then other names the API accepts for the same model. */
function row(
  ids: readonly [string, ...string[]],
  provider: 'anthropic' | 'openai',
  name: string,
  facts: { contextWindow: number; maxTokens: number; reasoning: boolean; input: Input; cost: ModelCost },
): { model: Model; aliases: readonly string[] } {
  const [id, ...aliases] = ids;
  const model: Model = Object.freeze({ id, provider, name, ...facts, cost: Object.freeze({ ...facts.cost }) });
  return { model, aliases };
}

// US dollars per million tokens, from the vendors' model and pricing pages (read November 2026). Anthropic's
// `cacheWrite` is the 5-minute rate: 1-hour breakpoints (`cacheRetention: 'long'`) are billed higher, and Haiku 5.5
// bills prompts over 100k tokens at a higher band; neither is modelled here. OpenAI caches by itself: reads are billed,
// writes cost nothing.
const anthropic = (input: number, output: number, cacheRead: number, cacheWrite: number): ModelCost => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});
const openai = (input: number, output: number, cacheRead: number): ModelCost => ({
  input,
  output,
  cacheRead,
  cacheWrite: 0,
});

const ROWS = [
  row(['claude-fable-5-1'], 'anthropic', 'Claude Fable 5.1', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(10, 50, 0.25, 12.5),
  }),
  row(['claude-opus-5-5'], 'anthropic', 'Claude Opus 5.5', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(4, 20, 0.2, 5),
  }),
  row(['claude-sonnet-5-5'], 'anthropic', 'Claude Sonnet 5.5', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(2, 10, 0.1, 2.5),
  }),
  row(['claude-haiku-5-5'], 'anthropic', 'Claude Haiku 5.5', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(0.1, 0.5, 0.01, 0.125),
  }),
  row(['claude-fable-5'], 'anthropic', 'Claude Fable 5', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(10, 50, 1, 12.5),
  }),
  row(['claude-opus-5'], 'anthropic', 'Claude Opus 5', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(5, 25, 0.5, 6.25),
  }),
  row(['claude-sonnet-5'], 'anthropic', 'Claude Sonnet 5', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(2, 10, 0.2, 2.5),
  }),
  row(['claude-opus-4-8'], 'anthropic', 'Claude Opus 4.8', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(5, 25, 0.5, 6.25),
  }),
  row(['claude-opus-4-7'], 'anthropic', 'Claude Opus 4.7', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(5, 25, 0.5, 6.25),
  }),
  row(['claude-opus-4-6'], 'anthropic', 'Claude Opus 4.6', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(5, 25, 0.5, 6.25),
  }),
  row(['claude-sonnet-4-6'], 'anthropic', 'Claude Sonnet 4.6', {
    contextWindow: 1_000_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(3, 15, 0.3, 3.75),
  }),
  row(['claude-opus-4-5', 'claude-opus-4-5-20251101'], 'anthropic', 'Claude Opus 4.5', {
    contextWindow: 200_000,
    maxTokens: 64_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(5, 25, 0.5, 6.25),
  }),
  row(['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929'], 'anthropic', 'Claude Sonnet 4.5', {
    contextWindow: 200_000,
    maxTokens: 64_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(3, 15, 0.3, 3.75),
  }),
  row(['claude-haiku-4-5', 'claude-haiku-4-5-20251001'], 'anthropic', 'Claude Haiku 4.5', {
    contextWindow: 200_000,
    maxTokens: 64_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: anthropic(1, 5, 0.1, 1.25),
  }),
  row(['gpt-5.5'], 'openai', 'GPT-5.5', {
    contextWindow: 1_050_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(5, 30, 0.5),
  }),
  row(['gpt-5.4'], 'openai', 'GPT-5.4', {
    contextWindow: 1_050_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(2.5, 15, 0.25),
  }),
  row(['gpt-5.4-mini'], 'openai', 'GPT-5.4 mini', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(0.75, 4.5, 0.075),
  }),
  row(['gpt-5.4-nano'], 'openai', 'GPT-5.4 nano', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(0.2, 1.25, 0.02),
  }),
  row(['gpt-5.2'], 'openai', 'GPT-5.2', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(1.75, 14, 0.175),
  }),
  row(['gpt-5.1'], 'openai', 'GPT-5.1', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(1.25, 10, 0.125),
  }),
  row(['gpt-5.1-codex-max'], 'openai', 'GPT-5.1 Codex Max', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(1.25, 10, 0.125),
  }),
  row(['gpt-5'], 'openai', 'GPT-5', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(1.25, 10, 0.125),
  }),
  row(['gpt-5-mini'], 'openai', 'GPT-5 mini', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(0.25, 2, 0.025),
  }),
  row(['gpt-5-nano'], 'openai', 'GPT-5 nano', {
    contextWindow: 400_000,
    maxTokens: 128_000,
    reasoning: true,
    input: TEXT_IMAGE,
    cost: openai(0.05, 0.4, 0.005),
  }),
  row(['gpt-4.1'], 'openai', 'GPT-4.1', {
    contextWindow: 1_047_576,
    maxTokens: 32_768,
    reasoning: false,
    input: TEXT_IMAGE,
    cost: openai(2, 8, 0.5),
  }),
  row(['gpt-4.1-mini'], 'openai', 'GPT-4.1 mini', {
    contextWindow: 1_047_576,
    maxTokens: 32_768,
    reasoning: false,
    input: TEXT_IMAGE,
    cost: openai(0.4, 1.6, 0.1),
  }),
  row(['gpt-4.1-nano'], 'openai', 'GPT-4.1 nano', {
    contextWindow: 1_047_576,
    maxTokens: 32_768,
    reasoning: false,
    input: TEXT_IMAGE,
    cost: openai(0.1, 0.4, 0.025),
  }),
  row(['gpt-4o'], 'openai', 'GPT-4o', {
    contextWindow: 128_000,
    maxTokens: 16_384,
    reasoning: false,
    input: TEXT_IMAGE,
    cost: openai(2.5, 10, 1.25),
  }),
  row(['gpt-4o-mini'], 'openai', 'GPT-4o mini', {
    contextWindow: 128_000,
    maxTokens: 16_384,
    reasoning: false,
    input: TEXT_IMAGE,
    cost: openai(0.15, 0.6, 0.075),
  }),
];

/**
 * The current Anthropic and OpenAI models, newest families first: `id` (what the API expects), `provider`
 * (`anthropic` or `openai`), `name`, `contextWindow` and `maxTokens` (largest output) in tokens, `reasoning`, `input`
 * kinds and `cost` in US dollars per million tokens. Frozen. Prices change: a `Model` you build yourself (with its own
 * `cost`) always wins over this table.
 */
export const MODELS: readonly Model[] = Object.freeze(ROWS.map((r) => r.model));

const BY_ID = new Map<string, Model>();
for (const { model, aliases } of ROWS) for (const id of [model.id, ...aliases]) BY_ID.set(id, model);

// Dated snapshots: Anthropic `claude-sonnet-4-5-20250929`, OpenAI `gpt-4o-2024-08-06`.
const SNAPSHOT_SUFFIX = /-(\d{8}|\d{4}-\d{2}-\d{2})$/;

/**
 * Looks a model up by the id an API accepts: a canonical id (`claude-sonnet-4-5`, `gpt-4.1`), an alias
 * (`claude-sonnet-4-0`), or a dated snapshot of either (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, found
 * through its family). The result carries the id you asked for, so it can be sent to the API as it is. `undefined`
 * for a model the table does not know: pass your own `Model` (with `cost`, to get usage priced).
 *
 * @example
 * findModel('gpt-4o-2024-08-06') // { id: 'gpt-4o-2024-08-06', provider: 'openai', cost: { input: 2.5, ... }, ... }
 */
export function findModel(id: string): Model | undefined {
  const model = BY_ID.get(id) ?? BY_ID.get(id.replace(SNAPSHOT_SUFFIX, ''));
  if (model === undefined) return undefined;
  return model.id === id ? model : Object.freeze({ ...model, id });
}

/**
 * The prices to use for a call: the caller's `model.cost` when given, else the table's entry for `model.id`, else the
 * table's entry for the precise id the API reported (`reportedModel`), else none (usage then costs 0).
 */
export function modelPricing(model: Model, reportedModel?: string): Pick<Model, 'cost'> | undefined {
  if (model.cost !== undefined) return model;
  return findModel(model.id) ?? (reportedModel === undefined ? undefined : findModel(reportedModel));
}

/**
 * Whether two model ids name the same model: an alias and its dated snapshot do (`claude-sonnet-4-5` and
 * `claude-sonnet-4-5-20250929`, `gpt-4o` and `gpt-4o-2024-08-06`), whether or not the table knows the model.
 */
export function sameModel(a: string, b: string): boolean {
  return a === b || canonicalId(a) === canonicalId(b);
}

function canonicalId(id: string): string {
  const bare = id.replace(SNAPSHOT_SUFFIX, '');
  return (BY_ID.get(id) ?? BY_ID.get(bare))?.id ?? bare;
}
