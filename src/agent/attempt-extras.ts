/**
 * What each attempt of a model call adds to its request, resolved for the attempt's model: the reasoning setting as
 * the model takes it, and how the typed answer is asked for. Computed per attempt, so a fallback to another model
 * resolves both again.
 * @module
 */
import { resolveReasoning } from '../providers/reasoning.js';
import type { ResolvedReasoning, Model } from '../types/model.js';
import type { AttemptOutput, NativeOutputRequest } from '../types/output.js';
import type { ToolDefinition } from '../types/provider.js';
import type { RunState } from './run-state.js';

/** The request fields of one attempt beyond the messages, resolved for its model. */
export interface AttemptExtras {
  /** `StreamRequest.reasoning` and `model_attempt.reasoning`. */
  readonly reasoning?: ResolvedReasoning | undefined;
  /** `model_attempt.output`. */
  readonly output?: AttemptOutput | undefined;
  /** `StreamRequest.output`, in `native` mode. */
  readonly native?: NativeOutputRequest | undefined;
  /** The final tool offered in `tool` mode (after the run's tools). */
  readonly finalTool?: ToolDefinition | undefined;
  /** Text appended to the system prompt in `prompt` mode. */
  readonly instructions?: string | undefined;
  /** Why the model cannot take the output as configured (the attempt is refused: `model_incapable`). */
  readonly refused?: string | undefined;
}

/** The extras of an attempt that adds nothing (compared by identity on the per-turn path). */
export const NO_EXTRAS: AttemptExtras = Object.freeze({});

/** The extras of an attempt on `model` in `run` (nothing for a run without `reasoning` or `output`). */
export function attemptExtras(run: RunState, model: Model): AttemptExtras {
  if (run.reasoning === undefined && run.output === undefined) return NO_EXTRAS;
  const reasoning = resolveReasoning(model, run.reasoning);
  // Filled by the output work (issue 30): outputPlan(…).
  return reasoning === undefined ? NO_EXTRAS : { reasoning };
}
