// Rule: afterModelResponse — chained with merge semantics; the decision of the last middleware that returned a
// TurnAction wins.
import { describe, expect, it } from 'vitest';
import { composeMiddleware, textOf, type AssistantMessage } from 'cubepi';
import { mergeTurnActions } from 'cubepi/operators';
import { assistant, hookContext, hookFailure, testScheduler, user, observed } from './helpers.js';

const ctx = hookContext();
const original = assistant('darn it');
const cleaned = assistant('**** it');
const note = user('be polite');
const retry = user('answer in JSON');

describe('afterModelResponse: chained merge, last decision wins', () => {
  it('each sees the current response; responses replace, injections concatenate, the last decision wins', () => {
    const seen: AssistantMessage[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const redactor = cold(' -a|', { a: { response: cleaned, injectMessages: [note] } });
      const validator = cold('  -b|', { b: { decision: 'loop_to_model' as const, injectMessages: [retry] } });
      const logger = cold('       -c|', { c: {} });
      const result = composeMiddleware([
        { name: 'ProfanityRedactor', afterModelResponse: (r: AssistantMessage) => (seen.push(r), redactor) },
        { name: 'Validator', afterModelResponse: (r: AssistantMessage) => (seen.push(r), validator) },
        { name: 'EventLogger', afterModelResponse: (r: AssistantMessage) => (seen.push(r), logger) },
      ]).hooks.afterModelResponse!(original, ctx);
      expectObservable(observed(result)).toBe('------(r|)', {
        r: { response: cleaned, injectMessages: [note, retry], decision: 'natural' },
      });
    });
    expect(seen).toEqual([original, cleaned, cleaned]);
  });

  it('a middleware that answers nothing does not vote: the earlier decision stands', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const validator = cold('-b|', { b: { decision: 'loop_to_model' as const } });
      const silent = cold<never>('    -|');
      const result = composeMiddleware([
        { name: 'Validator', afterModelResponse: () => validator },
        { name: 'Silent', afterModelResponse: () => silent },
      ]).hooks.afterModelResponse!(original, ctx);
      expectObservable(observed(result)).toBe('---(r|)', {
        r: { response: original, injectMessages: [], decision: 'loop_to_model' },
      });
    });
  });

  it('the operator: foldHooks(chainedMergeRule(default)) over the chain', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const hooks = cold('(ab|)', {
        a: () => cold('-x|', { x: { response: cleaned } }),
        b: () => cold('-y|', { y: { decision: 'stop' as const } }),
      });
      expectObservable(hooks.pipe(mergeTurnActions(original, 'natural', (hook) => hook()))).toBe('----(r|)', {
        r: { response: cleaned, injectMessages: [], decision: 'stop' },
      });
    });
  });

  it('with no middleware the hook is not wired; the operator answers with the response and no decision', () => {
    expect(composeMiddleware([]).hooks.afterModelResponse).toBeUndefined();
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<never>('|').pipe(mergeTurnActions(original, 'natural', () => [undefined]))).toBe('(r|)', {
        r: { response: original, injectMessages: [], decision: undefined },
      });
    });
  });

  it('with one middleware: its action, synchronously for a plain value', () => {
    const result = composeMiddleware([{ name: 'one', afterModelResponse: () => ({ decision: 'stop' as const }) }]).hooks
      .afterModelResponse!(original, ctx);
    expect(result).toEqual({ response: original, injectMessages: [], decision: 'stop' });
  });

  it('a synchronous action followed by an async one switches to the operator mid-chain, keeping what came before', () => {
    const seen: string[] = [];
    const saw = (name: string, r: AssistantMessage) => seen.push(`${name} saw ${textOf(r)}`);
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const validator = cold('--v|', { v: { decision: 'loop_to_model' as const, injectMessages: [retry] } });
      const result = composeMiddleware([
        { name: 'sync', afterModelResponse: () => ({ response: cleaned, injectMessages: [note], decision: 'stop' }) },
        { name: 'slow', afterModelResponse: (r: AssistantMessage) => (saw('slow', r), validator) },
        { name: 'after', afterModelResponse: (r: AssistantMessage) => void saw('after', r) },
      ]).hooks.afterModelResponse!(original, ctx);
      // the plain-valued `after` answers at once when `slow` completes
      expectObservable(observed(result)).toBe('---(r|)', {
        r: { response: cleaned, injectMessages: [note, retry], decision: 'loop_to_model' },
      });
      expectSubscriptions(validator.subscriptions).toBe('^--!');
    });
    expect(seen).toEqual(['slow saw **** it', 'after saw **** it']);
  });

  it('after the switch, a decision taken synchronously stands when the async hooks do not vote', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const silent = cold<never>('--|');
      const result = composeMiddleware([
        { name: 'sync', afterModelResponse: () => ({ decision: 'stop' as const, injectMessages: [note] }) },
        { name: 'silent', afterModelResponse: () => silent },
      ]).hooks.afterModelResponse!(original, ctx);
      expectObservable(observed(result)).toBe('--(r|)', {
        r: { response: original, injectMessages: [note], decision: 'stop' },
      });
    });
  });

  it('a failing hook fails with a HookError naming it; later hooks are not subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const broken = cold<never>('-#', undefined, new Error('validator crashed'));
      const later = cold('-c|', { c: {} });
      const result = composeMiddleware([
        { name: 'Validator', afterModelResponse: () => broken },
        { name: 'Later', afterModelResponse: () => later },
      ]).hooks.afterModelResponse!(original, ctx);
      expectObservable(observed(result).pipe(hookFailure())).toBe('-(f|)', {
        f: 'Validator.afterModelResponse: validator crashed',
      });
      expectSubscriptions(later.subscriptions).toBe([]);
    });
  });

  it('unsubscribing mid-hook tears it down', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slow = cold('----a|', { a: {} });
      const result = composeMiddleware([{ name: 'slow', afterModelResponse: () => slow }]).hooks.afterModelResponse!(
        original,
        ctx,
      );
      expectObservable(observed(result), '--!').toBe('-');
      expectSubscriptions(slow.subscriptions).toBe('^-!');
    });
  });
});
