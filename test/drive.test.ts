// The generator driver is internal, but everything rests on it: its promises are pinned here directly.
import { defer, isObservable, NEVER, Observable, of, throwError, timer } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ABORTED, drive, fromOp, wait, type Op } from '../src/loop/drive.js';
import { isPromiseLike } from '../src/types/is-promise-like.js';

/** Waits for `source` the way the loop's steps do: yields its Suspension, resumes with the value. */
function* suspend<T, F = T>(
  source: Observable<T> | PromiseLike<T>,
  fallback: F,
  onNext?: (value: T) => void,
): Op<T | F> {
  return (yield wait(source, fallback, onNext)) as T | F;
}

/** A plain value at once, without yielding; a Promise or an Observable waited for (as the loop treats hook answers). */
function* settle<T>(value: T | PromiseLike<T> | Observable<T>, fallback: T): Op<T> {
  if (isObservable(value) || isPromiseLike(value)) return yield* suspend(value, fallback);
  return value;
}
import { deferred, tick } from './helpers.js';

function run<T>(op: Op<T>, signal?: AbortSignal) {
  const outcome: { value?: T; error?: unknown; done: boolean } = { done: false };
  const teardown = drive(
    op,
    {
      complete: (value) => Object.assign(outcome, { value, done: true }),
      error: (error) => Object.assign(outcome, { error, done: true }),
    },
    signal,
  );
  return { outcome, teardown };
}

