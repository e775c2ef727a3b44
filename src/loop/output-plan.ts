/**
 * A run's `output` made ready once (its options, JSON Schema, strict check, final tool, instructions), and how each
 * attempt's model takes it: the mode, what the request carries, or why the model is refused.
 * @module
 */
import { geminiGeneration } from '../providers/google-refusal.js';
import { lookupModel } from '../types/model-lookup.js';
import type { Model } from '../types/model.js';
import type { AttemptOutput, NativeOutputRequest, OutputMode, OutputSchema, OutputSpec } from '../types/output.js';
import type { JsonSchema, ToolChoice, ToolDefinition } from '../types/provider.js';
import {
  outputJsonSchema,
  outputSchemaOf,
  strictSchemaProblem,
  type StrictSchemaProblem,
} from './output-json-schema.js';

/** The default name of the schema (`OutputOptions.name`) and of the final tool. */
export const DEFAULT_OUTPUT_NAME = 'answer';
/** The final tool's name in `tool` mode when the spec names none. */
export const DEFAULT_FINAL_TOOL = 'final_answer';

/** What an attempt's request carries for the run's `output` (the output part of `OutputAttempt`). */
export interface OutputAttempt {
  /** `model_attempt.output`: the mode, and in `tool` mode the final tool's name. */
  readonly output?: AttemptOutput | undefined;
  /** `StreamRequest.output`, in `native` mode. */
  readonly native?: NativeOutputRequest | undefined;
  /** The final tool offered in `tool` mode (after the run's tools). */
  readonly finalTool?: ToolDefinition | undefined;
  /**
   * The tool choice of an attempt that must end by calling a tool (`required` in `tool` mode), sent when the run and
   * the request give none: a tool choice given explicitly wins.
   */
  readonly toolChoice?: ToolChoice | undefined;
  /** Text appended to the system prompt in `prompt` mode. */
  readonly instructions?: string | undefined;
  /** Why the model cannot take the output as configured (the attempt is refused: `model_incapable`). */
  readonly refused?: string | undefined;
}

/** A run's `output`, made ready: computed once per spec object (a spec is configuration, reused run after run). */
export interface OutputPlan {
  readonly spec: OutputSpec;
  readonly schema: OutputSchema;
  readonly name: string;
  readonly description: string | undefined;
  readonly mode: 'auto' | OutputMode;
  readonly allowWeakerMode: boolean;
  readonly jsonSchema: JsonSchema;
  /** Why the vendors' strict mode cannot take the schema, if it cannot. */
  readonly strictProblem: StrictSchemaProblem | undefined;
  /** The final tool's name (`tool` mode). */
  readonly toolName: string;
  /**
   * Whether the final tool's arguments wrap the answer as `{ value }`: tool arguments are a JSON object, so a schema
   * whose root is not one (an array, a string, a union) is asked for inside one.
   */
  readonly wrapped: boolean;
  /** What each model takes, once known (models are configuration objects). */
  readonly byModel: WeakMap<Model, OutputAttempt>;
  /** The same, for attempts that offer tools (a model may not take native output with tools). */
  readonly byModelWithTools: WeakMap<Model, OutputAttempt>;
}

const plans = new WeakMap<object, OutputPlan>();
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Why `spec` is not a usable `output`, in words to follow "`output` ", or `undefined`: a Standard Schema
 * (`~standard.validate`) that gives a JSON Schema, or `{ schema, name?, description?, mode?, allowWeakerMode? }`.
 */
