/**
 * What a run spends, counted as it spends it, against the bound its middleware declares (a `BudgetCap`'s).
 * @module
 */
import type { Middleware } from '../middleware/types.js';
import { RunAbortedError } from '../types/errors.js';
import type { SpendBound, Usage } from '../types/usage.js';

/**
 * A run's spend so far — its own model calls and what its tools' sub-runs report — and the signal that fires when it
 * reaches the run's bound. The run itself is not cancelled by it (its `BudgetCap` stops it after the turn): the runs
 * its tools started are, through {@link signal}.
 */
export class RunLedger {
  usd = 0;
  tokens = 0;
  private readonly controller = new AbortController();

  constructor(private readonly bound: SpendBound) {}

  /** Fires once the bound is reached, its reason a `RunAbortedError` (`budget`) saying which bound. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  charge(usage: Usage): void {
    this.usd += usage.cost.total;
    this.tokens += usage.totalTokens;
    if (this.controller.signal.aborted) return;
    const { usd, tokens } = this.bound;
    const spent =
      usd !== undefined && this.usd >= usd
        ? `$${this.usd.toFixed(4)} of $${usd}`
        : tokens !== undefined && this.tokens >= tokens
          ? `${this.tokens} of ${tokens} tokens`
          : undefined;
    if (spent !== undefined)
      this.controller.abort(
        new RunAbortedError('budget', `Run aborted: the budget of the parent run is spent (${spent})`),
      );
  }
}

/** The tightest bound the middlewares declare (`Middleware.budget`), or `undefined` when none does. */
export function spendBoundOf(middleware: readonly Middleware[]): SpendBound | undefined {
  let usd: number | undefined;
  let tokens: number | undefined;
  for (const entry of middleware) {
    const bound = entry.budget;
    if (bound === undefined) continue;
    if (bound.usd !== undefined) usd = Math.min(usd ?? Infinity, bound.usd);
    if (bound.tokens !== undefined) tokens = Math.min(tokens ?? Infinity, bound.tokens);
  }
  return usd === undefined && tokens === undefined ? undefined : { usd, tokens };
}
