/**
 * The one reasoning knob, resolved per model: a run's `reasoning` setting as one model takes it.
 * @module
 */
import { lookupModel } from '../types/model-lookup.js';
import type {
  Model,
  ModelThinking,
  ReasoningEffort,
  ReasoningLevel,
  ReasoningSetting,
  ResolvedReasoning,
} from '../types/model.js';

/** Each effort's place on one scale, lowest first (`xhigh` sits between `high` and `max`). */
const RANK: Readonly<Record<ReasoningEffort, number>> = { minimal: 0, low: 1, medium: 2, high: 3, xhigh: 4, max: 5 };

/**
 * The thinking-token budget each level stands for, the same on every model that takes a budget (clamped into its
 * range; `max` is the model's own maximum, this figure only where the range is not known). Also the scale a
 * `{ budgetTokens }` setting is read on for a model that takes only effort levels.
 */
export const REASONING_BUDGETS: Readonly<Record<Exclude<ReasoningLevel, 'off'>, number>> = Object.freeze({
  minimal: 1_024,
  low: 4_096,
  medium: 8_192,
  high: 16_384,
  max: 32_768,
});

const LEVELS = ['minimal', 'low', 'medium', 'high', 'max'] as const;

/**
 * The run's reasoning `setting` as `model` takes it, from the model's facts (its own `reasoning` and `thinking`, else
 * the model table's for its id), or `undefined` when nothing is to be sent. The rules (docs/providers.md,
 * "Reasoning"):
 * - no setting, or a model that does not reason (`reasoning: false`): `undefined` — a level asked of such a model is
 *   not refused, the attempt is sent without thinking;
 * - `off`: `{ off: true }` when the model `canDisable`, else its lowest level (effort and/or budget) with `clamped`;
 * - a level on a model with effort levels: the same effort when it has it, else the nearest (`max` its highest,
 *   `minimal` its lowest, a tie the higher one), `clamped` when not exact;
 * - a level on a model with a budget range: {@link REASONING_BUDGETS} for the level (`max`: the range's maximum),
 *   clamped into the range (`clamped` when it had to be). A model with both gets both;
 * - `{ budgetTokens }`: clamped into the model's range; on a model with effort levels only, the effort of the nearest
 *   level on the {@link REASONING_BUDGETS} scale (always `clamped`); `{ budgetTokens: 0 }` resolves as `off`;
 * - a model whose thinking control is not known (not in the table, or a table row without it): the level passed as
 *   the effort of the same name and its {@link REASONING_BUDGETS} figure as the budget (the provider sends what its API
 *   takes); `off` as `{ off: true }`; `{ budgetTokens }` as it is.
 *
 * `requested` is always `setting`. Pure: the same model and setting always give the same result.
 *
 * @example
 * resolveReasoning({ id: 'gemini-3-pro-preview', provider: 'google' }, 'medium')
 * // { requested: 'medium', effort: 'high', clamped: true }   (the model takes low or high)
 */
export function resolveReasoning(model: Model, setting: ReasoningSetting | undefined): ResolvedReasoning | undefined {
  if (setting === undefined) return undefined;
  const known = model.reasoning === undefined || model.thinking === undefined ? lookupModel(model.id) : undefined;
  const reasons = model.reasoning ?? known?.reasoning;
  if (reasons === false) return undefined;
  const thinking = model.thinking ?? known?.thinking;
  const level: ReasoningLevel | number = typeof setting === 'string' ? setting : setting.budgetTokens;
  if (thinking === undefined) return unknownControl(setting, level);
  if (level === 'off' || level === 0) return resolveOff(setting, thinking);
  if (typeof level === 'number') return resolveBudget(setting, level, thinking);
  return resolveLevel(setting, level, thinking);
}

/** A model whose thinking control is not known: the setting passed on, by name and by the default budget. */
function unknownControl(requested: ReasoningSetting, level: ReasoningLevel | number): ResolvedReasoning {
  if (level === 'off' || level === 0) return { requested, off: true };
  if (typeof level === 'number') return { requested, budgetTokens: level };
  return { requested, effort: level, budgetTokens: REASONING_BUDGETS[level] };
}

function resolveOff(requested: ReasoningSetting, thinking: ModelThinking): ResolvedReasoning {
  if (thinking.canDisable) return { requested, off: true };
  // A model that always thinks: the least it can do.
  return {
    requested,
    ...(thinking.efforts?.length ? { effort: thinking.efforts[0] } : {}),
    ...(thinking.budget !== undefined ? { budgetTokens: thinking.budget.min } : {}),
    clamped: true,
  };
}