export function outputSpecProblem(spec: unknown): string | undefined {
  if (typeof spec !== 'object' || spec === null) return `must be a schema or { schema, … }, got ${kind(spec)}`;
  const options = spec as Record<string, unknown>;
  const schema = '~standard' in options ? options : options.schema;
  const standard = (schema as { '~standard'?: Record<string, unknown> } | null | undefined)?.['~standard'];
  if (typeof standard?.validate !== 'function')
    return '~standard' in options || 'schema' in options
      ? 'must be a Standard Schema (with ~standard.validate): a zod 4 schema, or Valibot / ArkType with their adapters'
      : 'must be a schema (zod 4, or any Standard Schema with JSON Schema) or { schema, … }';
  if (!('~standard' in options)) {
    if (options.name !== undefined && (typeof options.name !== 'string' || !NAME.test(options.name)))
      return '.name must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -';
    if (options.description !== undefined && typeof options.description !== 'string')
      return '.description must be a string';
    if (
      options.mode !== undefined &&
      options.mode !== 'auto' &&
      options.mode !== 'native' &&
      options.mode !== 'tool' &&
      options.mode !== 'prompt'
    )
      return '.mode must be "auto", "native", "tool" or "prompt"';
    if (options.allowWeakerMode !== undefined && typeof options.allowWeakerMode !== 'boolean')
      return '.allowWeakerMode must be a boolean';
  }
  try {
    outputJsonSchema(spec as OutputSpec);
  } catch (error) {
    return `gives no JSON Schema: ${(error as Error).message}`;
  }
  return undefined;
}

/** The plan of `spec` (checked by {@link outputSpecProblem} first), made once per spec object. */
export function outputPlanOf(spec: OutputSpec): OutputPlan {
  let plan = plans.get(spec);
  if (plan === undefined) {
    const options = '~standard' in spec ? undefined : spec;
    const jsonSchema = outputJsonSchema(spec);
    plan = {
      spec,
      schema: outputSchemaOf(spec),
      name: options?.name ?? DEFAULT_OUTPUT_NAME,
      description: options?.description,
      mode: options?.mode ?? 'auto',
      allowWeakerMode: options?.allowWeakerMode === true,
      jsonSchema,
      strictProblem: strictSchemaProblem(jsonSchema),
      toolName: options?.name ?? DEFAULT_FINAL_TOOL,
      wrapped: (jsonSchema as { type?: unknown }).type !== 'object',
      byModel: new WeakMap(),
      byModelWithTools: new WeakMap(),
    };
    plans.set(spec, plan);
  }
  return plan;
}

/**
 * The configuration-time check of `plan` on `model`: a model that would be asked natively (`json_schema`, mode `auto`
 * or `native`) for a schema its strict mode cannot express, without `allowWeakerMode`, is a mistake to report now
 * (naming the schema path) rather than a vendor's 400 later. Returns the message, or `undefined`.
 */
export function strictCheck(plan: OutputPlan, model: Model): string | undefined {
  const problem = plan.strictProblem;
  if (problem === undefined || plan.allowWeakerMode || plan.mode === 'tool' || plan.mode === 'prompt') return undefined;
  if (facts(model).structuredOutput !== 'json_schema') return undefined;
  return (
    `the output schema cannot be asked of ${model.id} in strict native mode: at ${problem.path === '' ? 'its root' : problem.path}, ${problem.message}. ` +
    'Fix the schema, or set allowWeakerMode: true to ask for it in a weaker mode'
  );
}

/**
 * The configuration-time check of `plan`'s final tool against the run's tools: a tool of the run with the final tool's
 * name (`final_answer`, or `output.name`) would be shadowed in `tool` mode. Returns the message, or `undefined`.
 */
export function finalToolClash(
  plan: OutputPlan,
  tools: readonly { readonly name: string }[] | undefined,
): string | undefined {
  if (plan.mode === 'native' || plan.mode === 'prompt' || tools === undefined) return undefined;
  if (!tools.some((tool) => tool.name === plan.toolName)) return undefined;
  return `a tool is already named "${plan.toolName}", the final tool of tool mode: give the output another name (output.name)`;
}

/**
 * How an attempt on `model` asks for `plan`'s answer (mode `auto`: the strongest the model has, by its facts or the
 * model table's):
 * - `native` for a model with `structuredOutput: 'json_schema'` when the schema is strict-expressible, or, with
 *   `allowWeakerMode`, non-strict on a vendor that takes that (OpenAI);
 * - else `tool` for a model that calls tools (a final tool the model must call; absent `tools` counts as able);
 * - else `prompt` (the JSON Schema in the system prompt).
 * A fixed `mode` the model cannot take gives `refused` (the attempt is not sent: `model_incapable`, reason `output`).
 */
export function outputExtras(plan: OutputPlan, model: Model, toolsOffered = false): OutputAttempt {
  const cache = toolsOffered ? plan.byModelWithTools : plan.byModel;
  let extras = cache.get(model);
  if (extras === undefined) {
    extras = Object.freeze(planFor(plan, model, toolsOffered));
    cache.set(model, extras);
  }
  return extras;
}

