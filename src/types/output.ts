/**
 * Typed answers: the schema a run's final answer must be a value of, how it is asked of the model, and what an invalid
 * answer reports. See `docs/output.md`.
 * @module
 */

/**
 * A schema a run's answer is validated with: any Standard Schema that can also give its JSON Schema (Standard JSON
 * Schema). Zod 4 schemas are both; so are Valibot's and ArkType's with their JSON Schema adapters.
 */
export interface OutputSchema<T = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => OutputValidationResult<T> | PromiseLike<OutputValidationResult<T>>;
    readonly jsonSchema?: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
      readonly output: (options: { readonly target: string }) => Record<string, unknown>;
    };
    readonly types?: { readonly input: unknown; readonly output: T } | undefined;
  };
}

/** What a Standard Schema's `validate` returns. */
export type OutputValidationResult<T> =
  | { readonly value: T; readonly issues?: undefined }
  | {
      readonly issues: ReadonlyArray<{
        readonly message: string;
        readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
      }>;
    };

/**
 * How a run asks a model for a typed answer, strongest first:
 * - `native`: the vendor's structured output constrains the answer to the JSON Schema (OpenAI `json_schema`, the
 *   Responses API's `text.format`, Anthropic structured outputs, Gemini `responseJsonSchema`, Bedrock's output schema);
 * - `tool`: a final tool whose arguments are the answer, which the model must call to finish;
 * - `prompt`: the JSON Schema in the system prompt, the final text parsed.
 */
export type OutputMode = 'native' | 'tool' | 'prompt';

/** The options of a run's `output`, when more than the schema is given. */
export interface OutputOptions<T = unknown> {
  readonly schema: OutputSchema<T>;
  /** A name for the schema, sent where the vendor takes one (default `answer`; `[A-Za-z0-9_-]{1,64}`). */
  readonly name?: string | undefined;
  /** What the answer is, sent with the schema where the vendor takes it. */
  readonly description?: string | undefined;
  /**
   * `auto` (default): the strongest mode the model has (from the model table). A fixed mode is used as given; a model
   * that cannot take it is refused before the request (`model_incapable`), so `fallback` moves past it.
   */
  readonly mode?: 'auto' | OutputMode | undefined;
  /**
   * Whether a schema the vendor's strict mode cannot express (an open record, `z.any()`, …) may be asked for in a
   * weaker mode (`tool`, else `prompt`) instead of being refused at configuration time (default `false`).
   */
  readonly allowWeakerMode?: boolean | undefined;
}

/** A run's `output`: a schema, or the schema with options. */
export type OutputSpec<T = unknown> = OutputSchema<T> | OutputOptions<T>;

/** The type of the value an {@link OutputSpec} validates to. */
export type InferOutput<S> = S extends OutputOptions<infer T> ? T : S extends OutputSchema<infer T> ? T : never;

/** One reason an answer is not a value of the schema: where (a JSON path, `[]` for the whole value) and why. */
export interface OutputIssue {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** How an attempt asks for the typed answer (on `model_attempt`): the mode, and for `tool`, the final tool's name. */
export interface AttemptOutput {
  readonly mode: OutputMode;
  readonly toolName?: string | undefined;
}

/**
 * The native structured output a provider is asked for (`StreamRequest.output`): constrain the final answer's text to
 * `schema`, named `name`. `strict`: the schema was checked to be expressible in the vendor's strict mode (every
 * property required, no open objects), so the provider may send it strict.
 */
export interface NativeOutputRequest {
  readonly name: string;
  readonly description?: string | undefined;
  readonly schema: Readonly<Record<string, unknown>>;
  readonly strict: boolean;
}