function resolveLevel(
  requested: ReasoningSetting,
  level: Exclude<ReasoningLevel, 'off'>,
  thinking: ModelThinking,
): ResolvedReasoning {
  let clamped = false;
  let effort: ReasoningEffort | undefined;
  let budgetTokens: number | undefined;
  if (thinking.efforts?.length) {
    effort = nearestEffort(level, thinking.efforts);
    if (effort !== level) clamped = true;
  }
  if (thinking.budget !== undefined) {
    const { min, max } = thinking.budget;
    const wanted = level === 'max' ? max : REASONING_BUDGETS[level];
    budgetTokens = Math.min(max, Math.max(min, wanted));
    if (budgetTokens !== wanted) clamped = true;
  }
  // A model that can only be on or off: thinking on, at its own depth, which is not the level asked for.
  if (effort === undefined && budgetTokens === undefined) clamped = true;
  return {
    requested,
    ...(effort !== undefined ? { effort } : {}),
    ...(budgetTokens !== undefined ? { budgetTokens } : {}),
    ...(clamped ? { clamped: true as const } : {}),
  };
}

function resolveBudget(requested: ReasoningSetting, tokens: number, thinking: ModelThinking): ResolvedReasoning {
  if (thinking.budget !== undefined) {
    const { min, max } = thinking.budget;
    const budgetTokens = Math.min(max, Math.max(min, tokens));
    return { requested, budgetTokens, ...(budgetTokens !== tokens ? { clamped: true as const } : {}) };
  }
  if (thinking.efforts?.length) {
    return { requested, effort: nearestEffort(levelOfBudget(tokens), thinking.efforts), clamped: true };
  }
  return { requested, clamped: true };
}

/** The level whose {@link REASONING_BUDGETS} figure is nearest `tokens` on a log scale (each level doubles or so). */
function levelOfBudget(tokens: number): Exclude<ReasoningLevel, 'off'> {
  let best: Exclude<ReasoningLevel, 'off'> = 'minimal';
  let bestDistance = Infinity;
  for (const level of LEVELS) {
    const distance = Math.abs(Math.log2(Math.max(tokens, 1)) - Math.log2(REASONING_BUDGETS[level]));
    // `<=`: a budget halfway between two levels takes the higher one, as a level between two efforts does.
    if (distance <= bestDistance) [best, bestDistance] = [level, distance];
  }
  return best;
}

/** The effort of `efforts` nearest `level`: `max` is the highest, `minimal` the lowest, a tie the higher one. */
function nearestEffort(level: Exclude<ReasoningLevel, 'off'>, efforts: readonly ReasoningEffort[]): ReasoningEffort {
  if (level === 'max') return highest(efforts);
  if (level === 'minimal') return lowest(efforts);
  const want = RANK[level];
  let best = efforts[0]!;
  for (const effort of efforts) {
    const distance = Math.abs(RANK[effort] - want);
    const bestDistance = Math.abs(RANK[best] - want);
    if (distance < bestDistance || (distance === bestDistance && RANK[effort] > RANK[best])) best = effort;
  }
  return best;
}

function highest(efforts: readonly ReasoningEffort[]): ReasoningEffort {
  return efforts.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), efforts[0]!);
}

function lowest(efforts: readonly ReasoningEffort[]): ReasoningEffort {
  return efforts.reduce((a, b) => (RANK[b] < RANK[a] ? b : a), efforts[0]!);
}

/** Why `setting` is not a {@link ReasoningSetting}, or `undefined` when it is one. */
export function reasoningSettingProblem(setting: unknown): string | undefined {
  if (typeof setting === 'string') {
    return setting === 'off' || (LEVELS as readonly string[]).includes(setting)
      ? undefined
      : `must be "off", "minimal", "low", "medium", "high", "max" or { budgetTokens }, got ${JSON.stringify(setting)}`;
  }
  if (typeof setting !== 'object' || setting === null || Array.isArray(setting)) {
    return 'must be a reasoning level or { budgetTokens }';
  }
  const { budgetTokens } = setting as { budgetTokens?: unknown };
  if (typeof budgetTokens !== 'number' || !Number.isSafeInteger(budgetTokens) || budgetTokens < 0) {
    return '`budgetTokens` must be a non-negative integer';
  }
  return undefined;
}
