/**
 * Token usage and its cost.
 * @module
 */
import type { Model } from './model.js';

/** Cost in US dollars, split like the token counts. */
export interface UsageCost {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly total: number;
}

/**
 * Tokens used by one model call. `input` excludes cached tokens (`cacheRead`, `cacheWrite` count those), `reasoning`
 * is the part of `output` spent on thinking (counted once, inside `output`), and `totalTokens` is
 * `input + output + cacheRead + cacheWrite`.
 */
export interface Usage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly reasoning: number;
  readonly totalTokens: number;
  readonly cost: UsageCost;
  /**
   * `true` when the provider reported no usage for this call (an OpenAI-compatible server that sends no usage chunk):
   * the counts are 0 because they are unknown, not because nothing was used. Absent whenever the vendor reported usage.
   */
  readonly unreported?: true;
}

const ZERO_COST: UsageCost = Object.freeze({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 });

/** A usage of zero tokens and zero cost (a shared frozen value; usages are never mutated). */
export const EMPTY_USAGE: Usage = Object.freeze({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  reasoning: 0,
  totalTokens: 0,
  cost: ZERO_COST,
});

/** Token counts without cost; {@link computeUsage} adds the total and the cost. */
export interface TokenCounts {
  readonly input?: number | undefined;
  readonly output?: number | undefined;
  readonly cacheRead?: number | undefined;
  readonly cacheWrite?: number | undefined;
  readonly reasoning?: number | undefined;
}

/**
 * Builds a {@link Usage} from token counts, pricing it with `model.cost` (US dollars per million tokens). A model
 * without prices costs 0.
 *
 * @example
 * computeUsage({ input: 1200, output: 300 }, model) // { ..., totalTokens: 1500, cost: { total: 0.0081, ... } }
 */
export function computeUsage(counts: TokenCounts, model?: Pick<Model, 'cost'>): Usage {
  const input = counts.input ?? 0;
  const output = counts.output ?? 0;
  const cacheRead = counts.cacheRead ?? 0;
  const cacheWrite = counts.cacheWrite ?? 0;
  const price = model?.cost;
  const cost = price
    ? priced(
        (input * price.input) / 1e6,
        (output * price.output) / 1e6,
        (cacheRead * price.cacheRead) / 1e6,
        (cacheWrite * price.cacheWrite) / 1e6,
      )
    : ZERO_COST;
  return {
    input,
    output,
    cacheRead,
    cacheWrite,
    reasoning: counts.reasoning ?? 0,
    totalTokens: input + output + cacheRead + cacheWrite,
    cost,
  };
}

function priced(input: number, output: number, cacheRead: number, cacheWrite: number): UsageCost {
  return { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite };
}

/** Adds usages field by field (the usage of a run is the sum of its model calls). */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    reasoning: a.reasoning + b.reasoning,
    totalTokens: a.totalTokens + b.totalTokens,
    cost: priced(
      a.cost.input + b.cost.input,
      a.cost.output + b.cost.output,
      a.cost.cacheRead + b.cost.cacheRead,
      a.cost.cacheWrite + b.cost.cacheWrite,
    ),
  };
}

/**
 * A bound on what a run spends: US dollars (`usage.cost.total`), tokens (`usage.totalTokens`), or both. A run with one
 * (a `BudgetCap` declares it) cancels the runs its tools start (sub-agents) as soon as its total — its own model
 * calls and theirs, counted as they end — reaches it.
 */
export interface SpendBound {
  readonly usd?: number | undefined;
  readonly tokens?: number | undefined;
}
