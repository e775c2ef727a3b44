/**
 * A run's resolved reasoning as the Bedrock Converse model families take it.
 * @module
 */
import type { Model, ReasoningEffort, ResolvedReasoning } from '../types/model.js';
import { claudeEffort, claudeThinking, type ClaudeEffort } from './anthropic-thinking.js';

/** What a resolved reasoning adds to a Converse request. */
export interface BedrockReasoning {
  /** Merged into `additionalModelRequestFields` (model-specific fields). */
  readonly fields?: Readonly<Record<string, unknown>> | undefined;
  /** `outputConfig.effort` (Claude). */
  readonly effort?: ClaudeEffort | undefined;
  /** A manual thinking budget: `inferenceConfig.maxTokens` grows by it, as thinking counts against it. */
  readonly budget?: number | undefined;
}

/**
 * The request fields that already say how a model reasons: any of them in `additionalModelRequestFields` (the
 * provider's or the request's) and the run's reasoning setting is not read, as a provider-specific option wins.
 */
export const REASONING_FIELDS = ['thinking', 'reasoningConfig', 'reasoning_effort', 'output_config'] as const;

/**
 * The fields of a run's resolved reasoning, per family:
 *
 * - **Claude**: `thinking` as on the Messages API (`disabled`; `enabled` with `budget_tokens`; `adaptive` on Claude
 *   5 and on the models that take an effort but no budget) in `additionalModelRequestFields`, and the effort as
 *   Converse's own `outputConfig.effort`;
 * - **Nova 2**: `reasoningConfig: { type: 'enabled', maxReasoningEffort }` (`low`, `medium`, `high`: `minimal` is
 *   sent as `low`, `xhigh` and `max` as `high`; a budget alone picks the level: up to 4,096 tokens `low`, up to
 *   16,384 `medium`, else `high`); `off` sends nothing, as Nova's extended thinking is off unless enabled;
 * - **gpt-oss**: `reasoning_effort` (`low`, `medium`, `high`, clamped the same way); it cannot stop reasoning;
 * - every other family: nothing (DeepSeek R1 always reasons; the others document no switch through Converse).
 */
export function bedrockReasoning(
  model: Model,
  family: 'claude' | 'nova' | 'other',
  reasoning: ResolvedReasoning,
): BedrockReasoning {
  if (family === 'claude') {
    const thinking = claudeThinking(model, reasoning);
    const effort =
      !reasoning.off && reasoning.effort !== undefined ? claudeEffort(reasoning.effort, thinking) : undefined;
    return {
      ...(thinking !== undefined ? { fields: { thinking } } : {}),
      ...(effort !== undefined ? { effort } : {}),
      ...(thinking?.type === 'enabled' ? { budget: thinking.budget_tokens } : {}),
    };
  }
  if (reasoning.off) return {};
  const level = threeLevels(reasoning.effort, reasoning.budgetTokens);
  if (level === undefined) return {};
  if (family === 'nova') return { fields: { reasoningConfig: { type: 'enabled', maxReasoningEffort: level } } };
  if (/(^|[.:/])openai\.gpt-oss/.test(model.id)) return { fields: { reasoning_effort: level } };
  return {};
}

function threeLevels(
  effort: ReasoningEffort | undefined,
  budget: number | undefined,
): 'low' | 'medium' | 'high' | undefined {
  if (effort !== undefined) {
    if (effort === 'minimal' || effort === 'low') return 'low';
    return effort === 'medium' ? 'medium' : 'high';
  }
  if (budget === undefined || budget <= 0) return undefined;
  return budget <= 4_096 ? 'low' : budget <= 16_384 ? 'medium' : 'high';
}
