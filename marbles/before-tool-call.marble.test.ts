// Rule: beforeToolCall — run in list order; the first { block: true } stops the chain.
import type { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { composeMiddleware, type BeforeToolCallContext, type BeforeToolCallResult } from 'cubepi';
import { gateToolCall } from 'cubepi/operators';
import { spyHook } from 'cubepi/testing';
import { assistant, hookContext, hookFailure, testScheduler, toolCall, observed } from './helpers.js';

const base = hookContext();
const ctx: BeforeToolCallContext = {
  ...base,
  assistantMessage: assistant(''),
  toolCall,
  args: { q: 'x' },
  context: base,
};
const allow = { u: undefined };
const block = { B: { block: true, reason: 'quota exceeded' } };

describe('beforeToolCall: the first block wins', () => {
  it('stops at the first block: later hooks are never called, not even subscribed', () => {
    const audit = spyHook(() => undefined);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const rateLimiter = cold('--B|', block);
      const safety = cold('        -u|', allow);
      const result = composeMiddleware([
        { name: 'RateLimiter', beforeToolCall: () => rateLimiter },
        { name: 'SafetyFilter', beforeToolCall: () => safety },
        { name: 'AuditLogger', beforeToolCall: audit },
      ]).hooks.beforeToolCall!(ctx);
      expectObservable(observed(result)).toBe('---(b|)', { b: block.B });
      expectSubscriptions(rateLimiter.subscriptions).toBe('^--!');
      expectSubscriptions(safety.subscriptions).toBe([]);
    });
    expect(audit.calls).toHaveLength(0);
  });

  it('lets the call through when no hook blocks, after running every hook in order', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-u|', allow);
      const b = cold('  ---u|', allow);
      const result = composeMiddleware([
        { name: 'a', beforeToolCall: () => a },
        { name: 'b', beforeToolCall: () => b },
      ]).hooks.beforeToolCall!(ctx);
      expectObservable(observed(result)).toBe('------(r|)', { r: undefined });
      expectSubscriptions(a.subscriptions).toBe('^-!');
      expectSubscriptions(b.subscriptions).toBe('--^---!');
    });
  });

  it('the operator: foldHooks(firstBlockWinsRule(), undefined), stopping at the block', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('-u|', allow);
      const b = cold('  -B|', block);
      const c = cold('    -u|', allow);
      const hooks = cold<() => Observable<BeforeToolCallResult | undefined>>('(abc|)', {
        a: () => a,
        b: () => b,
        c: () => c,
      });
      // a completes at 2; b, subscribed then, blocks at its completion (4): its last value counts
      expectObservable(hooks.pipe(gateToolCall((hook) => hook()))).toBe('----(r|)', { r: block.B });
      expectSubscriptions(c.subscriptions).toBe([]);
    });
  });

  it('with no middleware the hook is not wired; the operator lets the call through', () => {
    expect(composeMiddleware([]).hooks.beforeToolCall).toBeUndefined();
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<never>('|').pipe(gateToolCall(() => [undefined]))).toBe('(r|)', { r: undefined });
    });
  });

  it('with one middleware: its block, synchronously when it answers with a plain value', () => {
    const result = composeMiddleware([{ name: 'one', beforeToolCall: () => ({ block: true, reason: 'no' }) }]).hooks
      .beforeToolCall!(ctx);
    expect(result).toEqual({ block: true, reason: 'no' });
  });

  it('a synchronous allow followed by an async block switches to the operator mid-chain', () => {
    const after = spyHook(() => undefined);
    testScheduler().run(({ cold, expectObservable }) => {
      const slowBlock = cold('----B|', block);
      const result = composeMiddleware([
        { name: 'sync', beforeToolCall: () => undefined },
        { name: 'slow', beforeToolCall: () => slowBlock },
        { name: 'after', beforeToolCall: after },
      ]).hooks.beforeToolCall!(ctx);
      expectObservable(observed(result)).toBe('-----(b|)', { b: block.B });
    });
    expect(after.calls).toHaveLength(0);
  });

  it('a failing hook fails with a HookError naming it; later hooks are not subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const broken = cold<never>('--#', undefined, new Error('policy engine down'));
      const later = cold('-u|', allow);
      const result = composeMiddleware([
        { name: 'Policy', beforeToolCall: () => broken },
        { name: 'Later', beforeToolCall: () => later },
      ]).hooks.beforeToolCall!(ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('--(f|)', {
        f: 'Policy.beforeToolCall: policy engine down',
      });
      expectSubscriptions(later.subscriptions).toBe([]);
    });
  });

  it('unsubscribing mid-hook tears it down and never starts the next', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('-----u|', allow);
      const next = cold('-u|', allow);
      const result = composeMiddleware([
        { name: 'slow', beforeToolCall: () => slow },
        { name: 'next', beforeToolCall: () => next },
      ]).hooks.beforeToolCall!(ctx);
      expectObservable(observed(result), '---!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('^--!');
      expectSubscriptions(next.subscriptions).toBe([]);
    });
  });
});
