// foldHooks: a HookRule (seed, step, early stop, what the next hook is given) folded over hooks one at a time.
import { map, mergeMap, of, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { foldHooks, type HookRule } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

/** A sum that stops once it reaches 10; each hook is given the running sum times 100 (to see what it was given). */
const sumTo10: HookRule<number, number, number> = {
  step: (sum, answer) => sum + answer,
  stop: (sum) => sum >= 10,
  input: (sum) => sum * 100,
};
type Hook = (input: number) => Observable<number>;

describe('foldHooks', () => {
  it('folds each answer with step, one hook at a time, giving each hook rule.input(acc)', () => {
    const given: number[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold(' --1|', { 1: 1 });
      const b = cold('    ---2|', { 2: 2 });
      const hooks = cold<Hook>('(ab|)', {
        a: (input) => (given.push(input), a),
        b: (input) => (given.push(input), b),
      });
      expectObservable(hooks.pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input)))).toBe('-------(r|)', { r: 3 });
      expectSubscriptions(a.subscriptions).toBe('^--!');
      expectSubscriptions(b.subscriptions).toBe('---^---!');
    });
    expect(given).toEqual([0, 100]);
  });

  it('stops at the first accumulator that satisfies stop: later hooks are never called nor subscribed', () => {
    let calledC = false;
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-x|', { x: 4 });
      const b = cold('  -y|', { y: 7 });
      const c = cold('    -z|', { z: 1 });
      const hooks = cold<Hook>('(abc|)', { a: () => a, b: () => b, c: () => ((calledC = true), c) });
      expectObservable(hooks.pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input)))).toBe('----(r|)', { r: 11 });
      expectSubscriptions(b.subscriptions).toBe('--^-!');
      expectSubscriptions(c.subscriptions).toBe([]);
    });
    expect(calledC).toBe(false);
  });

  it("takes an Observable's last value; an empty answer leaves the accumulator as it was", () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const hooks = cold<Hook>('(ab|)', { a: () => cold('-1-2|', { 1: 1, 2: 2 }), b: () => cold<number>('-|') });
      expectObservable(hooks.pipe(foldHooks(sumTo10, 5, (hook, input) => hook(input)))).toBe('-----(r|)', { r: 7 });
    });
  });

  it('with no hooks answers the seed; without a stop every hook runs', () => {
    const sum: HookRule<number, number> = { step: (acc, answer) => acc + answer };
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<Hook>('|').pipe(foldHooks(sum, 42, (hook) => hook(0)))).toBe('(r|)', { r: 42 });
      const hooks = cold<number>('(abc|)', { a: 5, b: 5, c: 5 });
      expectObservable(hooks.pipe(foldHooks(sum, 0, (n: number) => [n]))).toBe('(r|)', { r: 15 });
    });
  });

  it('a hook that never answers never lets the fold complete', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const never = cold<number>('-');
      const hooks = cold<Hook>('(a|)', { a: () => never });
      expectObservable(hooks.pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input)))).toBe('-');
      expectSubscriptions(never.subscriptions).toBe('^');
    });
  });

  it("a source error, a hook's error, and a throwing invoke or step error the result", () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const boom = new Error('boom');
      expectObservable(
        cold<Hook>('-#', undefined, boom).pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input))),
      ).toBe('-#', undefined, boom);
      const later = cold('-1|', { 1: 1 });
      const failing = cold<Hook>('(ab|)', { a: () => cold<number>('--#', undefined, boom), b: () => later });
      expectObservable(failing.pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input)))).toBe('--#', undefined, boom);
      expectSubscriptions(later.subscriptions).toBe([]);
      const throwing = cold<Hook>('(a|)', {
        a: () => {
          throw boom;
        },
      });
      expectObservable(throwing.pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input)))).toBe('#', undefined, boom);
      const badStep: HookRule<number, number> = {
        step: () => {
          throw boom;
        },
      };
      expectObservable(cold('(a|)', { a: 1 }).pipe(foldHooks(badStep, 0, (n: number) => [n]))).toBe(
        '#',
        undefined,
        boom,
      );
    });
  });

  it('unsubscribing tears down the hook in flight and never calls the next', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-----1|', { 1: 1 });
      const b = cold('-1|', { 1: 1 });
      const hooks = cold<Hook>('(ab|)', { a: () => a, b: () => b });
      expectObservable(hooks.pipe(foldHooks(sumTo10, 0, (hook, input) => hook(input))), '---!').toBe('-');
      expectSubscriptions(a.subscriptions).toBe('^--!');
      expectSubscriptions(b.subscriptions).toBe([]);
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('-----1|', { 1: 1 });
      const hooks = cold<Hook>('(a|)', { a: () => slow });
      const result = hooks.pipe(
        mergeMap((hook) => of(hook)),
        foldHooks(sumTo10, 0, (hook, input) => hook(input)),
        mergeMap((sum) => of(sum)),
        map((sum) => sum),
      );
      expectObservable(result, '--!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('^-!');
    });
  });
});
