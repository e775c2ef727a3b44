// Rule: shouldStopAfterTurn — any true ends the run; the rest are not called.
import { describe, expect, it } from 'vitest';
import { composeMiddleware, type TurnEndContext } from 'cubepi';
import { stopWhenAny } from 'cubepi/operators';
import { spyHook } from 'cubepi/testing';
import { assistant, hookContext, hookFailure, testScheduler, observed } from './helpers.js';

const base = hookContext();
const ctx: TurnEndContext = {
  ...base,
  message: assistant('FINAL ANSWER: 42'),
  toolResults: [],
  newMessages: [],
  context: base,
};
const no = { f: false };
const yes = { t: true };

describe('shouldStopAfterTurn: any true stops', () => {
  it('stops at the first true; later hooks are never called', () => {
    const sentinel = spyHook(() => true);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const maxTurns = cold('-f|', no);
      const budget = cold('    --t|', yes);
      const result = composeMiddleware([
        { name: 'MaxTurns', shouldStopAfterTurn: () => maxTurns },
        { name: 'BudgetCap', shouldStopAfterTurn: () => budget },
        { name: 'Sentinel', shouldStopAfterTurn: sentinel },
      ]).hooks.shouldStopAfterTurn!(ctx);
      expectObservable(observed(result)).toBe('-----(r|)', { r: true });
      expectSubscriptions(budget.subscriptions).toBe('--^--!');
    });
    expect(sentinel.calls).toHaveLength(0);
  });

  it('answers false after every hook said no', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const a = cold('-f|', no);
      const b = cold('  -f|', no);
      const result = composeMiddleware([
        { name: 'a', shouldStopAfterTurn: () => a },
        { name: 'b', shouldStopAfterTurn: () => b },
      ]).hooks.shouldStopAfterTurn!(ctx);
      expectObservable(observed(result)).toBe('----(r|)', { r: false });
    });
  });

  it('the operator: foldHooks(anyTrueStopsRule(), false), stopping at the first true', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-t|', yes);
      const b = cold('-f|', no);
      const hooks = cold('(ab|)', { a: () => a, b: () => b });
      expectObservable(hooks.pipe(stopWhenAny((hook) => hook()))).toBe('--(r|)', { r: true });
      expectSubscriptions(b.subscriptions).toBe([]);
      expectObservable(cold<never>('|').pipe(stopWhenAny(() => [true]))).toBe('(r|)', { r: false });
    });
  });

  it('with no middleware the hook is not wired; with one it answers synchronously for a plain value', () => {
    expect(composeMiddleware([]).hooks.shouldStopAfterTurn).toBeUndefined();
    expect(composeMiddleware([{ name: 'one', shouldStopAfterTurn: () => true }]).hooks.shouldStopAfterTurn!(ctx)).toBe(
      true,
    );
    expect(composeMiddleware([{ name: 'one', shouldStopAfterTurn: () => false }]).hooks.shouldStopAfterTurn!(ctx)).toBe(
      false,
    );
  });

  it('a synchronous false followed by an async true switches to the operator mid-chain; later hooks are not called', () => {
    const called: string[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const budget = cold('--t|', yes);
      const result = composeMiddleware([
        { name: 'MaxTurns', shouldStopAfterTurn: () => (called.push('MaxTurns'), false) },
        { name: 'BudgetCap', shouldStopAfterTurn: () => (called.push('BudgetCap'), budget) },
        { name: 'Sentinel', shouldStopAfterTurn: () => (called.push('Sentinel'), true) },
      ]).hooks.shouldStopAfterTurn!(ctx);
      expectObservable(observed(result)).toBe('---(r|)', { r: true });
      expectSubscriptions(budget.subscriptions).toBe('^--!');
    });
    expect(called).toEqual(['MaxTurns', 'BudgetCap']);
  });

  it('after the switch, a plain-valued hook still votes: a later true stops', () => {
    const sentinel = spyHook(() => true);
    testScheduler().run(({ cold, expectObservable }) => {
      const budget = cold('--f|', no);
      const result = composeMiddleware([
        { name: 'MaxTurns', shouldStopAfterTurn: () => false },
        { name: 'BudgetCap', shouldStopAfterTurn: () => budget },
        { name: 'Sentinel', shouldStopAfterTurn: sentinel },
      ]).hooks.shouldStopAfterTurn!(ctx);
      expectObservable(observed(result)).toBe('---(r|)', { r: true });
    });
    expect(sentinel.calls).toHaveLength(1);
  });

  it('a failing hook fails with a HookError naming it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const broken = cold<never>('--#', undefined, new Error('meter offline'));
      const result = composeMiddleware([{ name: 'Budget', shouldStopAfterTurn: () => broken }]).hooks
        .shouldStopAfterTurn!(ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('--(f|)', {
        f: 'Budget.shouldStopAfterTurn: meter offline',
      });
    });
  });

  it('unsubscribing mid-hook tears it down', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('----f|', no);
      const result = composeMiddleware([{ name: 'slow', shouldStopAfterTurn: () => slow }]).hooks.shouldStopAfterTurn!(
        ctx,
      );
      expectObservable(observed(result), '--!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('^-!');
    });
  });
});
