// Rule: transformContext and transformSystemPrompt are chained — m1's output is m2's input.
import { describe, expect, it } from 'vitest';
import { composeMiddleware, type Message } from 'cubepi';
import { chainHooks } from 'cubepi/operators';
import { spyHook } from 'cubepi/testing';
import { hookContext, hookFailure, testScheduler, user, observed } from './helpers.js';

const ctx = hookContext();
const [q1, a1, q2] = [user('q1'), user('a1'), user('q2')];
const all = [q1, a1, q2];
const summary = user('summary');

describe('transformContext: chained', () => {
  it("feeds each middleware's output to the next and answers with the last one", () => {
    const seen: Message[][] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const window = cold('  --w|', { w: [q2] });
      const inject = cold('     ---s|', { s: [summary, q2] });
      const m1 = { name: 'window', transformContext: spyHook(() => window) };
      const m2 = { name: 'inject', transformContext: spyHook((messages: Message[]) => (seen.push(messages), inject)) };
      const result = composeMiddleware([m1, m2]).hooks.transformContext!(all, ctx);
      expectObservable(observed(result)).toBe('-------(r|)', { r: [summary, q2] });
      expectSubscriptions(window.subscriptions).toBe('^--!');
      expectSubscriptions(inject.subscriptions).toBe('---^---!');
    });
    expect(seen).toEqual([[q2]]); // m2 saw the truncated list
  });

  it('with no middleware the hook is not wired, and the operator answers with the seed', () => {
    expect(composeMiddleware([]).hooks.transformContext).toBeUndefined();
    expect(
      composeMiddleware([{ name: 'other', transformSystemPrompt: (p: string) => p }]).hooks.transformContext,
    ).toBeUndefined();
    testScheduler().run(({ cold, expectObservable }) => {
      const noHooks = cold<(m: Message[]) => Message[]>('|');
      expectObservable(noHooks.pipe(chainHooks(all, (hook, input) => [hook(input)]))).toBe('(s|)', { s: all });
    });
  });

  it('the operator: an answer of undefined passes the input on, as it does through composeMiddleware', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const hooks = cold<() => Message[] | undefined>('(ab|)', { a: () => [q2], b: () => undefined });
      expectObservable(hooks.pipe(chainHooks(all, (hook) => [hook()]))).toBe('(r|)', { r: [q2] });
    });
  });

  it('with one middleware answers with its output', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const only = cold('---o|', { o: [q1] });
      const result = composeMiddleware([{ name: 'only', transformContext: () => only }]).hooks.transformContext!(
        all,
        ctx,
      );
      expectObservable(observed(result)).toBe('----(r|)', { r: [q1] });
    });
  });

  it('runs hooks one at a time whatever their timings: a slow first hook delays the second', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold(' -----a|', { a: [q1, q2] });
      const fast = cold('      (b|)', { b: [q2] });
      const result = composeMiddleware([
        { name: 'slow', transformContext: () => slow },
        { name: 'fast', transformContext: () => fast },
      ]).hooks.transformContext!(all, ctx);
      expectObservable(observed(result)).toBe('------(r|)', { r: [q2] });
      expectSubscriptions(slow.subscriptions).toBe('^-----!');
      expectSubscriptions(fast.subscriptions).toBe('------(^!)');
    });
  });

  it("uses an Observable's last value, and an empty answer passes the input on unchanged", () => {
    const seen: Message[][] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const twice = cold('-a-b|', { a: [q1], b: [q2] });
      const silent = cold<never>('  --|');
      const last = cold('      -c|', { c: [summary] });
      const result = composeMiddleware([
        { name: 'twice', transformContext: () => twice },
        { name: 'silent', transformContext: (m: Message[]) => (seen.push(m), silent) },
        { name: 'last', transformContext: (m: Message[]) => (seen.push(m), last) },
      ]).hooks.transformContext!(all, ctx);
      expectObservable(observed(result)).toBe('--------(r|)', { r: [summary] });
    });
    expect(seen).toEqual([[q2], [q2]]);
  });

  it('answers synchronously when every hook answers with a plain value, and switches to the operator at the first async one', () => {
    const sync = composeMiddleware([
      { name: 'a', transformContext: (m: Message[]) => m.slice(1) },
      { name: 'b', transformContext: (m: Message[]) => m.slice(1) },
    ]).hooks.transformContext!(all, ctx);
    expect(sync).toEqual([q2]);

    const seen: Message[][] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const later = cold('--l|', { l: [summary] });
      const result = composeMiddleware([
        { name: 'sync', transformContext: (m: Message[]) => m.slice(-1) },
        { name: 'async', transformContext: (m: Message[]) => (seen.push(m), later) },
      ]).hooks.transformContext!(all, ctx);
      expectObservable(observed(result)).toBe('---(r|)', { r: [summary] });
    });
    expect(seen).toEqual([[q2]]);
  });

  it('a hook that errors fails the chain with a HookError naming it; later hooks are never subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const ok = cold('    -a|', { a: [q1] });
      const broken = cold<never>('  --#', undefined, new Error('summary service down'));
      const after = cold('     -z|', { z: [] });
      const result = composeMiddleware([
        { name: 'ok', transformContext: () => ok },
        { name: 'broken', transformContext: () => broken },
        { name: 'after', transformContext: () => after },
      ]).hooks.transformContext!(all, ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('----(f|)', {
        f: 'broken.transformContext: summary service down',
      });
      expectSubscriptions(after.subscriptions).toBe([]);
    });
  });

  it('a hook that throws synchronously or answers with the wrong shape fails with a HookError too', () => {
    const throwing = composeMiddleware([
      {
        name: 'thrower',
        transformContext: () => {
          throw new Error('boom');
        },
      },
    ]).hooks.transformContext!;
    expect(() => throwing(all, ctx)).toThrow('Hook transformContext of middleware "thrower" failed: boom');
    const wrong = composeMiddleware([{ name: 'wrong', transformContext: () => 'nope' as never }]).hooks
      .transformContext!;
    expect(() => wrong(all, ctx)).toThrow(
      'Hook transformContext of middleware "wrong" failed: expected an array of messages, got string',
    );
  });

  it('unsubscribing mid-hook tears the hook in flight down and never starts the next', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold(' --a|', { a: [q1] });
      const second = cold('   -----b|', { b: [q2] });
      const third = cold('          -c|', { c: [] });
      const result = composeMiddleware([
        { name: 'first', transformContext: () => first },
        { name: 'second', transformContext: () => second },
        { name: 'third', transformContext: () => third },
      ]).hooks.transformContext!(all, ctx);
      expectObservable(observed(result), '-----!').toBe('-');
      expectSubscriptions(first.subscriptions).toBe('^--!');
      expectSubscriptions(second.subscriptions).toBe('---^-!');
      expectSubscriptions(third.subscriptions).toBe([]);
    });
  });
});

describe('transformSystemPrompt: chained', () => {
  it('chains strings the same way', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const result = composeMiddleware([
        { name: 'date', transformSystemPrompt: (p: string) => cold('-x|', { x: `${p} Today is Monday.` }) },
        { name: 'tone', transformSystemPrompt: (p: string) => `${p} Be brief.` },
      ]).hooks.transformSystemPrompt!('Base.', ctx);
      expectObservable(observed(result)).toBe('--(r|)', { r: 'Base. Today is Monday. Be brief.' });
    });
  });
});
