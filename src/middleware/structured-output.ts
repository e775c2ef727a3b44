/**
 * Validating the final answer against a schema.
 * @module
 */
import { z } from 'zod';
import { ConfigurationError } from '../types/errors.js';
import { textOf, userMessage, type AssistantMessage, type Message } from '../types/messages.js';
import { zodSchemaProblem } from '../types/zod-schema-problem.js';
import type { HookContext } from './hook-context.js';
import type { Middleware, TurnAction } from './types.js';

/** Options of {@link StructuredOutput}. */
export interface StructuredOutputOptions {
  /** How many times the model is asked to correct an invalid answer (default 2). */
  readonly maxRetries?: number | undefined;
  /** Append the JSON Schema to the system prompt (default true). */
  readonly instructions?: boolean | undefined;
  readonly name?: string | undefined;
}

/** The metadata key the parsed value is stored under on the final assistant message. */
export const STRUCTURED_OUTPUT_KEY = 'structuredOutput';
/** The metadata key of the last validation failure, when the retries ran out. */
export const STRUCTURED_OUTPUT_ERROR_KEY = 'structuredOutputError';

/**
 * @deprecated Use `output` on the run instead (docs/output.md): the runner asks each model for the answer in the
 * strongest mode it has (native structured output, a final tool, or the prompt), validates it, owns the retry budget
 * (`outputRetries`), and `prompt()` resolves to the typed value. Migration:
 * `new Agent({ middleware: [new StructuredOutput(schema, { maxRetries: 2 })] })` + `output.valueOf(await agent.prompt(input))`
 * becomes `await agent.prompt(input, { output: schema, outputRetries: 2 })` (or `output` as an Agent option). Kept,
 * unchanged, for code written against it; it will be removed in a later minor version. Its budget (`maxRetries`)
 * stays its own and does not read the run's `outputRetries` (seed 002 §9.5 puts the budget with the run: that is what
 * `output` does): reading it would change what existing programs that set `outputRetries` for an `output` run do
 * with this middleware, which this deprecated path promises not to.
 *
 * Makes the final answer a value of `schema`:
 * - `transformSystemPrompt` tells the model the JSON Schema to answer with (unless `instructions: false`);
 * - `afterModelResponse`, on a final answer (no tool calls), parses its text as JSON (a ```json fence is accepted) and
 *   validates it. Valid: the parsed value is stored on the message (`metadata.structuredOutput`; read it typed with
 *   {@link StructuredOutput.valueOf}). Invalid: the model is asked again (`loop_to_model`, with the validation errors
 *   injected as a user message), at most `maxRetries` times per run; then the answer stands, with
 *   `metadata.structuredOutputError` saying why it is not valid.
 *
 * Put it after middlewares whose decisions it should override, and before ones that must see its result: the last
 * returned decision wins.
 *
 * @example
 * const output = new StructuredOutput(z.object({ city: z.string(), celsius: z.number() }));
 * const agent = new Agent({ provider, model, middleware: [output] });
 * const value = output.valueOf(await agent.prompt('Weather in Oslo, as JSON')); // { city, celsius } | undefined
 */
export class StructuredOutput<TSchema extends z.ZodType> implements Middleware {
  readonly name: string;
  readonly maxRetries: number;
  private readonly instructions: string | undefined;
  // Keyed by the run's signal: retries are counted per run, and vanish with it.
  private readonly retries = new WeakMap<AbortSignal, number>();

  constructor(
    readonly schema: TSchema,
    options: StructuredOutputOptions = {},
  ) {
    const problem = zodSchemaProblem(schema);
    if (problem !== undefined)
      throw new ConfigurationError(`StructuredOutput: expected a zod 4 schema, got ${problem}`);
    const maxRetries = options.maxRetries ?? 2;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) {
      throw new ConfigurationError('StructuredOutput: maxRetries must be a non-negative integer');
    }
    this.maxRetries = maxRetries;
    this.name = options.name ?? 'StructuredOutput';
    if (options.instructions !== false) {
      const jsonSchema = z.toJSONSchema(schema, { io: 'output' }) as Record<string, unknown>;
      delete jsonSchema.$schema;
      this.instructions = `Answer with only a JSON value that matches this JSON Schema:\n${JSON.stringify(jsonSchema)}`;
    }
  }

  transformSystemPrompt(prompt: string): string {
    if (this.instructions === undefined) return prompt;
    return prompt === '' ? this.instructions : `${prompt}\n\n${this.instructions}`;
  }

  afterModelResponse(response: AssistantMessage, ctx: HookContext): TurnAction | undefined {
    if (response.content.some((block) => block.type === 'toolCall')) return undefined;
    const outcome = parse(this.schema, textOf(response));
    if (outcome.ok) return { response: withMetadata(response, STRUCTURED_OUTPUT_KEY, outcome.value) };
    const used = this.retries.get(ctx.signal) ?? 0;
    if (used >= this.maxRetries)
      return { response: withMetadata(response, STRUCTURED_OUTPUT_ERROR_KEY, outcome.error) };
    this.retries.set(ctx.signal, used + 1);
    return {
      decision: 'loop_to_model',
      injectMessages: [
        userMessage(`Your answer is not valid:\n${outcome.error}\nAnswer again with only the corrected JSON value.`),
      ],
    };
  }

  /** The validated value of a run's final answer (from its messages, or the whole transcript), if it was valid. */
  valueOf(messages: readonly Message[]): z.output<TSchema> | undefined {
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i]!;
      if (message.role !== 'assistant') continue;
      const metadata = message.metadata as Record<string, unknown> | undefined;
      return metadata !== undefined && STRUCTURED_OUTPUT_KEY in metadata
        ? (metadata[STRUCTURED_OUTPUT_KEY] as z.output<TSchema>)
        : undefined;
    }
    return undefined;
  }
}

function parse(schema: z.ZodType, text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)```/.exec(text);
  const candidate = (fenced?.[1] ?? text).trim();
  let json: unknown;
  try {
    json = JSON.parse(candidate);
  } catch (error) {
    return { ok: false, error: `- the answer is not JSON (${(error as Error).message})` };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    error: result.error.issues
      .map((issue) => `- ${issue.path.length ? issue.path.join('.') : '(value)'}: ${issue.message}`)
      .join('\n'),
  };
}

function withMetadata(response: AssistantMessage, key: string, value: unknown): AssistantMessage {
  return { ...response, metadata: { ...response.metadata, [key]: value } };
}
