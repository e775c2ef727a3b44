/**
 * What a middleware's hooks may do, decided once at composition: which state keys they may write (`writes`), whether
 * they only observe (`observeOnly`), and how a failing call is retried (`retry`). The checks here run only for the
 * middlewares that declare these: the composed fold tests one field of its entry and calls nothing otherwise.
 * @module
 */
import { asyncScheduler, Observable, of, type SchedulerLike } from 'rxjs';
import { isHookDecision } from '../types/decision.js';
import { ConfigurationError, isAbortError, StatePatchPermissionError, type HookName } from '../types/errors.js';
import type { StatePatch } from '../types/state.js';
import type { HookRetryPolicy, Middleware, TurnAction } from './types.js';

/** The key a patch writes when it adds or removes the context fragment `<id>`: `cubepi:fragment.<id>`. */
export const FRAGMENT_KEY_PREFIX = 'cubepi:fragment.';
/** The key a patch writes when it appends events. */
export const EVENTS_KEY = 'cubepi:events';

/** A middleware's `writes`, compiled: exact keys and `.*` prefixes (an observe-only middleware has none). */
export interface WriteRule {
  readonly exact: ReadonlySet<string>;
  /** Each a prefix with its trailing dot (`memory.` for `memory.*`). */
  readonly prefixes: readonly string[];
  /** The `writes` as declared, for the error. */
  readonly allowed: readonly string[];
  readonly observeOnly: boolean;
}

/** A middleware's `retry`, with its defaults. */
export interface RetryRule {
  readonly attempts: number;
  readonly backoffMs: (attempt: number) => number;
  readonly transient: (error: unknown) => boolean;
  readonly scheduler: SchedulerLike;
}

/** What a composed entry carries of its middleware's declarations (`undefined`/`false`: nothing to check). */
export interface EntryGuard {
  readonly writes: WriteRule | undefined;
  readonly observeOnly: boolean;
  readonly retry: RetryRule | undefined;
}

/** The guard of a hook given in the `Agent` constructor's options (and of a middleware that declares nothing). */
export const NO_GUARD: EntryGuard = Object.freeze({ writes: undefined, observeOnly: false, retry: undefined });

/** Compiles `m`'s `writes`, `observeOnly` and `retry`; throws a {@link ConfigurationError} naming `name` if invalid. */
export function entryGuard(m: Middleware, name: string): EntryGuard {
  const { writes, observeOnly, retry } = m as { writes?: unknown; observeOnly?: unknown; retry?: unknown };
  if (writes === undefined && observeOnly === undefined && retry === undefined) return NO_GUARD;
  const invalid = (what: string) => new ConfigurationError(`middleware "${name}": ${what}`);
  if (observeOnly !== undefined && observeOnly !== true) throw invalid('observeOnly must be true or absent');
  let rule: WriteRule | undefined;
  if (writes !== undefined) {
    if (!Array.isArray(writes)) throw invalid('writes must be an array of state keys');
    const exact = new Set<string>();
    const prefixes: string[] = [];
    for (const key of writes as unknown[]) {
      if (typeof key !== 'string' || key === '' || key === '.*')
        throw invalid(`writes holds ${JSON.stringify(key)}, not a state key`);
      const star = key.indexOf('*');
      if (star !== -1 && (star !== key.length - 1 || !key.endsWith('.*')))
        throw invalid(`writes holds "${key}": a wildcard is only a trailing ".*"`);
      if (star === -1) exact.add(key);
      else prefixes.push(key.slice(0, -1));
    }
    if (observeOnly === true && writes.length > 0) throw invalid('an observeOnly middleware cannot declare writes');
    rule = { exact, prefixes, allowed: Object.freeze([...(writes as string[])]), observeOnly: false };
  }
  if (observeOnly === true) rule = { exact: new Set(), prefixes: [], allowed: Object.freeze([]), observeOnly: true };
  return { writes: rule, observeOnly: observeOnly === true, retry: retry === undefined ? undefined : retryRule(retry) };

  function retryRule(policy: unknown): RetryRule {
    if (typeof policy !== 'object' || policy === null) throw invalid('retry must be an object');
    const { attempts, backoffMs, transient, scheduler } = policy as Partial<HookRetryPolicy>;
    if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1)
      throw invalid('retry.attempts must be an integer of at least 1');
    if (
      backoffMs !== undefined &&
      typeof backoffMs !== 'function' &&
      (typeof backoffMs !== 'number' || !Number.isFinite(backoffMs) || backoffMs < 0)
    )
      throw invalid('retry.backoffMs must be a number of ms (0 or more) or a function of the attempt');
    if (transient !== undefined && typeof transient !== 'function') throw invalid('retry.transient must be a function');
    const wait = backoffMs ?? 0;
    return {
      attempts,
      backoffMs: typeof wait === 'function' ? wait : () => wait,
      transient: transient ?? isRetryable,
      scheduler: scheduler ?? asyncScheduler,
    };
  }
}

