// Hook retry (issue 31, item 7: seed 002 §7 "transient dependency error：在该 hook 自身的重试策略内处理" and "cancellation：
// 原样向上传播，不被普通 catch 转换为 retry"; §8 "hook 可能被 retry，必须区分 invocation ID 与 attempt ID"): a middleware's
// `retry` calls a transiently failing hook again after its backoff, in virtual time; every failed call is reported with
// its attempt and the invocation's id; cancellation is never retried and ends a backoff at once.
import { isObservable, mergeMap, type Observable, type OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { HookError } from 'cubepi';
import {
  composeMiddleware,
  RunAbortedError,
  runAgentLoop,
  userMessage,
  type AgentEvent,
  type HookContext,
  type Middleware,
} from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { HOOK_SINK, type HookAttempt, type HookSink } from '../src/middleware/hook-sink.js';
import { hookContext, hookFailure, observed, testScheduler } from './helpers.js';

const unavailable = Object.assign(new Error('503'), { retryable: true });
const bug = new Error('bug');

/** A context whose sink records the failures reported: `fail`/`skip`, the attempt, the invocation id, willRetry. */
function recording(signal?: AbortSignal) {
  const log: string[] = [];
  let ids = 0;
  const line = (kind: string, error: HookError, a: HookAttempt | undefined) =>
    log.push(`${kind} ${error.middleware} ${a === undefined ? '-' : `#${a.attempt} ${a.invocationId} ${a.willRetry}`}`);
  const sink: HookSink = {
    patch: () => undefined,
    skipped: (error, attempt) => line('skip', error, attempt),
    attemptFailed: (error, attempt) => line('fail', error, attempt),
    invocationId: () => `inv${++ids}`,
  };
  const ctx = { ...hookContext(signal), [HOOK_SINK]: sink } as HookContext;
  return { ctx, log };
}

/** A middleware whose transformSystemPrompt answers with `answers[n]` at its n-th call (counted in `calls`). */
function flaky(retry: Middleware['retry'], answers: readonly (() => unknown)[], extra: Partial<Middleware> = {}) {
  const state = { calls: 0 };
  const middleware = {
    name: 'flaky',
    retry,
    transformSystemPrompt: () => answers[state.calls++]!(),
    ...extra,
  } as Middleware;
  return { middleware, state };
}

describe('Middleware.retry', () => {
  it('calls a transiently failing hook again after each backoff, up to its attempts, on the scheduler', () => {
    const { ctx, log } = recording();
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold<string>('--#', undefined, unavailable);
      const second = cold<string>('            --#', undefined, unavailable);
      const third = cold<string>('                        --(p|)', { p: 'prompt' });
      const { middleware } = flaky({ attempts: 3, backoffMs: 10 }, [() => first, () => second, () => third]);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result)).toBe('26ms (p|)', { p: 'prompt' });
      expectSubscriptions(first.subscriptions).toBe('^-!');
      expectSubscriptions(second.subscriptions).toBe('12ms ^-!');
      expectSubscriptions(third.subscriptions).toBe('24ms ^-!');
    });
    // Two failed attempts of one invocation; the third answered.
    expect(log).toEqual(['fail flaky #1 inv1 true', 'fail flaky #2 inv1 true']);
  });

  it('a backoff function gets the failed attempt; the last failure ends as without retry (a HookError)', () => {
    const { ctx, log } = recording();
    const waits: number[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const fail = () => cold<string>('--#', undefined, unavailable);
      const attempts = [fail(), fail(), fail()];
      const backoffMs = (attempt: number) => (waits.push(attempt), 10 * 2 ** (attempt - 1));
      const { middleware } = flaky(
        { attempts: 3, backoffMs },
        attempts.map((a) => () => a),
      );
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('36ms (f|)', {
        f: 'flaky.transformSystemPrompt: 503',
      });
      expectSubscriptions(attempts[0]!.subscriptions).toBe('^-!');
      expectSubscriptions(attempts[1]!.subscriptions).toBe('12ms ^-!');
      expectSubscriptions(attempts[2]!.subscriptions).toBe('34ms ^-!');
    });
    expect(waits).toEqual([1, 2]);
    expect(log).toEqual(['fail flaky #1 inv1 true', 'fail flaky #2 inv1 true', 'fail flaky #3 inv1 false']);
  });

  it("the last failure is dropped under onError 'skip': the chain goes on with what it had", () => {
    const { ctx, log } = recording();
    testScheduler().run(({ cold, expectObservable }) => {
      const fail = () => cold<string>('-#', undefined, unavailable);
      const { middleware } = flaky({ attempts: 2, backoffMs: 5 }, [fail, fail], { onError: 'skip' });
      const next = { name: 'next', transformSystemPrompt: (prompt: string) => `${prompt}+next` };
      const result = composeMiddleware([middleware, next]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result)).toBe('7ms (p|)', { p: 'base+next' });
    });
    expect(log).toEqual(['fail flaky #1 inv1 true', 'skip flaky #2 inv1 false']);
  });

  it('does not retry a failure transient refuses (by default: one without retryable: true)', () => {
    const { ctx, log } = recording();
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold<string>('--#', undefined, bug);
      const never = cold<string>('-');
      const { middleware, state } = flaky({ attempts: 5, backoffMs: 10 }, [() => failing, () => never]);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('--(f|)', { f: 'flaky.transformSystemPrompt: bug' });
      expectSubscriptions(never.subscriptions).toBe([]);
      expect(state.calls).toBe(1);
    });
    expect(log).toEqual(['fail flaky #1 inv1 false']);
  });

  it('asks retry.transient which failures are transient', () => {
    const { ctx, log } = recording();
    testScheduler().run(({ cold, expectObservable }) => {
      const transient = (error: unknown) => (error as Error).message === 'bug';
      const { middleware } = flaky({ attempts: 2, transient }, [
        () => cold<string>('-#', undefined, bug),
        () => cold<string>('-(p|)', { p: 'ok' }),
      ]);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      // No backoff: the second call is made at once.
      expectObservable(observed(result)).toBe('--(p|)', { p: 'ok' });
    });
    expect(log).toEqual(['fail flaky #1 inv1 true']);
  });

  it("the run's cancellation during a backoff ends it at once: no retry, the wait torn down, the reason goes on", () => {
    const controller = new AbortController();
    const reason = new RunAbortedError('abort');
    const { ctx, log } = recording(controller.signal);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold<string>('--#', undefined, unavailable);
      const second = cold<string>('-(p|)', { p: 'late' });
      cold('-----a').subscribe(() => controller.abort(reason));
      const { middleware, state } = flaky({ attempts: 3, backoffMs: 10 }, [() => first, () => second]);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result)).toBe('-----#', undefined, reason);
      expectSubscriptions(second.subscriptions).toBe([]);
      expect(state).toEqual({ calls: 1 });
    });
    expect(log).toEqual(['fail flaky #1 inv1 true']);
  });

  it('unsubscribing during a backoff cancels the scheduled retry', () => {
    const { ctx } = recording();
    let calls = 0;
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold<string>('--#', undefined, unavailable);
      const second = cold<string>('-(p|)', { p: 'late' });
      const { middleware } = flaky({ attempts: 3, backoffMs: 10 }, [() => (calls++, first), () => (calls++, second)]);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result), '^----!').toBe('-');
      expectSubscriptions(second.subscriptions).toBe([]);
    });
    expect(calls).toBe(1);
  });

  it('never retries an abort error (a cancellation), nor reports it as a failed attempt', () => {
    const { ctx, log } = recording();
    const aborted = Object.assign(new Error('aborted'), { name: 'AbortError', retryable: true });
    testScheduler().run(({ cold, expectObservable }) => {
      const { middleware, state } = flaky({ attempts: 3 }, [() => cold<string>('-#', undefined, aborted)]);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('-(f|)', {
        f: 'flaky.transformSystemPrompt: aborted',
      });
      expect(state.calls).toBe(1);
    });
    expect(log).toEqual([]);
  });

  it('a plain hook costs nothing until it throws: then the retries run on the operator path', () => {
    const { ctx, log } = recording();
    // Answering at once: a plain value, no Observable.
    const calm = flaky({ attempts: 3, backoffMs: 10 }, [() => 'plain']);
    expect(composeMiddleware([calm.middleware]).hooks.transformSystemPrompt!('base', ctx)).toBe('plain');
    testScheduler().run(({ expectObservable }) => {
      const boom = () => {
        throw unavailable;
      };
      const { middleware } = flaky({ attempts: 3, backoffMs: 10 }, [boom, boom, () => 'third']);
      const result = composeMiddleware([middleware]).hooks.transformSystemPrompt!('base', ctx);
      expect(isObservable(result)).toBe(true);
      expectObservable(observed(result)).toBe('20ms (p|)', { p: 'third' });
    });
    expect(log).toEqual(['fail flaky #1 inv1 true', 'fail flaky #2 inv1 true']);
  });

  it('invocations get distinct ids; the attempts of one share it', () => {
    const { ctx, log } = recording();
    testScheduler().run(({ cold, expectObservable }) => {
      const fail = () => cold<string>('-#', undefined, unavailable);
      const ok = () => cold<string>('-(p|)', { p: 'p' });
      const { middleware } = flaky({ attempts: 2 }, [fail, ok, fail, ok]);
      const composed = composeMiddleware([middleware]).hooks.transformSystemPrompt!;
      const twice = observed(composed('a', ctx)).pipe(mergeMap(() => observed(composed('b', ctx))));
      expectObservable(twice).toBe('----(p|)', { p: 'p' });
    });
    expect(log).toEqual(['fail flaky #1 inv1 true', 'fail flaky #1 inv2 true']);
  });
});

