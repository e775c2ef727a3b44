/**
 * Limits and budgets per principal: what a caller of a server may start and spend (concurrent runs, run starts per
 * minute, tokens per minute, US dollars per day), the store contract the counters live behind (in memory for
 * `createAgentServer`, PostgreSQL for `createQueueServer` and its workers), and the budget a run is enforced by while
 * it runs. Browser-safe: no `node:` import. See `docs/limits.md`.
 * @module
 */
import { ConfigurationError, RunAbortedError } from './errors.js';
import type { RunLimits } from './tool.js';
import type { Usage } from './usage.js';

/**
 * What one principal may do. Every field is optional; an absent one is no limit. Windows are fixed: a minute is a
 * wall-clock minute (`12:03:00.000`–`12:03:59.999` UTC), a day a UTC calendar day; counters start again at zero when
 * the window changes.
 */
export interface Limits {
  /** Runs of the principal at once (started and not ended, on any API node or worker). */
  readonly concurrentRuns?: number | undefined;
  /** Runs started per minute (every route that starts work: a prompt, an approval answer, `/chat`, `/ag-ui`). */
  readonly requestsPerMinute?: number | undefined;
  /** Tokens (`usage.totalTokens`) the principal's runs spend per minute, counted as each model call ends. */
  readonly tokensPerMinute?: number | undefined;
  /** US dollars (`usage.cost.total`, from the models' prices) the principal's runs spend per UTC day. */
  readonly usdPerDay?: number | undefined;
}

/** The limits of every principal, or a function giving each principal its own (a free and a paid tier). */
export type LimitsPolicy<P extends { readonly id: string } = { readonly id: string }> =
  Limits | ((principal: P) => Limits | undefined);

/** Why a request or a run was refused: the `error.code` of the server's 429 body. */
export type LimitCode = 'rate_limited' | 'budget_exceeded' | 'too_many_runs';

/** A refusal: which limit, what was used of it, and when trying again can succeed. */
export interface LimitRefusal {
  readonly code: LimitCode;
  readonly limit: keyof Limits;
  /** What the principal has used of the limit in its window (runs, requests, tokens or dollars). */
  readonly used: number;
  /** The limit. */
  readonly allowed: number;
  /** Milliseconds until the window ends (`concurrentRuns`: 1,000, since no one knows when a run ends). */
  readonly retryAfterMs: number;
}

/** What a store answers to an admission: a slot held under the run's id, or the refusal. */
export type Admission = { readonly admitted: true } | { readonly admitted: false; readonly refusal: LimitRefusal };

/**
 * Where the counters live. Each method is one atomic step against the principal's counters, so two API nodes (or two
 * requests of one node) at the edge of a limit cannot both pass.
 */
export interface LimitStore {
  /**
   * Admits a run: refuses it when the principal is at any of `limits` (`usdPerDay`, `tokensPerMinute`,
   * `requestsPerMinute`, `concurrentRuns`, checked in that order), else counts one request and holds a run slot
   * under `runId` (with `limits`, so a worker enforcing the run's budget knows them). Atomic.
   */
  admit(principalId: string, runId: string, limits: Limits): Promise<Admission>;
  /**
   * Adds what a run spent to the principal's counters and resolves with the budget it has now reached, if any
   * (`tokensPerMinute` or `usdPerDay`: used ≥ allowed).
   */
  charge(principalId: string, spend: Spend, limits: Limits): Promise<LimitRefusal | undefined>;
  /** Frees the slot `runId` held: the run ended, or never started. Idempotent. */
  release(runId: string): Promise<void>;
}

/** What a run spent: tokens and US dollars. */
export interface Spend {
  readonly tokens: number;
  readonly usd: number;
}

/** The Retry-After of a refusal of `concurrentRuns`: a run's end cannot be predicted, so ask again in a second. */
export const CONCURRENT_RETRY_MS = 1000;

/** The minute and the UTC day `now` falls in, and how long until each ends. @internal */
export function windowsAt(now: number): { minute: number; day: number; minuteLeftMs: number; dayLeftMs: number } {
  const minute = Math.floor(now / 60_000);
  const day = Math.floor(now / 86_400_000);
  return { minute, day, minuteLeftMs: (minute + 1) * 60_000 - now, dayLeftMs: (day + 1) * 86_400_000 - now };
}

/** The code a limit is refused with. */
export function limitCode(limit: keyof Limits): LimitCode {
  return limit === 'concurrentRuns' ? 'too_many_runs' : limit === 'usdPerDay' ? 'budget_exceeded' : 'rate_limited';
}

