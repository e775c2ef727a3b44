/**
 * Bounding what a run spends.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import { usageOf } from '../types/usage-of.js';
import type { SpendBound } from '../types/usage.js';
import type { Middleware, TurnEndContext } from './types.js';

/** Options of {@link BudgetCap}: at least one bound. */
export interface BudgetCapOptions {
  /** US dollars, from the models' prices (`usage.cost.total`). */
  readonly usd?: number | undefined;
  /** Tokens (`usage.totalTokens`). */
  readonly tokens?: number | undefined;
  readonly name?: string | undefined;
}

/**
 * `shouldStopAfterTurn`: ends the run once the usage of its model calls so far reaches a bound (dollars, tokens, or
 * both). It sums the usage the providers reported for this run's assistant messages, and the `usage` its tool results
 * carry (a sub-agent's model calls: see `agentTool`), so it stops *after* the turn that crossed the bound. It also
 * stops once the run's budget signal fired: what the run counted reached the bound, including spend no message
 * carries (runs its hooks started, `childRunOptions`; its middleware's own model calls).
 *
 * It also declares the bound ({@link Middleware.budget}): sub-agents the run starts spend from the same budget, and a
 * sub-agent still running when the run's total (its own calls and its sub-agents', counted as each model call ends)
 * reaches the bound is cancelled at once, its provider request aborted; what it spent until then is counted.
 *
 * @example
 * new Agent({ provider, model, middleware: [new BudgetCap({ usd: 0.5 })] });
 */
export class BudgetCap implements Middleware {
  readonly name: string;
  readonly usd: number | undefined;
  readonly tokens: number | undefined;
  /** The bound, as the loop reads it to bound sub-agents. */
  readonly budget: SpendBound;

  constructor(options: BudgetCapOptions) {
    if (options?.usd === undefined && options?.tokens === undefined) {
      throw new ConfigurationError('BudgetCap: give a bound in usd, tokens, or both');
    }
    for (const key of ['usd', 'tokens'] as const) {
      const bound = options[key];
      if (bound !== undefined && !(typeof bound === 'number' && bound > 0)) {
        throw new ConfigurationError(`BudgetCap: ${key} must be a positive number`);
      }
    }
    this.usd = options.usd;
    this.tokens = options.tokens;
    this.name = options.name ?? 'BudgetCap';
    this.budget = { usd: this.usd, tokens: this.tokens };
  }

  shouldStopAfterTurn(ctx: TurnEndContext): boolean {
    // The run's budget signal fires when what it counted as spent (its model calls, its tools' and hooks' sub-runs,
    // its middleware's own model calls) reaches the tightest bound: spend no message of the transcript carries.
    if (ctx.run?.budgetSignal?.aborted === true) return true;
    const usage = usageOf(ctx.newMessages);
    const usd = usage.cost.total;
    const tokens = usage.totalTokens;
    return (this.usd !== undefined && usd >= this.usd) || (this.tokens !== undefined && tokens >= this.tokens);
  }
}