describe('Middleware.retry in a run', () => {
  const model = { id: 'faux', provider: 'faux' };
  const hookErrors: OperatorFunction<AgentEvent, string> = mergeMap((event) =>
    event.type === 'hook_error'
      ? [`${event.attempt}:${event.invocationId?.replace(event.runId, 'run')}:${event.willRetry}`]
      : event.type === 'agent_end'
        ? [event.outcome]
        : [],
  );

  it('emits hook_error per failed attempt with the run-scoped invocation id, then the run goes on', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      let calls = 0;
      const faux = new FauxProvider({ responses: [fauxMessage('hi')] });
      const middleware: Middleware = {
        name: 'flaky',
        retry: { attempts: 3, backoffMs: 10 },
        transformSystemPrompt: (prompt: string): Observable<string> =>
          ++calls < 3 ? cold<string>('-#', undefined, unavailable) : cold<string>('-(p|)', { p: prompt }),
      };
      const run$ = runAgentLoop({
        provider: faux,
        model,
        prompts: [userMessage('go')],
        hooks: composeMiddleware([middleware]).hooks,
      });
      const events$ = run$.pipe(hookErrors);
      // Failed at 1 and 12 (after a 10 ms backoff); the third call answers at 23 and the run completes.
      expectObservable(events$).toBe('-a 10ms b 10ms (e|)', {
        a: '1:run.h1:true',
        b: '2:run.h1:true',
        e: 'completed',
      });
    });
  });
});
