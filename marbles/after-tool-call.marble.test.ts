// Rule: afterToolCall — every middleware runs; partial results merge field by field, later non-undefined fields win.
import { describe, expect, it } from 'vitest';
import { composeMiddleware, type AfterToolCallContext, type AfterToolCallResult } from 'cubepi';
import { mergeToolResults } from 'cubepi/operators';
import { assistant, hookContext, hookFailure, testScheduler, toolCall, observed } from './helpers.js';

const base = hookContext();
const executed = { content: [{ type: 'text' as const, text: 'password=hunter2' }], details: { raw: 1 } };
const ctx: AfterToolCallContext = {
  ...base,
  assistantMessage: assistant(''),
  toolCall,
  args: { q: 'x' },
  result: executed,
  isError: false,
  context: base,
};
const rich = { details: { rows: 42, source: 'db' } };
const redacted = { content: [{ type: 'text' as const, text: 'password=[redacted]' }] };

describe('afterToolCall: field-wise merge', () => {
  it('an early middleware adds details, a later one redacts content: both survive', () => {
    const seen: unknown[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const detailsAdder = cold('-d|', { d: rich });
      const redactor = cold('      --r|', { r: redacted });
      const result = composeMiddleware([
        { name: 'DetailsAdder', afterToolCall: (c: AfterToolCallContext) => (seen.push(c.result), detailsAdder) },
        { name: 'Redactor', afterToolCall: (c: AfterToolCallContext) => (seen.push(c.result), redactor) },
      ]).hooks.afterToolCall!(ctx);
      expectObservable(observed(result)).toBe('-----(m|)', { m: { ...rich, ...redacted } });
      expectSubscriptions(detailsAdder.subscriptions).toBe('^-!');
      expectSubscriptions(redactor.subscriptions).toBe('--^--!');
    });
    expect(seen).toEqual([executed, executed]); // each sees the executed result, not a predecessor's patch
  });

  it('a later non-undefined field overrides an earlier one; undefined fields do not', () => {
    const result = composeMiddleware([
      { name: 'a', afterToolCall: () => ({ isError: true, details: 'a', terminate: true }) },
      { name: 'b', afterToolCall: () => ({ isError: false, details: undefined }) },
      { name: 'c', afterToolCall: () => undefined },
    ]).hooks.afterToolCall!(ctx);
    expect(result).toEqual({ isError: false, details: 'a', terminate: true });
  });

  it('the operator: foldHooks(fieldWiseMergeRule(), {}), every hook folded', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const hooks = cold('(ab|)', { a: () => cold('-x|', { x: rich }), b: () => cold('-y|', { y: redacted }) });
      expectObservable(
        hooks.pipe(
          mergeToolResults<() => ReturnType<typeof cold<AfterToolCallResult>>, AfterToolCallResult>((hook) => hook()),
        ),
      ).toBe('----(m|)', {
        m: { ...rich, ...redacted },
      });
    });
  });

  it('with no middleware the hook is not wired; the operator answers with an empty patch', () => {
    expect(composeMiddleware([]).hooks.afterToolCall).toBeUndefined();
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<never>('|').pipe(mergeToolResults(() => [undefined]))).toBe('(m|)', { m: {} });
    });
  });

  it('with one middleware answers with its patch', () => {
    expect(composeMiddleware([{ name: 'one', afterToolCall: () => redacted }]).hooks.afterToolCall!(ctx)).toEqual(
      redacted,
    );
  });

  it('every middleware runs even when an earlier one answered synchronously', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const late = cold('---r|', { r: redacted });
      const result = composeMiddleware([
        { name: 'sync', afterToolCall: () => rich },
        { name: 'async', afterToolCall: () => late },
      ]).hooks.afterToolCall!(ctx);
      expectObservable(observed(result)).toBe('----(m|)', { m: { ...rich, ...redacted } });
    });
  });

  it('a failing hook fails with a HookError naming it; later hooks are not subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const broken = cold<never>('-#', undefined, new Error('redactor crashed'));
      const later = cold('-x|', { x: rich });
      const result = composeMiddleware([
        { name: 'Redactor', afterToolCall: () => broken },
        { name: 'Later', afterToolCall: () => later },
      ]).hooks.afterToolCall!(ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('-(f|)', {
        f: 'Redactor.afterToolCall: redactor crashed',
      });
      expectSubscriptions(later.subscriptions).toBe([]);
    });
  });

  it('unsubscribing mid-hook tears it down', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('-x|', { x: rich });
      const slow = cold('  -----y|', { y: redacted });
      const result = composeMiddleware([
        { name: 'first', afterToolCall: () => first },
        { name: 'slow', afterToolCall: () => slow },
      ]).hooks.afterToolCall!(ctx);
      expectObservable(observed(result), '----!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('--^-!');
    });
  });
});
