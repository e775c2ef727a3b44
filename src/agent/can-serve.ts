/**
 * Whether a model can take a request: the public predicate over the same rules the loop applies before each attempt.
 * @module
 */
import { modelIncapability, type CapabilityRequest } from '../middleware/model-incapability.js';
import { ConfigurationError } from '../types/errors.js';
import type { Model, ModelIncapability } from '../types/model.js';
import type { OutputSpec } from '../types/output.js';
import { outputExtras, outputPlanOf, outputSpecProblem } from '../loop/output-plan.js';

/**
 * What {@link canServe} checks: a request's messages, system prompt, tools and options (a `ModelRequest` is one), and
 * the run's `output` when it asks for a typed answer (a `ModelRequest` does not carry it: pass the run's).
 */
export interface ServeRequest extends CapabilityRequest {
  /** The run's `output` (`RunOptions.output`): checked in the mode it asks for, as each attempt's model takes it. */
  readonly output?: OutputSpec | undefined;
}

/**
 * Why `model` cannot take `request`, or `undefined` when it can — exactly what the loop refuses an attempt for (the
 * attempt's `model_attempt.incapable`), in its order: the `output` first (a fixed `mode` the model cannot take:
 * `native` without `structuredOutput: 'json_schema'` or a schema its strict mode cannot express, `tool` for a model
 * with `tools: false`; mode `auto` always finds one), then {@link modelIncapability} (tools, thinking, input kinds of
 * image and file blocks, the context window by the token estimate with files counted). Facts come from the model,
 * else the model table; a fact neither states is not checked. A malformed `output` is a `ConfigurationError`.
 *
 * @example
 * servingRefusal({ id: 'llama', provider: 'ollama', tools: false }, { messages, output: { schema, mode: 'tool' } })
 * // { reason: 'output', message: 'Model llama cannot call tools, so it cannot take the output in tool mode' }
 */
export function servingRefusal(model: Model, request: ServeRequest): ModelIncapability | undefined {
  const { output } = request;
  if (output !== undefined) {
    const problem = outputSpecProblem(output);
    if (problem !== undefined) throw new ConfigurationError(`canServe: output ${problem}`);
    // The same rule (and cache) as each attempt's `attemptExtras`: the final tool is not one of the request's tools.
    const refused = outputExtras(outputPlanOf(output), model, (request.tools?.length ?? 0) > 0).refused;
    if (refused !== undefined) return { reason: 'output', message: refused };
  }
  return modelIncapability(model, request);
}

/**
 * Whether `model` can take `request`: {@link servingRefusal} finds nothing it lacks. `fallback` skips the targets it
 * rejects (the loop does not send them the request: their attempt carries the reason and the call moves on).
 *
 * @example
 * const able = targets.filter((t) => canServe(t.model, { ...request, output: runOutput }));
 */
export function canServe(model: Model, request: ServeRequest): boolean {
  return servingRefusal(model, request) === undefined;
}