/** A sentence for a refusal: what was used of which limit, when to retry. */
export function refusalMessage(refusal: LimitRefusal): string {
  const seconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
  switch (refusal.limit) {
    case 'concurrentRuns':
      return `too many runs at once: ${refusal.used} of ${refusal.allowed} running; retry when one ends`;
    case 'requestsPerMinute':
      return `rate limited: ${refusal.used} of ${refusal.allowed} runs started this minute; retry in ${seconds} s`;
    case 'tokensPerMinute':
      return `rate limited: ${refusal.used} of ${refusal.allowed} tokens spent this minute; retry in ${seconds} s`;
    case 'usdPerDay':
      return `budget exceeded: $${refusal.used.toFixed(4)} of $${refusal.allowed} spent today (UTC); retry in ${seconds} s`;
  }
}

/**
 * The limits `policy` gives `principal`, checked: `undefined` when there are none. Throws `ConfigurationError` for a
 * limit that is not a non-negative number (a policy function's answer is checked at each call).
 */
export function limitsFor<P extends { readonly id: string }>(
  policy: LimitsPolicy<P> | undefined,
  principal: P,
): Limits | undefined {
  const limits = typeof policy === 'function' ? policy(principal) : policy;
  if (limits === undefined) return undefined;
  checkLimits(limits);
  const present = LIMIT_KEYS.some((key) => limits[key] !== undefined);
  return present ? limits : undefined;
}

const LIMIT_KEYS = ['concurrentRuns', 'requestsPerMinute', 'tokensPerMinute', 'usdPerDay'] as const;

/** Throws `ConfigurationError` unless `limits` is an object of non-negative numbers (integers but for `usdPerDay`). */
export function checkLimits(limits: Limits): void {
  if (typeof limits !== 'object' || limits === null) throw new ConfigurationError('limits: expected an object');
  for (const key of LIMIT_KEYS) {
    const value = limits[key];
    if (value === undefined) continue;
    const ok =
      typeof value === 'number' &&
      value >= 0 &&
      (key === 'usdPerDay' ? Number.isFinite(value) : Number.isSafeInteger(value));
    if (!ok) throw new ConfigurationError(`limits: \`${key}\` must be a non-negative number, got ${String(value)}`);
  }
}

/** A run's budget while it runs: the `RunLimits` to run it with, and what to call when it ended. */
export interface RunBudget {
  /** Give to `prompt$`/`respond$` (`RunOptions.limits`): spend is charged as it happens, the signal stops the run. */
  readonly limits: RunLimits;
  /** The budget the run reached, once it did (the reason it was stopped). */
  readonly reached: () => LimitRefusal | undefined;
  /** Releases the run's slot; call once the run ended. Idempotent. */
  release(): Promise<void>;
}

/**
 * The budget of a run of `principalId` admitted by `store`: each model call's usage (the run's own and its
 * sub-agents', as `RunLimits.charge` reports them) is charged to the principal's counters in order; when a charge
 * reaches `tokensPerMinute` or `usdPerDay`, the run's budget signal fires with a `RunAbortedError` (`budget`) naming
 * the limit, which cancels the run (outcome `cancelled`, its closing message's `errorMessage` that reason) and the
 * sub-agents it started. A store that fails to charge is reported to `onError` and does not stop the run.
 */
export function runBudget(
  store: LimitStore,
  principalId: string,
  runId: string,
  limits: Limits,
  onError: (error: unknown) => void,
): RunBudget {
  const controller = new AbortController();
  let reached: LimitRefusal | undefined;
  let chain: Promise<void> = Promise.resolve();
  let released: Promise<void> | undefined;
  const charge = (usage: Usage): void => {
    const spend = { tokens: usage.totalTokens, usd: usage.cost.total };
    if (spend.tokens === 0 && spend.usd === 0) return;
    chain = chain
      .then(() => store.charge(principalId, spend, limits))
      .then((refusal) => {
        if (refusal === undefined || controller.signal.aborted) return;
        reached = refusal;
        controller.abort(new RunAbortedError('budget', `Run aborted: ${refusalMessage(refusal)}`));
      })
      .catch(onError);
  };
  return {
    limits: { budgetSignal: controller.signal, charge },
    reached: () => reached,
    release: () => (released ??= chain.then(() => store.release(runId)).catch(onError)),
  };
}
