// The in-memory limit store in virtual time (an injected clock): each limit refuses at its edge with its code and the
// time left in its window, a new window starts from zero, simultaneous admissions at the edge of `concurrentRuns`
// never both pass, and a run's budget cancels it (a RunAbortedError `budget`) once a charge reaches a limit.
import { describe, expect, it } from 'vitest';
import { RunAbortedError, type Usage } from 'cubepi';
import { MemoryLimitStore, type Limits } from 'cubepi/server';
import { limitsFor, runBudget } from '../../src/types/limits.js';

/** 2026-12-02T10:15:20.000Z: 40 s left in the minute, 13 h 44 min 40 s in the UTC day. */
const T0 = Date.UTC(2026, 11, 2, 10, 15, 20);

function clock(start = T0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms), set: (t: number) => void (now = t) };
}

const usage = (tokens: number, usd = 0): Usage => ({
  input: tokens,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  reasoning: 0,
  totalTokens: tokens,
  cost: { input: usd, output: 0, cacheRead: 0, cacheWrite: 0, total: usd },
});

describe('MemoryLimitStore', () => {
  it('holds concurrentRuns: the run over the limit is refused (too_many_runs, retry in 1 s) until one is released', async () => {
    const store = new MemoryLimitStore({ now: clock().now });
    const limits: Limits = { concurrentRuns: 2 };
    expect(await store.admit('u1', 'r1', limits)).toEqual({ admitted: true });
    expect(await store.admit('u1', 'r2', limits)).toEqual({ admitted: true });
    expect(await store.admit('u1', 'r3', limits)).toEqual({
      admitted: false,
      refusal: { code: 'too_many_runs', limit: 'concurrentRuns', used: 2, allowed: 2, retryAfterMs: 1000 },
    });
    // Another principal has its own counters.
    expect(await store.admit('u2', 'r4', limits)).toEqual({ admitted: true });
    await store.release('r1');
    await store.release('r1'); // idempotent: frees nothing more
    expect(store.activeRuns('u1')).toBe(1);
    expect(await store.admit('u1', 'r5', limits)).toEqual({ admitted: true });
    expect((await store.admit('u1', 'r6', limits)).admitted).toBe(false);
  });

  it('lets exactly concurrentRuns of many simultaneous admissions pass', async () => {
    const store = new MemoryLimitStore({ now: clock().now });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.admit('u1', `r${i}`, { concurrentRuns: 3 })),
    );
    expect(answers.filter((a) => a.admitted)).toHaveLength(3);
    expect(store.activeRuns('u1')).toBe(3);
  });

  it('holds requestsPerMinute in a fixed wall-clock minute: refused with the time left in it, counted anew after', async () => {
    const time = clock();
    const store = new MemoryLimitStore({ now: time.now });
    const limits: Limits = { requestsPerMinute: 2 };
    await store.admit('u1', 'r1', limits);
    await store.release('r1'); // ended runs still count as requests of their minute
    await store.admit('u1', 'r2', limits);
    time.advance(10_000);
    expect(await store.admit('u1', 'r3', limits)).toEqual({
      admitted: false,
      refusal: { code: 'rate_limited', limit: 'requestsPerMinute', used: 2, allowed: 2, retryAfterMs: 30_000 },
    });
    time.advance(29_999);
    expect((await store.admit('u1', 'r4', limits)).admitted).toBe(false);
    time.advance(1); // 10:16:00.000: a new minute
    expect(await store.admit('u1', 'r5', limits)).toEqual({ admitted: true });
  });

  it('charges tokens per minute: the charge that reaches the limit answers it, and runs are refused until the minute ends', async () => {
    const time = clock();
    const store = new MemoryLimitStore({ now: time.now });
    const limits: Limits = { tokensPerMinute: 1000 };
    expect(await store.charge('u1', { tokens: 600, usd: 0 }, limits)).toBeUndefined();
    expect(await store.charge('u1', { tokens: 400, usd: 0 }, limits)).toEqual({
      code: 'rate_limited',
      limit: 'tokensPerMinute',
      used: 1000,
      allowed: 1000,
      retryAfterMs: 40_000,
    });
    expect(await store.admit('u1', 'r1', limits)).toMatchObject({
      admitted: false,
      refusal: { code: 'rate_limited', limit: 'tokensPerMinute', retryAfterMs: 40_000 },
    });
    time.advance(40_000);
    expect(await store.admit('u1', 'r1', limits)).toEqual({ admitted: true });
  });

  it('charges dollars per UTC day: budget_exceeded until midnight UTC, then a new day', async () => {
    const time = clock();
    const store = new MemoryLimitStore({ now: time.now });
    const limits: Limits = { usdPerDay: 1 };
    expect(await store.charge('u1', { tokens: 10, usd: 0.75 }, limits)).toBeUndefined();
    expect(await store.charge('u1', { tokens: 10, usd: 0.25 }, limits)).toMatchObject({
      code: 'budget_exceeded',
      limit: 'usdPerDay',
      used: 1,
      allowed: 1,
    });
    const midnight = Date.UTC(2026, 11, 3);
    expect(await store.admit('u1', 'r1', limits)).toMatchObject({
      admitted: false,
      refusal: { code: 'budget_exceeded', retryAfterMs: midnight - T0 },
    });
    time.set(midnight - 1);
    expect((await store.admit('u1', 'r1', limits)).admitted).toBe(false);
    time.set(midnight);
    expect(await store.admit('u1', 'r1', limits)).toEqual({ admitted: true });
  });

  it('checks the day budget first, then tokens, then requests, then runs', async () => {
    const store = new MemoryLimitStore({ now: clock().now });
    const limits: Limits = { concurrentRuns: 1, requestsPerMinute: 1, tokensPerMinute: 10, usdPerDay: 1 };
    await store.admit('u1', 'r1', limits); // at concurrentRuns and requestsPerMinute now
    expect(await store.admit('u1', 'r2', limits)).toMatchObject({ refusal: { limit: 'requestsPerMinute' } });
    await store.charge('u1', { tokens: 10, usd: 0 }, limits);
    expect(await store.admit('u1', 'r2', limits)).toMatchObject({ refusal: { limit: 'tokensPerMinute' } });
    await store.charge('u1', { tokens: 0, usd: 2 }, limits);
    expect(await store.admit('u1', 'r2', limits)).toMatchObject({ refusal: { limit: 'usdPerDay' } });
  });
});