function planFor(plan: OutputPlan, model: Model, toolsOffered: boolean): OutputAttempt {
  const known = facts(model);
  const nativeStrict =
    known.structuredOutput === 'json_schema' && !(toolsOffered && nativeExcludesTools(model, known))
      ? nativeStrictness(plan, known)
      : undefined;
  const canTool = known.tools !== false;
  const mode: OutputMode | undefined =
    plan.mode === 'auto'
      ? nativeStrict !== undefined
        ? 'native'
        : canTool
          ? 'tool'
          : 'prompt'
      : plan.mode === 'native'
        ? nativeStrict !== undefined
          ? 'native'
          : undefined
        : plan.mode === 'tool'
          ? canTool
            ? 'tool'
            : undefined
          : 'prompt';
  if (mode === undefined) return { refused: refusal(plan, model, known) };
  if (mode === 'native') {
    const native: NativeOutputRequest = {
      name: plan.name,
      ...(plan.description !== undefined ? { description: plan.description } : {}),
      schema: plan.jsonSchema,
      strict: nativeStrict!,
    };
    return { output: { mode }, native };
  }
  if (mode === 'tool') {
    const finalTool: ToolDefinition = {
      name: plan.toolName,
      description:
        plan.description ??
        (plan.wrapped
          ? 'Give your final answer as `value`. Call this tool exactly once, when you are done (after any other tools), with the answer.'
          : 'Give your final answer as the arguments of this call. Call this tool exactly once, when you are done (after any other tools), with the answer.'),
      inputSchema: plan.wrapped
        ? { type: 'object', properties: { value: plan.jsonSchema }, required: ['value'], additionalProperties: false }
        : plan.jsonSchema,
    };
    return { output: { mode, toolName: plan.toolName }, finalTool, toolChoice: 'required' };
  }
  return {
    output: { mode },
    instructions: `Answer with only a JSON value that matches this JSON Schema:\n${JSON.stringify(plan.jsonSchema)}`,
  };
}

/** `true`/`false` (the `strict` flag) when the model can be asked natively, `undefined` when it cannot. */
function nativeStrictness(plan: OutputPlan, model: Model): boolean | undefined {
  if (plan.strictProblem === undefined) return true;
  return plan.allowWeakerMode && takesNonStrict(model) ? false : undefined;
}

/** Whether the vendor takes a non-strict JSON Schema (OpenAI's `strict: false`); the others have no such mode. */
function takesNonStrict(model: Model): boolean {
  const vendor = lookupModel(model.id)?.provider ?? model.provider;
  return vendor.startsWith('openai') || model.provider.startsWith('openai');
}

/**
 * Whether the model answers natively only without tools: Gemini before 3 refuses `responseJsonSchema` together with
 * function declarations (400), so a run offering tools asks it with the final tool instead.
 */
function nativeExcludesTools(model: Model, known: Model): boolean {
  if (known.provider !== 'google' && model.provider !== 'google' && !/^(?:models\/)?gemini-/.test(model.id))
    return false;
  const generation = geminiGeneration(model.id);
  return generation === undefined || generation < 3;
}

function refusal(plan: OutputPlan, model: Model, known: Model): string {
  if (plan.mode === 'tool') return `Model ${model.id} cannot call tools, so it cannot take the output in tool mode`;
  if (known.structuredOutput === 'json_schema' && plan.strictProblem === undefined)
    return `Model ${model.id} cannot take native structured output together with tools (Gemini before 3), so it cannot take the output in native mode in a run that offers tools`;
  if (known.structuredOutput !== 'json_schema')
    return `Model ${model.id} has no native structured output (json_schema), so it cannot take the output in native mode`;
  return `Model ${model.id} cannot take the output schema in strict native mode (${plan.strictProblem!.path || 'root'}: ${plan.strictProblem!.message})`;
}

/** The model's own facts over the model table's for its id. */
function facts(model: Model): Model {
  const known = lookupModel(model.id);
  if (known === undefined) return model;
  return {
    ...model,
    tools: model.tools ?? known.tools,
    structuredOutput: model.structuredOutput ?? known.structuredOutput,
  };
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : typeof value;
}
