/**
 * Marble-testing helpers: test middleware compositions and whole turns in virtual time.
 * @module
 */
import {
  defaultIfEmpty,
  from,
  isObservable,
  map,
  mergeMap,
  takeLast,
  type Observable,
  type OperatorFunction,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { isPromiseLike } from '../types/is-promise-like.js';
import { runAgentLoop } from '../loop/run-agent-loop.js';
import { composeMiddleware } from '../middleware/compose-middleware.js';
import type { AgentHooks, ComposedHooks, Middleware, TurnEndContext } from '../middleware/types.js';
import type { AgentEvent } from '../types/agent-events.js';
import { userMessage, type Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { AnyAgentTool } from '../types/tool.js';
import { FauxProvider, type FauxProviderOptions, type FauxResponse } from '../providers/faux-provider.js';
import { assert } from './assert.js';

/** An `expect` in the style of vitest and jest: `expect(actual).toEqual(expected)`. */
export type ExpectLike = (actual: unknown) => { toEqual(expected: unknown): void };

/**
 * A fresh `TestScheduler`. Pass your test framework's `expect` (vitest, jest) for its diffs; without one, frames are
 * compared by the kit's own strict deep equality (the rules of `node:assert`'s `deepStrictEqual`; the error names the
 * first differing frame by path and carries `actual` and `expected`). Create one per test.
 *
 * @example
 * import { expect } from 'vitest';
 * createTestScheduler(expect).run(({ cold, expectObservable }) => { ... });
 */
export function createTestScheduler(expect?: ExpectLike): TestScheduler {
  return new TestScheduler(
    expect === undefined
      ? (actual, expected) => assert.deepEqual(actual, expected, 'TestScheduler frames')
      : (actual, expected) => expect(actual).toEqual(expected),
  );
}

/** A function that records its calls (`calls`, the arguments of each), for "never called" assertions. */
export type SpyHook<TArgs extends unknown[], TResult> = ((...args: TArgs) => TResult) & { readonly calls: TArgs[] };

/**
 * Wraps a hook so its calls are recorded.
 *
 * @example
 * const audit = spyHook(() => cold('-u|', { u: undefined }));
 * // ... after the run: expect(audit.calls).toHaveLength(0)
 */
export function spyHook<TArgs extends unknown[], TResult>(impl: (...args: TArgs) => TResult): SpyHook<TArgs, TResult> {
  const calls: TArgs[] = [];
  const spy = (...args: TArgs): TResult => {
    calls.push(args);
    return impl(...args);
  };
  return Object.assign(spy, { calls });
}

/**
 * Maps agent events to marble characters: `mark(event)` returns a one-character string to draw, or `undefined` to
 * leave the event out.
 *
 * @example
 * run$.pipe(toMarbles((e) => (e.type === 'tool_execution_end' ? e.toolCallId : e.type === 'agent_end' ? 'e' : undefined)))
 */
export function toMarbles(mark: (event: AgentEvent) => string | undefined): OperatorFunction<AgentEvent, string> {
  return mergeMap((event) => {
    const char = mark(event);
    return char === undefined ? [] : [char];
  });
}

/** Options of {@link runOneTurn}. */
export interface RunOneTurnOptions {
  /** Scripted responses for a FauxProvider (ignored when `provider` is given). */
  readonly responses?: readonly FauxResponse[] | undefined;
  /** Options of that FauxProvider (pacing, chunk size). */
  readonly faux?: Omit<FauxProviderOptions, 'responses'> | undefined;
  readonly provider?: Provider | undefined;
  readonly model?: Model | undefined;
  /** The prompt (default `'go'`). */
  readonly prompt?: string | Message | undefined;
  readonly history?: readonly Message[] | undefined;
  readonly systemPrompt?: string | undefined;
  readonly tools?: readonly AnyAgentTool[] | undefined;
  readonly middleware?: readonly Middleware[] | undefined;
  /** Hooks given directly, as to the Agent constructor (they replace the middleware versions). */
  readonly hooks?: AgentHooks | undefined;
}

/**
 * Runs exactly one turn of the loop — the prompt, one model call, its tool batch — as a cold Observable of its events,
 * with `middleware` composed exactly as an `Agent` composes it. With a FauxProvider and hooks and tools that answer
 * with `cold()` Observables, it runs in virtual time inside `TestScheduler.run()`.
 *
 * Your `shouldStopAfterTurn` hooks still run (and can be observed); the run ends after the turn whatever they answer.
 *
 * @example
 * createTestScheduler(expect).run(({ cold, expectObservable }) => {
 *   const slowSummary = { name: 'summary', transformContext: (m: Message[]) => cold('30ms (m|)', { m }) };
 *   const run$ = runOneTurn({ responses: [fauxMessage('hi')], middleware: [slowSummary] });
 *   expectObservable(run$.pipe(toMarbles((e) => (e.type === 'agent_end' ? 'e' : undefined)))).toBe('30ms (e|)');
 * });
 */
export function runOneTurn(options: RunOneTurnOptions): Observable<AgentEvent> {
  const provider = options.provider ?? new FauxProvider({ ...options.faux, responses: options.responses ?? [] });
  const { hooks, wrappers } = composeMiddleware(options.middleware ?? [], options.hooks ?? {});
  const stop = hooks.shouldStopAfterTurn;
  const oneTurn: ComposedHooks = {
    ...hooks,
    shouldStopAfterTurn: (ctx: TurnEndContext) => {
      if (stop === undefined) return true;
      const answer = stop(ctx);
      if (!isObservable(answer) && !isPromiseLike(answer)) return true;
      return from(answer).pipe(
        takeLast(1),
        map(() => true),
        defaultIfEmpty(true),
      );
    },
  };
  const prompt = options.prompt ?? 'go';
  return runAgentLoop({
    provider,
    model: options.model ?? { id: 'faux', provider: provider.id },
    history: options.history ?? [],
    prompts: [typeof prompt === 'string' ? userMessage(prompt) : prompt],
    systemPrompt: options.systemPrompt ?? '',
    tools: options.tools ?? [],
    hooks: oneTurn,
    wrappers,
  });
}