describe('drive', () => {
  it('runs a generator of plain values synchronously, without a microtask hop', () => {
    function* op(): Op<number> {
      const a = yield* settle(1, 0);
      const b = yield* settle(of(2, 3), 0);
      return a + b;
    }
    const { outcome } = run(op());
    expect(outcome).toEqual({ value: 4, done: true });
  });

  it('waits for a Promise and resumes with its value', async () => {
    const d = deferred<number>();
    function* op(): Op<number> {
      return (yield* suspend(d.promise, 0)) * 2;
    }
    const { outcome } = run(op());
    expect(outcome.done).toBe(false);
    d.resolve(21);
    await tick();
    expect(outcome).toEqual({ value: 42, done: true });
  });

  it("resumes with an Observable's last value, or the fallback when it emits none", () => {
    function* op(): Op<string[]> {
      return [yield* suspend(of('a', 'b'), 'none'), yield* suspend(of<string>(), 'none')];
    }
    expect(run(op()).outcome.value).toEqual(['b', 'none']);
  });

  it('throws a rejection or an Observable error into the generator at the wait', async () => {
    function* op(): Op<string[]> {
      const seen: string[] = [];
      try {
        yield* suspend(Promise.reject(new Error('p')), undefined);
      } catch (error) {
        seen.push((error as Error).message);
      }
      try {
        yield* suspend(
          throwError(() => new Error('o')),
          undefined,
        );
      } catch (error) {
        seen.push((error as Error).message);
      }
      return seen;
    }
    const { outcome } = run(op());
    await tick();
    expect(outcome.value).toEqual(['p', 'o']);
  });

  it('reports an error the generator does not catch', () => {
    // eslint-disable-next-line require-yield
    function* op(): Op<void> {
      throw new Error('bug');
    }
    expect((run(op()).outcome.error as Error).message).toBe('bug');
  });

  it('passes every value of an Observable wait to onNext, synchronously', () => {
    const seen: number[] = [];
    function* op(): Op<number | undefined> {
      return yield* suspend(of(1, 2, 3), undefined, (value) => seen.push(value));
    }
    expect(run(op()).outcome.value).toBe(3);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('turns an onNext throw into an error at the wait and unsubscribes the source', () => {
    let unsubscribed = false;
    const source = new Observable<number>((subscriber) => {
      subscriber.next(1);
      subscriber.next(2);
      return () => (unsubscribed = true);
    });
    function* op(): Op<string> {
      try {
        yield* suspend(source, undefined, () => {
          throw new Error('handler');
        });
        return 'no';
      } catch (error) {
        return (error as Error).message;
      }
    }
    expect(run(op()).outcome.value).toBe('handler');
    expect(unsubscribed).toBe(true);
  });

  it.each([
    ['throws the abort reason into the generator where it waits', false, 'caught stop'],
    ['resumes a resumeOnAbort wait with ABORTED instead of throwing', true, 'resumed with ABORTED (reason stop)'],
  ] as const)('%s, and unsubscribes the wait', (_name, resumeOnAbort, expected) => {
    const controller = new AbortController();
    let unsubscribed = false;
    const source = new Observable<never>(() => () => (unsubscribed = true));
    function* op(): Op<string> {
      try {
        const value = yield wait(source, 'fallback', undefined, resumeOnAbort);
        return value === ABORTED ? `resumed with ABORTED (reason ${String(controller.signal.reason)})` : 'completed';
      } catch (error) {
        return `caught ${String(error)}`;
      }
    }
    const { outcome } = run(op(), controller.signal);
    expect(outcome.done).toBe(false);
    controller.abort('stop');
    expect(outcome.value).toBe(expected);
    expect(unsubscribed).toBe(true);
  });

  it('throws an abort that happened while the generator ran at its next wait, without subscribing', () => {
    const controller = new AbortController();
    let subscribed = false;
    function* op(): Op<string> {
      controller.abort('early');
      try {
        yield* suspend(
          defer(() => ((subscribed = true), of(1))),
          0,
        );
        return 'completed';
      } catch (error) {
        return `caught ${String(error)}`;
      }
    }
    expect(run(op(), controller.signal).outcome.value).toBe('caught early');
    expect(subscribed).toBe(false);
  });

  it('resumes a resumeOnAbort wait after an abort while the generator ran with ABORTED, without subscribing', () => {
    const controller = new AbortController();
    let subscribed = false;
    function* op(): Op<unknown[]> {
      controller.abort('early');
      const first = yield wait(
        defer(() => ((subscribed = true), of(1))),
        0,
        undefined,
        true,
      );
      // A plain wait after it still gets the reason thrown.
      try {
        yield wait(of(2), 0);
        return [first, 'completed'];
      } catch (error) {
        return [first, `caught ${String(error)}`];
      }
    }
    expect(run(op(), controller.signal).outcome.value).toEqual([ABORTED, 'caught early']);
    expect(subscribed).toBe(false);
  });

  it('resumes a resumeOnAbort wait with its value when it completes before any abort', () => {
    const controller = new AbortController();
    function* op(): Op<unknown> {
      return yield wait(of(1, 2), 0, undefined, true);
    }
    expect(run(op(), controller.signal).outcome.value).toBe(2);
  });

  it('ignores a Promise that settles after the abort moved on', async () => {
    const controller = new AbortController();
    const d = deferred<string>();
    const seen: string[] = [];
    function* op(): Op<void> {
      try {
        seen.push(yield* suspend(d.promise, ''));
      } catch {
        seen.push('aborted');
      }
    }
    run(op(), controller.signal);
    controller.abort();
    d.resolve('late');
    await tick();
    expect(seen).toEqual(['aborted']);
  });

  it('teardown unsubscribes the wait, runs finally blocks, and reports nothing', () => {
    let unsubscribed = false;
    let finallyRan = false;
    function* op(): Op<void> {
      try {
        yield* suspend(new Observable<never>(() => () => (unsubscribed = true)), undefined);
      } finally {
        finallyRan = true;
      }
    }
    const { outcome, teardown } = run(op());
    teardown();
    expect({ unsubscribed, finallyRan, done: outcome.done }).toEqual({
      unsubscribed: true,
      finallyRan: true,
      done: false,
    });
  });

  it('teardown from inside the generator closes it at its next wait', async () => {
    let teardown: () => void = () => {};
    const after: string[] = [];
    let subscribed = false;
    function* op(): Op<void> {
      yield* suspend(Promise.resolve(), undefined);
      teardown();
      after.push('still running until the next wait');
      yield* suspend(
        defer(() => ((subscribed = true), NEVER)),
        undefined,
      );
      after.push('never');
    }
    const outcome = { done: false };
    teardown = drive(op(), { complete: () => (outcome.done = true), error: () => (outcome.done = true) });
    await tick();
    expect(after).toEqual(['still running until the next wait']);
    expect(subscribed).toBe(false);
    expect(outcome.done).toBe(false);
  });

  it('runs thousands of synchronous waits without growing the stack', () => {
    function* op(): Op<number> {
      let n = 0;
      for (let i = 0; i < 100_000; i++) n += yield* suspend(of(1), 0);
      return n;
    }
    expect(run(op()).outcome.value).toBe(100_000);
  });

  it('handles an abort fired from inside the subscribe of the wait (re-entrancy)', () => {
    const controller = new AbortController();
    let unsubscribed = false;
    const source = new Observable<never>(() => {
      controller.abort('from inside');
      return () => (unsubscribed = true);
    });
    function* op(): Op<string> {
      try {
        yield* suspend(source, undefined);
        return 'completed';
      } catch (error) {
        return `caught ${String(error)}`;
      }
    }
    expect(run(op(), controller.signal).outcome.value).toBe('caught from inside');
    expect(unsubscribed).toBe(true);
  });

  it('fromOp is cold and cancels on unsubscribe', async () => {
    let started = 0;
    const op$ = fromOp(function* () {
      started++;
      yield* suspend(timer(1000), 0);
      return 'late';
    });
    expect(started).toBe(0);
    const values: string[] = [];
    const subscription = op$.subscribe((value) => values.push(value));
    expect(started).toBe(1);
    subscription.unsubscribe();
    await tick(5);
    expect(values).toEqual([]);
  });
});
