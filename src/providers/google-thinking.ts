/**
 * Gemini's `thinkingConfig`, from the provider options or a run's resolved reasoning setting.
 * @module
 */
import type { ThinkingConfig } from '@google/genai';
import type { Model, ReasoningEffort, ResolvedReasoning } from '../types/model.js';
import type { StreamOptions } from '../types/provider.js';
import { geminiGeneration } from './google-refusal.js';
import { findModel } from './model-table.js';

/** Gemini's thinking levels (Gemini 3), as `options.thinkingLevel` takes them. */
export type GeminiThinkingLevel = 'minimal' | 'low' | 'medium' | 'high';

const THINKING_LEVELS: readonly string[] = ['minimal', 'low', 'medium', 'high'];

type Level = NonNullable<ThinkingConfig['thinkingLevel']>;

/**
 * The `thinkingConfig` of a request, or `undefined` for none.
 *
 * - `options.thinkingBudget` (tokens; `0` off where the model allows it, `-1` dynamic) and `options.thinkingLevel`
 *   (`'minimal' | 'low' | 'medium' | 'high'`) are sent as given. When either is given, `reasoning` is not used at
 *   all: Gemini refuses a budget and a level together ("You can only set only one of thinking budget and thinking
 *   level"), and the provider-specific option wins.
 * - Otherwise `reasoning` (resolved for this model by the runner) is translated: `off` → `thinkingBudget: 0` (the
 *   budget's minimum on a model that cannot stop thinking; on a model driven by levels its lowest level, `LOW` for a
 *   Gemini 3 the table does not know: Gemini 3 cannot turn thinking off); `effort` → `thinkingLevel` on a
 *   model that takes levels (`xhigh` and `max` → `HIGH`); `budgetTokens` → `thinkingBudget` on one that takes a
 *   budget. With both `effort` and `budgetTokens`, the one the model's table row lists is sent (levels first). An
 *   `effort` alone on a model that takes only a budget becomes a budget across its range (minimal → its minimum,
 *   low ¼, medium ½, high ¾, xhigh/max its maximum).
 * - `includeThoughts` (thought summaries) is `options.includeThoughts` when given, else on for a model known to
 *   reason and whenever a budget above 0 or a level is sent, off when thinking is turned off.
 */
export function geminiThinkingConfig(
  model: Model,
  options: StreamOptions,
  reasoning: ResolvedReasoning | undefined,
): ThinkingConfig | undefined {
  const config: { thinkingBudget?: number; thinkingLevel?: Level; includeThoughts?: boolean } = {};
  const budget = options.thinkingBudget;
  // 0 turns thinking off where the model allows it (Gemini 2.5 Flash), -1 lets the model decide.
  if (typeof budget === 'number' && (budget >= 0 || budget === -1)) config.thinkingBudget = budget;
  const level = options.thinkingLevel;
  if (typeof level === 'string' && THINKING_LEVELS.includes(level)) config.thinkingLevel = level.toUpperCase() as Level;
  if (config.thinkingBudget === undefined && config.thinkingLevel === undefined && reasoning !== undefined) {
    Object.assign(config, fromReasoning(model, reasoning));
  }
  const reasons = model.reasoning ?? findModel(model.id)?.reasoning;
  const include =
    typeof options.includeThoughts === 'boolean'
      ? options.includeThoughts
      : reasoning?.off !== true &&
        ((reasons === true && config.thinkingBudget !== 0) ||
          (config.thinkingBudget !== undefined && config.thinkingBudget !== 0) ||
          config.thinkingLevel !== undefined);
  if (include) config.includeThoughts = true;
  return Object.keys(config).length > 0 ? config : undefined;
}

function fromReasoning(model: Model, reasoning: ResolvedReasoning): { thinkingBudget?: number; thinkingLevel?: Level } {
  const thinking = model.thinking ?? findModel(model.id)?.thinking;
  const levels = (thinking?.efforts ?? []).filter((effort) => THINKING_LEVELS.includes(effort));
  const budget = thinking?.budget;
  // A model the table does not know: Gemini 3 and later take levels, earlier ones a budget.
  const generation = geminiGeneration(model.id);
  const takesLevels = levels.length > 0 || (budget === undefined && generation !== undefined && generation >= 3);
  const { effort, budgetTokens } = reasoning;
  if (reasoning.off === true) {
    // Every Gemini 3 takes LOW; MINIMAL only some (3 Pro answers 400 "Thinking level MINIMAL is not supported").
    if (takesLevels && budget === undefined) return { thinkingLevel: toLevel(levels[0] ?? 'low') };
    // 2.5 Pro cannot stop thinking (a budget of 0 is a 400): its least.
    return { thinkingBudget: thinking?.canDisable === false && budget !== undefined ? budget.min : 0 };
  }
  if (effort !== undefined && takesLevels) return { thinkingLevel: toLevel(effort) };
  if (budgetTokens !== undefined) return { thinkingBudget: Math.max(0, Math.round(budgetTokens)) };
  if (effort !== undefined && budget !== undefined) {
    const share = { minimal: 0, low: 0.25, medium: 0.5, high: 0.75, xhigh: 1, max: 1 }[effort];
    return { thinkingBudget: Math.round(budget.min + (budget.max - budget.min) * share) };
  }
  return effort !== undefined ? { thinkingLevel: toLevel(effort) } : {};
}

function toLevel(effort: ReasoningEffort): Level {
  return (effort === 'xhigh' || effort === 'max' ? 'HIGH' : effort.toUpperCase()) as Level;
}
