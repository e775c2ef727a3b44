/**
 * Models: what a provider is asked to run, with the facts the runtime needs about it.
 * @module
 */

/** Prices in US dollars per million tokens. */
export interface ModelCost {
  /** Each input token not read from a cache. */
  readonly input: number;
  /** Each output token (thinking included, unless `reasoning` prices it apart). */
  readonly output: number;
  /** Each input token read from the prompt cache. */
  readonly cacheRead: number;
  /** Each input token written to the prompt cache (Anthropic's 5-minute rate; 0 where writes are free). */
  readonly cacheWrite: number;
  /** Each reasoning (thinking) token, for a model that prices them apart from output; absent: billed as output. */
  readonly reasoning?: number | undefined;
}

/**
 * A kind of input a model accepts: `text`; `image`; `pdf` (a PDF document read natively, pages as text and
 * pictures); `audio`; `video`; `file` (other documents sent as files, such as plain text, CSV, Markdown or HTML).
 */
export type ModelInputKind = 'text' | 'image' | 'pdf' | 'audio' | 'video' | 'file';

/**
 * A reasoning effort level, as the vendors name them (`xhigh` is OpenAI's and Anthropic's step between `high` and
 * `max`). Which levels a model takes is in {@link ModelThinking.efforts}.
 */
export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/**
 * How hard a run asks a model to think, the same on every model: `off`, or a level from `minimal` to `max`. Mapped and
 * clamped per model from the model table (its effort levels, budget range, and whether it can stop thinking), so the
 * same setting survives a fallback to another vendor. See `docs/providers.md`, "Reasoning".
 */
export type ReasoningLevel = 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'max';

/** A run's reasoning setting: a {@link ReasoningLevel}, or a thinking-token budget (clamped to the model's range). */
export type ReasoningSetting = ReasoningLevel | { readonly budgetTokens: number };

/**
 * A reasoning setting resolved for one model (`StreamRequest.reasoning`, and on `model_attempt`): what is sent.
 * `off: true` turns thinking off; otherwise `effort` (for a model that takes levels) and/or `budgetTokens` (for one
 * that takes a budget) say how hard it thinks. `requested` is the run's setting it came from; `clamped` is true when
 * the model could not take it as asked (a level it lacks, a budget out of its range, `off` on a model that always
 * thinks).
 */
export interface ResolvedReasoning {
  readonly requested: ReasoningSetting;
  readonly off?: true | undefined;
  readonly effort?: ReasoningEffort | undefined;
  readonly budgetTokens?: number | undefined;
  readonly clamped?: true | undefined;
}

/**
 * How a reasoning model's thinking is controlled: by effort levels, by a token budget, or both; and whether it can be
 * turned off. A run's reasoning setting is mapped and clamped onto these.
 */
export interface ModelThinking {
  /** The effort levels the API takes, lowest first (absent: the model takes no effort level). */
  readonly efforts?: readonly ReasoningEffort[] | undefined;
  /** The thinking-token budget the API takes, inclusive (absent: the model takes no budget). */
  readonly budget?: { readonly min: number; readonly max: number } | undefined;
  /** Whether a request can turn thinking off (`false`: the model always thinks, at its lowest level at least). */
  readonly canDisable: boolean;
}

/**
 * A model as the runtime sees it. Only `id` and `provider` are required; the rest lets the runtime price usage
 * ({@link ModelCost}), bound requests (`contextWindow`, `maxTokens`) and check what a request needs before it is sent
 * (`input`, `tools`, `reasoning`: a request the model cannot take ends as a `model_incapable` error instead of a
 * vendor's 400). A fact left out is taken from the model table for the same id (see `findModel`); a model the table
 * does not know is checked only on the facts you give.
 */
export interface Model {
  /** The id the provider's API expects (`claude-sonnet-4-5`, `gpt-4.1`). */
  readonly id: string;
  /** The id of the {@link Provider} that serves it (`anthropic`, `openai`, `google`, `bedrock`, `faux`). */
  readonly provider: string;
  /** A human-readable name. */
  readonly name?: string | undefined;
  /** Context window in tokens: the most a request (input and output) may hold. */
  readonly contextWindow?: number | undefined;
  /** Largest output in tokens. */
  readonly maxTokens?: number | undefined;
  /** Whether the model can think (extended thinking / reasoning). */
  readonly reasoning?: boolean | undefined;
  /** How its thinking is controlled (effort levels, budget range, off), for a model with `reasoning`. */
  readonly thinking?: ModelThinking | undefined;
  /**
   * Input kinds the model accepts. Absent (and not in the table): not known, so not checked — the provider is sent
   * what the request holds.
   */
  readonly input?: readonly ModelInputKind[] | undefined;
  /** `false` for a model that cannot call tools (assumed able when absent). */
  readonly tools?: boolean | undefined;
  /** Whether the model may ask for several tool calls in one answer (absent: unknown). */
  readonly parallelTools?: boolean | undefined;
  /**
   * Native structured output: `json_schema` (the API constrains the answer to a JSON Schema), `json_mode` (valid
   * JSON, no schema), `false` (none: a forced tool or the prompt has to do). Absent: unknown.
   */
  readonly structuredOutput?: 'json_schema' | 'json_mode' | false | undefined;
  /**
   * Prompt caching: `explicit` (the request marks cache breakpoints: Anthropic, Bedrock cache points), `automatic`
   * (the vendor caches repeated prefixes by itself: OpenAI, Gemini), `false` (none). Absent: unknown.
   */
  readonly promptCaching?: 'explicit' | 'automatic' | false | undefined;
  /** Prices; usage costs 0 when absent. */
  readonly cost?: ModelCost | undefined;
}

/**
 * Why a model cannot take a request, found before it is sent (the attempt is then not sent: see `model_attempt`'s
 * `incapable`): the request's estimated tokens exceed the model's `contextWindow`; it holds an input kind the model
 * does not accept; it offers tools to a model without tools; or it asks a model that does not reason to think.
 * `message` says it in words, naming the model.
 */
export type ModelIncapability =
  | {
      readonly reason: 'context_window';
      readonly tokens: number;
      readonly contextWindow: number;
      readonly message: string;
    }
  | { readonly reason: 'input'; readonly kind: ModelInputKind; readonly message: string }
  | { readonly reason: 'tools'; readonly message: string }
  | { readonly reason: 'reasoning'; readonly message: string }
  | { readonly reason: 'output'; readonly message: string };
