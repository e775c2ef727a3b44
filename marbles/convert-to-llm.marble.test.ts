// Rule: convertToLlm — the last middleware in the list that implements it is the only one that runs.
import { describe, expect, it } from 'vitest';
import { composeMiddleware, type Message } from 'cubepi';
import { lastHookWins } from 'cubepi/operators';
import { spyHook } from 'cubepi/testing';
import { hookContext, hookFailure, testScheduler, user, observed } from './helpers.js';

const ctx = hookContext();
const input = [user('hello')];

describe('convertToLlm: the last implementation wins', () => {
  it('runs only the last implementation; earlier ones are never called', () => {
    const first = spyHook(() => [user('first')]);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const last = cold('--l|', { l: [user('last')] });
      const composed = composeMiddleware([
        { name: 'first', convertToLlm: first },
        { name: 'between', transformContext: (m: Message[]) => m },
        { name: 'last', convertToLlm: () => last },
      ]);
      expectObservable(observed(composed.hooks.convertToLlm!(input, ctx))).toBe('---(r|)', { r: [user('last')] });
      expectSubscriptions(last.subscriptions).toBe('^--!');
      expect(composed.description.convertToLlm).toMatchObject({ runs: ['last'], overridden: ['first'] });
    });
    expect(first.calls).toHaveLength(0);
  });

  it('the operator: only the last hook of the source is invoked', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-a|', { a: [user('a')] });
      const b = cold('--b|', { b: [user('b')] });
      const hooks = cold('(xy|)', { x: () => a, y: () => b });
      expectObservable(hooks.pipe(lastHookWins(input, (hook) => hook()))).toBe('---(r|)', { r: [user('b')] });
      expectSubscriptions(a.subscriptions).toBe([]);
    });
  });

  it('with no middleware the hook is not wired; the operator answers with the seed', () => {
    expect(composeMiddleware([]).hooks.convertToLlm).toBeUndefined();
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<() => Message[]>('|').pipe(lastHookWins(input, (hook) => [hook()]))).toBe('(s|)', {
        s: input,
      });
    });
  });

  it('with one middleware answers with its output; a plain answer stays synchronous', () => {
    expect(
      composeMiddleware([{ name: 'one', convertToLlm: () => [user('x')] }]).hooks.convertToLlm!(input, ctx),
    ).toEqual([user('x')]);
  });

  it('an empty answer keeps the input', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const silent = cold<never>('--|');
      expectObservable(
        observed(composeMiddleware([{ name: 'silent', convertToLlm: () => silent }]).hooks.convertToLlm!(input, ctx)),
      ).toBe('--(r|)', { r: input });
    });
  });

  it('a failing converter fails with a HookError naming it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const broken = cold<never>('-#', undefined, new Error('bad format'));
      const result = composeMiddleware([{ name: 'broken', convertToLlm: () => broken }]).hooks.convertToLlm!(
        input,
        ctx,
      );
      expectObservable(observed(result).pipe(hookFailure())).toBe('-(f|)', { f: 'broken.convertToLlm: bad format' });
    });
  });

  it('unsubscribing mid-hook tears it down', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('-----s|', { s: input });
      const result = composeMiddleware([{ name: 'slow', convertToLlm: () => slow }]).hooks.convertToLlm!(input, ctx);
      expectObservable(observed(result), '--!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('^-!');
    });
  });
});
