/**
 * Models: what a provider is asked to run, with the facts the runtime needs about it.
 * @module
 */

/** Prices in US dollars per million tokens. */
export interface ModelCost {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
}

/**
 * A model as the runtime sees it. Only `id` and `provider` are required; the rest lets the runtime price usage
 * ({@link ModelCost}), bound requests (`contextWindow`, `maxTokens`) and check what a request needs (`input`,
 * `reasoning`).
 */
export interface Model {
  /** The id the provider's API expects (`claude-sonnet-4-5`, `gpt-4.1`). */
  readonly id: string;
  /** The id of the {@link Provider} that serves it (`anthropic`, `openai`, `faux`). */
  readonly provider: string;
  /** A human-readable name. */
  readonly name?: string | undefined;
  /** Context window in tokens. */
  readonly contextWindow?: number | undefined;
  /** Largest output in tokens. */
  readonly maxTokens?: number | undefined;
  /** Whether the model can think (extended thinking / reasoning). */
  readonly reasoning?: boolean | undefined;
  /** Input kinds the model accepts; text only when absent. */
  readonly input?: readonly ('text' | 'image')[] | undefined;
  /** `false` for a model that cannot call tools (assumed able when absent). */
  readonly tools?: boolean | undefined;
  /** Prices; usage costs 0 when absent. */
  readonly cost?: ModelCost | undefined;
}
