/**
 * What each attempt of a model call adds to its request, resolved for the attempt's model: the reasoning setting as
 * the model takes it, and how the typed answer is asked for. Computed per attempt, so a fallback to another model
 * resolves both again.
 * @module
 */
import { resolveReasoning } from '../providers/reasoning.js';
import type { ResolvedReasoning, Model } from '../types/model.js';
import { outputExtras, type OutputAttempt } from './output-plan.js';
import type { RunState } from './run-state.js';

/**
 * The request fields of one attempt beyond the messages, resolved for its model: the output part (see
 * {@link OutputAttempt}: the mode on `model_attempt`, the native request, the final tool and its tool choice, the
 * prompt instructions, or why the model is refused) and the reasoning.
 */
export interface AttemptExtras extends OutputAttempt {
  /** `StreamRequest.reasoning` and `model_attempt.reasoning`. */
  readonly reasoning?: ResolvedReasoning | undefined;
}

/** The extras of an attempt that adds nothing (compared by identity on the per-turn path). */
export const NO_EXTRAS: AttemptExtras = Object.freeze({});

/** The extras of an attempt on `model` in `run` (nothing for a run without `reasoning` or `output`). */
export function attemptExtras(run: RunState, model: Model): AttemptExtras {
  if (run.reasoning === undefined && run.output === undefined) return NO_EXTRAS;
  const output = run.outputPlan === undefined ? NO_EXTRAS : outputExtras(run.outputPlan, model, run.tools.length > 0);
  const reasoning = resolveReasoning(model, run.reasoning);
  return reasoning === undefined ? output : { ...output, reasoning };
}
