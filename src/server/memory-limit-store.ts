/**
 * `MemoryLimitStore`: the counters of per-principal limits in this process (`createAgentServer`'s default).
 * @module
 */
import {
  CONCURRENT_RETRY_MS,
  limitCode,
  windowsAt,
  type Admission,
  type LimitRefusal,
  type Limits,
  type LimitStore,
  type Spend,
} from '../types/limits.js';

/** Options of {@link MemoryLimitStore}. */
export interface MemoryLimitStoreOptions {
  /** The clock, in milliseconds since the epoch (default `Date.now`): inject one to test windows in virtual time. */
  readonly now?: (() => number) | undefined;
}

interface Counters {
  minute: number;
  requests: number;
  tokens: number;
  day: number;
  usd: number;
  readonly runs: Set<string>;
}

/**
 * Per-principal counters in memory, in fixed windows (a wall-clock minute, a UTC day). Every method runs to its end
 * without awaiting anything, so admissions are atomic in the process: two requests at the edge of `concurrentRuns`
 * cannot both pass. Holds only what is needed: a principal's counters go once it runs nothing and its day has passed.
 * Counters are per process: behind a load balancer, or with workers, use the PostgreSQL store
 * (`createPostgresLimitStore` of `cubepi/worker`).
 *
 * @example
 * createAgentServer({ agent, limits: { policy: { concurrentRuns: 2 }, store: new MemoryLimitStore() } });
 */
export class MemoryLimitStore implements LimitStore {
  private readonly now: () => number;
  private readonly counters = new Map<string, Counters>();
  private readonly owners = new Map<string, string>();
  private admissions = 0;

  constructor(options: MemoryLimitStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  admit(principalId: string, runId: string, limits: Limits): Promise<Admission> {
    const { minuteLeftMs, dayLeftMs, counters } = this.current(principalId);
    const refuse = (limit: keyof Limits, used: number, allowed: number, retryAfterMs: number): Admission => ({
      admitted: false,
      refusal: { code: limitCode(limit), limit, used, allowed, retryAfterMs },
    });
    let answer: Admission;
    if (limits.usdPerDay !== undefined && counters.usd >= limits.usdPerDay) {
      answer = refuse('usdPerDay', counters.usd, limits.usdPerDay, dayLeftMs);
    } else if (limits.tokensPerMinute !== undefined && counters.tokens >= limits.tokensPerMinute) {
      answer = refuse('tokensPerMinute', counters.tokens, limits.tokensPerMinute, minuteLeftMs);
    } else if (limits.requestsPerMinute !== undefined && counters.requests >= limits.requestsPerMinute) {
      answer = refuse('requestsPerMinute', counters.requests, limits.requestsPerMinute, minuteLeftMs);
    } else if (limits.concurrentRuns !== undefined && counters.runs.size >= limits.concurrentRuns) {
      answer = refuse('concurrentRuns', counters.runs.size, limits.concurrentRuns, CONCURRENT_RETRY_MS);
    } else {
      counters.requests += 1;
      counters.runs.add(runId);
      this.owners.set(runId, principalId);
      answer = { admitted: true };
    }
    this.forgetIdle(principalId);
    if (++this.admissions % 1024 === 0) this.sweep();
    return Promise.resolve(answer);
  }

  charge(principalId: string, spend: Spend, limits: Limits): Promise<LimitRefusal | undefined> {
    const { minuteLeftMs, dayLeftMs, counters } = this.current(principalId);
    counters.tokens += spend.tokens;
    counters.usd += spend.usd;
    let refusal: LimitRefusal | undefined;
    if (limits.usdPerDay !== undefined && counters.usd >= limits.usdPerDay) {
      refusal = {
        code: 'budget_exceeded',
        limit: 'usdPerDay',
        used: counters.usd,
        allowed: limits.usdPerDay,
        retryAfterMs: dayLeftMs,
      };
    } else if (limits.tokensPerMinute !== undefined && counters.tokens >= limits.tokensPerMinute) {
      refusal = {
        code: 'rate_limited',
        limit: 'tokensPerMinute',
        used: counters.tokens,
        allowed: limits.tokensPerMinute,
        retryAfterMs: minuteLeftMs,
      };
    }
    return Promise.resolve(refusal);
  }

  release(runId: string): Promise<void> {
    const principalId = this.owners.get(runId);
    if (principalId !== undefined) {
      this.owners.delete(runId);
      this.counters.get(principalId)?.runs.delete(runId);
      this.forgetIdle(principalId);
    }
    return Promise.resolve();
  }

  /** The principal's runs in progress now (for tests and metrics). */
  activeRuns(principalId: string): number {
    return this.counters.get(principalId)?.runs.size ?? 0;
  }

  /** The principal's counters in the current windows, reset when a window changed. */
  private current(principalId: string) {
    const { minute, day, minuteLeftMs, dayLeftMs } = windowsAt(this.now());
    let counters = this.counters.get(principalId);
    if (counters === undefined) {
      counters = { minute, requests: 0, tokens: 0, day, usd: 0, runs: new Set() };
      this.counters.set(principalId, counters);
    }
    if (counters.minute !== minute) Object.assign(counters, { minute, requests: 0, tokens: 0 });
    if (counters.day !== day) Object.assign(counters, { day, usd: 0 });
    return { minuteLeftMs, dayLeftMs, counters };
  }

  /** Drops the counters of principals that run nothing and whose day has passed (what they counted is void). */
  private sweep(): void {
    const { day } = windowsAt(this.now());
    for (const [principalId, counters] of this.counters) {
      if (counters.runs.size === 0 && counters.day !== day) this.counters.delete(principalId);
    }
  }

  /** Drops counters that hold nothing: no run, nothing counted (a later request starts them at zero anyway). */
  private forgetIdle(principalId: string): void {
    const counters = this.counters.get(principalId);
    if (counters === undefined || counters.runs.size > 0) return;
    if (counters.requests === 0 && counters.tokens === 0 && counters.usd === 0) this.counters.delete(principalId);
  }
}