describe('limitsFor and runBudget', () => {
  it('gives each principal its tier, none to a principal the policy has no limits for, and refuses a bad limit', () => {
    const policy = (p: { id: string }): Limits | undefined =>
      p.id.startsWith('paid') ? { concurrentRuns: 10 } : p.id === 'admin' ? undefined : { concurrentRuns: 1 };
    expect(limitsFor(policy, { id: 'paid-1' })).toEqual({ concurrentRuns: 10 });
    expect(limitsFor(policy, { id: 'free-1' })).toEqual({ concurrentRuns: 1 });
    expect(limitsFor(policy, { id: 'admin' })).toBeUndefined();
    expect(limitsFor({}, { id: 'x' })).toBeUndefined();
    expect(() => limitsFor({ tokensPerMinute: -1 }, { id: 'x' })).toThrow(/tokensPerMinute/);
    expect(() => limitsFor({ concurrentRuns: 1.5 }, { id: 'x' })).toThrow(/concurrentRuns/);
  });

  it("fires the run's budget signal with a RunAbortedError `budget` naming the limit once a charge reaches it", async () => {
    const store = new MemoryLimitStore({ now: clock().now });
    const limits: Limits = { tokensPerMinute: 100 };
    await store.admit('u1', 'r1', limits);
    const errors: unknown[] = [];
    const budget = runBudget(store, 'u1', 'r1', limits, (e) => errors.push(e));
    const signal = budget.limits.budgetSignal!;
    const fired = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
    budget.limits.charge!(usage(60));
    budget.limits.charge!(usage(0)); // nothing spent: not charged
    budget.limits.charge!(usage(50));
    const reason = await fired;
    expect(reason).toBeInstanceOf(RunAbortedError);
    expect(reason).toMatchObject({ reason: 'budget' });
    expect((reason as Error).message).toMatch(/110 of 100 tokens spent this minute/);
    expect(budget.reached()).toMatchObject({ limit: 'tokensPerMinute', used: 110 });
    await budget.release();
    expect(store.activeRuns('u1')).toBe(0);
    expect(errors).toEqual([]);
  });

  it('reports a store that fails to charge and does not stop the run', async () => {
    const failing = new MemoryLimitStore();
    failing.charge = () => Promise.reject(new Error('store down'));
    const errors: unknown[] = [];
    const budget = runBudget(failing, 'u1', 'r1', { tokensPerMinute: 1 }, (e) => errors.push(e));
    budget.limits.charge!(usage(5));
    await budget.release();
    expect(errors).toEqual([new Error('store down')]);
    expect(budget.limits.budgetSignal!.aborted).toBe(false);
  });
});
