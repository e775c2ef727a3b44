/**
 * A run's resolved reasoning as Claude takes it, on the Messages API and on Bedrock Converse alike: the `thinking`
 * field and the effort level. Loads no SDK.
 * @module
 */
import type { Model, ReasoningEffort, ResolvedReasoning } from '../types/model.js';
import { findModel } from './model-table.js';

/** Claude's `thinking` request field (the Messages API's, which Bedrock passes through). */
export type ClaudeThinking =
  | { readonly type: 'enabled'; readonly budget_tokens: number }
  | { readonly type: 'adaptive' }
  | { readonly type: 'disabled' };

/** The effort levels Claude takes (`output_config.effort`, Bedrock `outputConfig.effort`). */
export type ClaudeEffort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';

// Claude 5 models think adaptively and answer 400 to manual `{ type: 'enabled', budget_tokens }` thinking. Bedrock
// ids carry a prefix (`us.anthropic.claude-opus-5-…`).
const ADAPTIVE_ONLY = /(^|\.)claude-(opus|sonnet|haiku|fable|mythos)-5(\b|-)/;

/** Whether a Claude model only thinks adaptively (Claude 5): it takes no thinking budget. */
export function adaptiveOnly(modelId: string): boolean {
  return ADAPTIVE_ONLY.test(modelId);
}

/**
 * The `thinking` field for a run's resolved reasoning: `off` disables thinking (left out for a model known not to
 * reason, which takes no thinking field); a budget enables manual thinking (adaptive on Claude 5, which takes no
 * budget); an effort alone asks for adaptive thinking on a model that takes no budget (Opus 4.6 on, by the model
 * table), and nothing on one that does (Opus 4.5: the effort applies without thinking). `undefined`: send none.
 */
export function claudeThinking(model: Model, reasoning: ResolvedReasoning): ClaudeThinking | undefined {
  const known = findModel(model.id);
  if (reasoning.off) return (model.reasoning ?? known?.reasoning) === false ? undefined : { type: 'disabled' };
  const budget = reasoning.budgetTokens ?? 0;
  if (budget > 0) return adaptiveOnly(model.id) ? { type: 'adaptive' } : { type: 'enabled', budget_tokens: budget };
  if (reasoning.effort === undefined) return undefined;
  const takesBudget = (model.thinking ?? known?.thinking)?.budget !== undefined;
  return takesBudget ? undefined : { type: 'adaptive' };
}

/**
 * A cubepi effort level as Claude takes it (`low` … `max`; `minimal`, below the API's lowest, is sent as `low`).
 * Without thinking (`thinking` undefined or disabled) Claude caps effort at `high` and answers 400 to `xhigh` or
 * `max`: those are sent as `high` then.
 */
export function claudeEffort(effort: ReasoningEffort, thinking: ClaudeThinking | undefined): ClaudeEffort {
  if (effort === 'minimal') return 'low';
  const thinks = thinking !== undefined && thinking.type !== 'disabled';
  return !thinks && (effort === 'xhigh' || effort === 'max') ? 'high' : effort;
}