/** The default of `retry.transient`: an error that says it is worth retrying (`retryable: true`). */
function isRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === true;
}

/**
 * Throws a {@link StatePatchPermissionError} unless every key `patch` writes (see {@link WriteRule}) is one `rule`
 * allows. Nothing of a refused patch is applied.
 */
export function checkWrites(producer: string, rule: WriteRule, patch: StatePatch): void {
  let offending: string[] | undefined;
  const test = (key: string) => {
    if (rule.exact.has(key)) return;
    for (const prefix of rule.prefixes) if (key.startsWith(prefix)) return;
    (offending ??= []).push(key);
  };
  if (patch.set !== undefined) for (const key of Object.keys(patch.set)) test(key);
  patch.delete?.forEach(test);
  if (patch.appendEvents !== undefined && patch.appendEvents.length > 0) test(EVENTS_KEY);
  patch.addContextFragments?.forEach((fragment) => test(FRAGMENT_KEY_PREFIX + fragment.id));
  patch.removeContextFragmentIds?.forEach((id) => test(FRAGMENT_KEY_PREFIX + id));
  if (offending !== undefined) throw new StatePatchPermissionError(producer, offending, rule.allowed, rule.observeOnly);
}

/**
 * Throws a `TypeError` saying what an observe-only middleware's checked `answer` to `hook` would change (its patch is
 * {@link checkWrites}'s): `input` is what a chained hook was given (the response, for `afterModelResponse`).
 */
export function checkObserved(hook: HookName, answer: unknown, input: unknown): void {
  if (answer === undefined || answer === null) return;
  let change: string | undefined;
  switch (hook) {
    case 'transformContext':
    case 'convertToLlm':
    case 'transformSystemPrompt':
      if (answer !== input) change = `change the ${hook === 'transformSystemPrompt' ? 'prompt' : 'messages'}`;
      break;
    case 'beforeToolCall':
    case 'onRunStart':
      if (isHookDecision(answer)) {
        if (answer.kind !== 'continue') change = `answer ${answer.kind}`;
      } else if (hook === 'beforeToolCall' && (answer as { block?: unknown }).block === true) change = 'block a call';
      break;
    case 'afterToolCall': {
      const result = answer as Record<string, unknown>;
      if (['content', 'details', 'isError', 'terminate'].some((field) => result[field] !== undefined))
        change = 'rewrite a tool result';
      break;
    }
    case 'shouldStopAfterTurn':
      if (answer === true) change = 'stop the run';
      break;
    case 'afterModelResponse': {
      const action = answer as TurnAction;
      if (action.response !== undefined && action.response !== input) change = 'replace the response';
      else if (action.injectMessages !== undefined && action.injectMessages.length > 0) change = 'inject messages';
      else if (action.decision !== undefined) change = `decide "${action.decision}"`;
      break;
    }
    case 'onRunEnd':
      break;
  }
  if (change !== undefined) throw new TypeError(`an observeOnly middleware may not ${change}`);
}

/** A retried hook's wait was cut short by the run's cancellation: goes on as `reason`, never as a hook failure. */
export class RetryCancelled {
  constructor(readonly reason: unknown) {}
}

/** Whether a failed call of a hook is made again: a transient failure, the run not cancelled. */
export function retries(rule: RetryRule, error: unknown, signal: AbortSignal | undefined): boolean {
  return !isAbortError(error) && signal?.aborted !== true && rule.transient(error);
}

/**
 * The wait before attempt `attempt + 1`: `rule.backoffMs(attempt)` ms on `rule.scheduler` (none when 0), ended by
 * `signal` with a {@link RetryCancelled}; unsubscribing cancels the scheduled task.
 */
export function backoff(rule: RetryRule, attempt: number, signal: AbortSignal | undefined): Observable<unknown> {
  const ms = rule.backoffMs(attempt);
  if (!(ms > 0)) return of(0);
  return new Observable<unknown>((subscriber) => {
    const onAbort = () => subscriber.error(new RetryCancelled(signal!.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    const task = rule.scheduler.schedule(() => {
      subscriber.next(0);
      subscriber.complete();
    }, ms);
    return () => {
      task.unsubscribe();
      signal?.removeEventListener('abort', onAbort);
    };
  });
}

let invocations = 0;

/** An invocation id where no run gives one (hooks composed and called outside a run). */
export function localInvocationId(): string {
  return `hook.${++invocations}`;
}
