/**
 * Composing many middlewares into one function per hook, each by its own rule.
 * @module
 */
import {
  catchError,
  defer,
  EMPTY,
  from,
  isObservable,
  map,
  of,
  retry,
  takeLast,
  throwError,
  type Observable,
} from 'rxjs';
import { chainedRule } from '../../operators/chain-hooks.js';
import { foldHooks, type HookRule } from '../../operators/fold-hooks.js';
import { firstBlockWinsRule } from '../../operators/gate-tool-call.js';
import { fieldWiseMergeRule } from '../../operators/merge-tool-results.js';
import { chainedMergeRule, type MergedTurnAction } from '../../operators/merge-turn-actions.js';
import { anyTrueStopsRule } from '../../operators/stop-when-any.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import type { RunOutcome } from '../types/agent-events.js';
import { isHookDecision, type HookDecision } from '../types/decision.js';
import { ConfigurationError, HookError, isAbortError, StatePatchError, type HookName } from '../types/errors.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import {
  HOOK_PHASES,
  type HookPhase,
  type MiddlewareChain,
  type MiddlewareChainLink,
} from '../types/middleware-chain.js';
import type { StatePatch } from '../types/state.js';
import type { AgentToolResult } from '../types/tool.js';
import {
  backoff,
  checkObserved,
  checkWrites,
  entryGuard,
  localInvocationId,
  NO_GUARD,
  retries,
  RetryCancelled,
  type EntryGuard,
} from './hook-guard.js';
import { sinkOf, type HookAttempt } from './hook-sink.js';
import { checkAnswer, type HookAnswers } from './check-answer.js';
import {
  composeWrappers,
  middlewareNames,
  type ComposedWrappers,
  type WrapperLayer,
  type WrapperName,
} from './compose-wrappers.js';
import { hashInput } from './hash-input.js';
import {
  HOOK_NAMES,
  type AfterToolCallContext,
  type AfterToolCallResult,
  type AgentHooks,
  type ComposedHooks,
  type BeforeToolCallContext,
  type BeforeToolCallResult,
  type HookContext,
  type HookResult,
  type Middleware,
  type RunEndContext,
  type TurnAction,
  type TurnDecision,
  type TurnEndContext,
} from './types.js';

/** How one hook is composed: its rule, the middlewares that run (in order), and those that implement it but do not. */
export interface HookChainDescription {
  readonly rule: string;
  readonly runs: readonly string[];
  /** The middlewares that run, in order, with their phase, order and version (`runs` is their names). */
  readonly links: readonly MiddlewareChainLink[];
  /** Implementations that never run: earlier `convertToLlm`s, or every middleware's when an explicit hook replaced them. */
  readonly overridden: readonly string[];
}

/** How a wrapper hook is composed: the onion's layers, outermost first. */
export interface WrapperChainDescription extends HookChainDescription {
  readonly layers: readonly WrapperLayer[];
}

/** The composed chain of every hook and wrapper (see `agent.describeMiddleware()`). */
export type MiddlewareDescription = { readonly [H in HookName]: HookChainDescription } & {
  readonly [W in WrapperName]: WrapperChainDescription;
};

/**
 * The result of {@link composeMiddleware}: one function per implemented hook, the onions, a description, and the
 * chain (frozen: what an Agent's `agent_start` carries).
 */
export interface ComposedMiddleware {
  readonly hooks: ComposedHooks;
  readonly wrappers: Pick<ComposedWrappers, 'wrapModelCall' | 'wrapToolCall'>;
  readonly description: MiddlewareDescription;
  readonly chain: MiddlewareChain;
}

/** The name a hook passed to the `Agent` constructor runs under. */
export const EXPLICIT_HOOKS_NAME = 'agent options';

const RULES: { readonly [H in HookName]: string } = {
  transformContext: 'chained: each sees the previous output',
  convertToLlm: 'last wins: only the last implementation runs',
  transformSystemPrompt: 'chained: each sees the previous output',
  beforeToolCall: 'first decision wins: the first denial, replace, pause or stop; later hooks are not called',
  afterToolCall: 'field-wise merge: later non-undefined fields win',
  shouldStopAfterTurn: 'any true stops: later hooks are not called',
  afterModelResponse: 'chained merge: responses chain, injections concatenate, the last decision wins',
  onRunStart: 'every one runs, in order, until one stops the run',
  onRunEnd: 'every one runs, in order',
};

/** One middleware's implementation of one hook. */
interface Entry extends EntryGuard {
  readonly name: string;
  readonly call: (...args: unknown[]) => unknown;
  /** Whether a failure drops this hook's answer (`skip`) instead of ending the run. */
  readonly skip: boolean;
  /** Where it is placed, as a HookError and the chain report it. */
  readonly link: MiddlewareChainLink;
}

/** Where a middleware's hooks are placed: its `hookPhase` and `hookOrder` (checked), and whether it declared an order. */
interface Placement {
  readonly phase: HookPhase;
  readonly phaseIndex: number;
  readonly order: number;
  readonly declaredOrder: boolean;
  readonly version: string | undefined;
}

/** The explicit hooks' place: where a middleware that declares nothing sits. */
const EXPLICIT_LINK: MiddlewareChainLink = Object.freeze({ name: EXPLICIT_HOOKS_NAME, phase: 'context', order: 0 });

/**
 * Composes `middleware` (in list order) and explicit hooks into one function per hook, each by its rule (a
 * {@link HookRule} from `cubepi/operators`, the same one its public operator folds):
 *
 * | hook | rule | operator |
 * | --- | --- | --- |
 * | `transformContext`, `transformSystemPrompt` | chained ({@link chainedRule}) | `chainHooks` |
 * | `convertToLlm` | the last implementation is the only one that runs (chained, over it alone) | `lastHookWins` |
 * | `beforeToolCall` | the first denial (`{ block: true }`), replace, pause or stop decision ends the chain ({@link firstBlockWinsRule}) | `gateToolCall` |
 * | `afterToolCall` | every one runs; partial results merge field by field ({@link fieldWiseMergeRule}) | `mergeToolResults` |
 * | `shouldStopAfterTurn` | any `true` stops; the rest are not called ({@link anyTrueStopsRule}) | `stopWhenAny` |
 * | `afterModelResponse` | chained merge; the last returned decision wins ({@link chainedMergeRule}) | `mergeTurnActions` |
 * | `onRunStart` | every one runs, in order, until one answers `stop` ({@link firstBlockWinsRule}) | `gateToolCall` |
 * | `onRunEnd` | every one runs, in order | `foldHooks` |
 *
 * State patches a hook answers with (`Decision.continue(patch)`, a result's or a turn action's `patch`, an `onRunStart`
 * or `onRunEnd` patch) are not part of the rule: each is handed to the run as it arrives, with the middleware's name as
 * its producer. A middleware declared `onError: 'skip'` has a failing hook's answer dropped (the run is told, and emits
 * `hook_error`) instead of failing the run.
 *
 * Each hook's implementers are placed by their middleware's `hookPhase` ({@link HOOK_PHASES}, `context` when absent),
 * then `hookOrder` (0 when absent), then list order: a stable sort, so a list that declares neither runs in list
 * order. `convertToLlm`'s "last wins" picks the last after sorting.
 *
 * A middleware's declarations are compiled onto its entries once, here: `writes` (a patch writing outside them is a
 * `StatePatchPermissionError`, never skipped), `observeOnly` (no patch, no answer that steers the run: a `HookError`)
 * and `retry` (a failing call is made again after its backoff; the fold moves to the operator path for it). The
 * fold checks them only for the entries that have them.
 *
 * A hook given in `explicit` (the `Agent` constructor's options) replaces every middleware's version of it. Only the
 * hooks some middleware implements are wired. Composition happens once; each composed function folds its rule over
 * the hooks synchronously while they answer with plain values (no subscription), and hands the accumulator over to
 * {@link foldHooks} with the same rule at the first hook that answers with a Promise or an Observable.
 *
 * A hook that throws, errors or answers with the wrong shape fails with a {@link HookError} naming its middleware.
 * Throws {@link ConfigurationError} for duplicate names, a middleware that is not an object, a hook that is not a
 * function, an invalid `writes`, `observeOnly` or `retry`, an unknown `hookPhase`, a `hookOrder` that is not a finite
 * number, a `version` that is not a non-empty string, and two middlewares that implement the same hook in the same phase
 * and both declare the same `hookOrder`.
 */
export function composeMiddleware(
  middleware: readonly Middleware[] = [],
  explicit: AgentHooks = {},
): ComposedMiddleware {
  const names = middlewareNames(middleware);
  const placements = middleware.map((m, index) => {
    const onError = (m as { onError?: unknown }).onError;
    if (onError !== undefined && onError !== 'stop' && onError !== 'skip')
      throw new ConfigurationError(`middleware "${names[index]}": onError must be "stop" or "skip"`);
    return placementOf(m, names[index]!);
  });
  const guards = middleware.map((m, index) => entryGuard(m, names[index]!));

  const hooks: Record<string, unknown> = {};
  const description = {} as Record<HookName, HookChainDescription>;
  for (const hook of HOOK_NAMES) {
    const implementers = placed(hook, middleware, names, placements, guards);
    const explicitHook = (explicit as Record<string, unknown>)[hook];
    if (explicitHook !== undefined && typeof explicitHook !== 'function') {
      throw new ConfigurationError(`the ${hook} hook must be a function`);
    }
    let entries = implementers;
    let overridden: Entry[] = [];
    if (explicitHook !== undefined) {
      const call = explicitHook.bind(explicit) as Entry['call'];
      entries = [{ name: EXPLICIT_HOOKS_NAME, call, skip: false, link: EXPLICIT_LINK, ...NO_GUARD }];
      overridden = implementers;
    } else if (hook === 'convertToLlm' && implementers.length > 1) {
      entries = implementers.slice(-1);
      overridden = implementers.slice(0, -1);
    }
    description[hook] = {
      rule: RULES[hook],
      runs: entries.map((entry) => entry.name),
      links: Object.freeze(entries.map((entry) => entry.link)),
      overridden: overridden.map((entry) => entry.name),
    };
    if (entries.length > 0) hooks[hook] = COMPOSERS[hook](entries);
  }
  const { layers, ...wrappers } = composeWrappers(middleware, names);
  for (const kind of ['wrapModelCall', 'wrapToolCall'] as const) {
    const chain: WrapperChainDescription = {
      rule: 'onion: outermost first, by phase, then order, then registration',
      runs: layers[kind].map((layer) => layer.name),
      links: Object.freeze(
        layers[kind].map(({ name, phase, order, version }) =>
          Object.freeze(version === undefined ? { name, phase, order } : { name, phase, order, version }),
        ),
      ),
      overridden: [],
      layers: layers[kind],
    };
    (description as Record<string, HookChainDescription>)[kind] = chain;
  }
  const described = description as MiddlewareDescription;
  return { hooks: hooks, wrappers, description: described, chain: chainOf(described) };
}

/** The chain an Agent announces: the links of every hook and wrapper that runs someone, frozen. */
function chainOf(description: MiddlewareDescription): MiddlewareChain {
  const chain: Record<string, readonly MiddlewareChainLink[]> = {};
  for (const hook of [...HOOK_NAMES, 'wrapModelCall', 'wrapToolCall'] as const) {
    const links = description[hook].links;
    if (links.length > 0) chain[hook] = links;
  }
  return Object.freeze(chain);
}

/**
 * A middleware's placement, checked: `hookPhase` one of {@link HOOK_PHASES}, `hookOrder` a finite number, `version` a
 * non-empty string (each when given).
 */
function placementOf(m: Middleware, name: string): Placement {
  const { hookPhase, hookOrder, version } = m as { hookPhase?: unknown; hookOrder?: unknown; version?: unknown };
  const phase = hookPhase ?? 'context';
  const phaseIndex = HOOK_PHASES.indexOf(phase as HookPhase);
  if (phaseIndex < 0) {
    throw new ConfigurationError(
      `middleware "${name}": unknown hookPhase ${typeof phase === 'string' ? JSON.stringify(phase) : typeof phase} (one of ${HOOK_PHASES.join(', ')})`,
    );
  }
  if (hookOrder !== undefined && (typeof hookOrder !== 'number' || !Number.isFinite(hookOrder)))
    throw new ConfigurationError(`middleware "${name}": hookOrder must be a finite number`);
  if (version !== undefined && (typeof version !== 'string' || version === ''))
    throw new ConfigurationError(`middleware "${name}": version must be a non-empty string`);
  return {
    phase: phase as HookPhase,
    phaseIndex,
    order: hookOrder ?? 0,
    declaredOrder: hookOrder !== undefined,
    version,
  };
}

/**
 * The implementers of `hook`, sorted by phase, then order, then list order (stable). Throws {@link ConfigurationError}
 * for a hook that is not a function, and for two neighbours in the same phase that both declare the same order.
 */
function placed(
  hook: HookName,
  middleware: readonly Middleware[],
  names: readonly string[],
  placements: readonly Placement[],
  guards: readonly EntryGuard[],
): Entry[] {
  const found: { entry: Entry; placement: Placement }[] = [];
  middleware.forEach((m, index) => {
    const fn = (m as Record<string, unknown>)[hook];
    if (fn === undefined) return;
    const name = names[index]!;
    if (typeof fn !== 'function') throw new ConfigurationError(`middleware "${name}": ${hook} must be a function`);
    const placement = placements[index]!;
    const { phase, order, version } = placement;
    const link = Object.freeze(version === undefined ? { name, phase, order } : { name, phase, order, version });
    const { writes, observeOnly, retry } = guards[index]!;
    const call = fn.bind(m) as Entry['call'];
    found.push({
      entry: { name, call, skip: m.onError === 'skip', link, writes, observeOnly, retry },
      placement,
    });
  });
  // Array.prototype.sort is stable: equal phase and order keep list order.
  found.sort((a, b) => a.placement.phaseIndex - b.placement.phaseIndex || a.placement.order - b.placement.order);
  // Only two explicit, equal declarations conflict (an undeclared order means "wherever the list puts me"): within a
  // run of equal phase and order, the first that declared it against any later one that does.
  let before: (typeof found)[number] | undefined;
  for (const after of found) {
    if (!after.placement.declaredOrder) continue;
    if (
      before === undefined ||
      before.placement.phase !== after.placement.phase ||
      before.placement.order !== after.placement.order
    ) {
      before = after;
    } else {
      throw new ConfigurationError(
        `middlewares "${before.entry.name}" and "${after.entry.name}" both declare ${hook} at phase ` +
          `${after.placement.phase}, order ${after.placement.order}; give one a different hookOrder`,
      );
    }
  }
  return found.map(({ entry }) => entry);
}

const COMPOSERS: { readonly [H in HookName]: (entries: readonly Entry[]) => NonNullable<AgentHooks[H]> } = {
  transformContext: (entries) => chain('transformContext', entries),
  // Composition kept only the last implementation: the chained rule over that one hook is the last-wins rule.
  convertToLlm: (entries) => chain('convertToLlm', entries),
  transformSystemPrompt: (entries) => chain('transformSystemPrompt', entries),
  beforeToolCall: (entries) => {
    const rule = firstBlockWinsRule<BeforeToolCallResult | HookDecision<AgentToolResult>>();
    return (ctx: BeforeToolCallContext) =>
      foldEntries('beforeToolCall', rule, entries, undefined, ctx, withContext, toolCallInput);
  },
  afterToolCall: (entries) => {
    const rule = fieldWiseMergeRule<AfterToolCallResult>();
    return (ctx: AfterToolCallContext) =>
      foldEntries('afterToolCall', rule, entries, {}, ctx, withContext, toolResultInput);
  },
  shouldStopAfterTurn: (entries) => {
    const rule = anyTrueStopsRule();
    return (ctx: TurnEndContext) =>
      foldEntries('shouldStopAfterTurn', rule, entries, false, ctx, withContext, turnEndInput);
  },
  afterModelResponse: (entries) => {
    const rule = chainedMergeRule<AssistantMessage, Message, TurnDecision>('natural');
    return (response: AssistantMessage, ctx: HookContext): HookResult<TurnAction> => {
      const seed: Merged = { response, injectMessages: [], decision: undefined };
      const merged = foldEntries('afterModelResponse', rule, entries, seed, ctx, withInput, givenInput);
      return isObservable(merged) ? merged.pipe(map(toTurnAction)) : toTurnAction(merged);
    };
  },
  onRunStart: (entries) => {
    // A patch is no gate answer (it has no `kind`): only a `stop` decision ends the chain.
    const rule = firstBlockWinsRule() as unknown as HookRule<HookAnswers['onRunStart'], HookAnswers['onRunStart']>;
    return (ctx: HookContext) => foldEntries('onRunStart', rule, entries, undefined, ctx, withContext, noInput);
  },
  onRunEnd: (entries) => (ctx: RunEndContext, outcome: RunOutcome) =>
    foldEntries(
      'onRunEnd',
      EVERY_ONE_RUNS,
      entries,
      undefined,
      ctx,
      (entry: Entry, _input: unknown, given: RunEndContext) => entry.call(given, outcome),
      noInput,
    ),
};

/** Every hook runs and none decides anything (what they answer is reported to the run: their patches). */
const EVERY_ONE_RUNS: HookRule<undefined, unknown> = { step: () => undefined };

type Chained = 'transformContext' | 'convertToLlm' | 'transformSystemPrompt';

function chain<H extends Chained>(hook: H, entries: readonly Entry[]): NonNullable<AgentHooks[H]> {
  type T = NonNullable<HookAnswers[H]>;
  const rule = chainedRule<T>() as HookRule<T, HookAnswers[H]>;
  const composed = (input: T, ctx: HookContext): HookResult<T> =>
    foldEntries(hook, rule, entries, input, ctx, withInput, givenInput);
  return composed as unknown as NonNullable<AgentHooks[H]>;
}

/** How a hook is called: with what the rule gives it and the context (chained hooks), or with the context alone. */
const withInput = (entry: Entry, input: unknown, ctx: unknown): unknown => entry.call(input, ctx);
const withContext = (entry: Entry, _input: unknown, ctx: unknown): unknown => entry.call(ctx);
/** What a HookError hashes: what a chained hook was given; the call (and result, message) for the others. */
const givenInput = (input: unknown): unknown => input;
const toolCallInput = (_: unknown, { toolCall, args }: BeforeToolCallContext) => ({ toolCall, args });
const toolResultInput = (_: unknown, { toolCall, args, result }: AfterToolCallContext) => ({ toolCall, args, result });
const turnEndInput = (_: unknown, { message }: TurnEndContext) => ({ message });
const noInput = (): undefined => undefined;

/**
 * Runs `entries` by `rule` from `seed`: synchronously while the hooks answer with plain values (no subscription, no
 * operator), and from the first hook that answers with a Promise or an Observable, through {@link foldHooks} seeded
 * with the accumulator so far. Both fold the same rule — its step, its early stop, what it gives the next hook — so the
 * fast path is the operator's result, reached early. `call(entry, input, ctx)` calls one hook with what the rule gives
 * it; `errorInput(input, ctx)` is what a HookError hashes (computed only on failure).
 */
function foldEntries<H extends HookName, TAcc, TInput, TCtx>(
  hook: H,
  rule: HookRule<TAcc, HookAnswers[H], TInput>,
  entries: readonly Entry[],
  seed: TAcc,
  ctx: TCtx,
  call: (entry: Entry, input: TInput, ctx: TCtx) => unknown,
  errorInput: (input: TInput, ctx: TCtx) => unknown,
): TAcc | Observable<TAcc> {
  const { step, stop, input: inputOf } = rule;
  let acc = seed;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const input = inputOf === undefined ? (acc as unknown as TInput) : inputOf(acc);
    let answer: unknown = UNANSWERED;
    try {
      answer = call(entry, input, ctx);
      if (isAsync(answer)) return handOver(hook, rule, entries, i, acc, ctx, call, errorInput, answer, input);
      answer = checkAnswer(hook, answer);
      if (entry.observeOnly) checkObserved(hook, answer, input);
      reportPatch(hook, entry, answer, ctx);
    } catch (error) {
      // A call that threw, of a middleware with `retry`: the retries wait, so the operator path takes over.
      if (answer === UNANSWERED && entry.retry !== undefined)
        return handOver(hook, rule, entries, i, acc, ctx, call, errorInput, new FailedCall(error), input);
      const failure = hookError(hook, entry, errorInput(input, ctx), error);
      if (!entry.skip || failure instanceof StatePatchError) throw failure;
      sinkOf(ctx)?.skipped(failure);
      continue;
    }
    const checked = answer as HookAnswers[H];
    acc = step(acc, checked);
    if (stop !== undefined && stop(acc)) return acc;
  }
  return acc;
}

/**
 * The fast path's hand-over: the hooks from `entries[i]` on, folded by the operator from `acc`; `entries[i]` has
 * already answered (`pending`, given `input`), the others are called as their turn comes. (A function of its own so
 * that {@link foldEntries} creates no closure: its variables stay on the stack.)
 */
function handOver<H extends HookName, TAcc, TInput, TCtx>(
  hook: H,
  rule: HookRule<TAcc, HookAnswers[H], TInput>,
  entries: readonly Entry[],
  i: number,
  acc: TAcc,
  ctx: TCtx,
  call: (entry: Entry, input: TInput, ctx: TCtx) => unknown,
  errorInput: (input: TInput, ctx: TCtx) => unknown,
  pending: unknown,
  input: TInput,
): Observable<TAcc> {
  const toHookError = (entry: Entry, given: TInput) => (error: unknown) =>
    hookError(hook, entry, errorInput(given, ctx), error);
  return from(entries.slice(i)).pipe(
    foldHooks(rule, acc, (next: Entry, nextInput: TInput, k) => {
      const given = k === 0 ? input : nextInput;
      const again = () => call(next, given, ctx);
      return answer$(hook, next, ctx, k === 0 ? () => pending : again, again, given, toHookError(next, given));
    }),
  );
}

/** What a hook's fast-path call answered before it was called again: not an answer (the call threw `error`). */
const UNANSWERED: unique symbol = Symbol('unanswered');

/** A fast-path call that threw, handed over for its retries. */
class FailedCall {
  constructor(readonly error: unknown) {}
}

/**
 * Hands a hook's state patch (`Decision.continue(patch)`, a result's or turn action's `patch`, an `onRunStart` or
 * `onRunEnd` patch) to the run's sink, with the middleware as its producer. Without a sink (hooks composed and called
 * outside a run) a patch has nowhere to go and is dropped.
 */
function reportPatch(hook: HookName, entry: Entry, answer: unknown, ctx: unknown): void {
  if (answer === undefined || answer === null) return;
  let patch: StatePatch | undefined;
  switch (hook) {
    case 'beforeToolCall':
    case 'onRunStart':
      if (isHookDecision(answer)) patch = answer.kind === 'continue' ? answer.patch : undefined;
      else if (hook === 'onRunStart') patch = answer;
      break;
    case 'afterToolCall':
    case 'afterModelResponse':
      patch = (answer as { patch?: StatePatch }).patch;
      break;
    case 'onRunEnd':
      patch = answer;
      break;
    default:
      return;
  }
  if (patch === undefined) return;
  if (entry.writes !== undefined) checkWrites(entry.name, entry.writes, patch);
  sinkOf(ctx)?.patch(entry.name, patch);
}

/** A hook's failure, named after its middleware; a refused patch (the run's verdict on it) stays as it is. */
function hookError(hook: HookName, entry: Entry, input: unknown, cause: unknown): HookError | StatePatchError {
  if (cause instanceof HookError || cause instanceof StatePatchError) return cause;
  return new HookError({ middleware: entry.name, hook, phase: entry.link.phase, inputHash: hashInput(input), cause });
}

/** Whether an answer must be waited for: a thenable or an Observable (the driver's test, so both agree). */
function isAsync(answer: unknown): answer is PromiseLike<unknown> | Observable<unknown> {
  return isObservable(answer) || isPromiseLike(answer);
}

/**
 * A hook's answer as a checked Observable (for the operator path), `first()` being called on subscription. A call
 * that throws, an error or a wrong shape errors it with `toHookError(error)`. For a middleware with `retry`, a failed
 * call is made again with `again()` (see {@link retried$}).
 */
function answer$<H extends HookName>(
  hook: H,
  entry: Entry,
  ctx: unknown,
  first: () => unknown,
  again: () => unknown,
  input: unknown,
  toHookError: (error: unknown) => HookError | StatePatchError,
): Observable<HookAnswers[H]> {
  if (entry.retry !== undefined) return retried$(hook, entry, ctx, first, again, input, toHookError);
  return defer(() => answerOf(first())).pipe(
    takeLast(1),
    map((value) => checked(hook, entry, ctx, value, input)),
    catchError((error: unknown) => failed(entry, ctx, toHookError(error), undefined)),
  );
}

/** What a call answered, as an Observable (a fast-path call that threw, as its error). */
function answerOf(value: unknown): Observable<unknown> {
  if (value instanceof FailedCall) return throwError(() => value.error);
  return isObservable(value) ? value : isPromiseLike(value) ? from(value) : of(value);
}

/** An answer checked for its shape, for an observe-only middleware's limits, and with its patch reported. */
function checked<H extends HookName>(hook: H, entry: Entry, ctx: unknown, value: unknown, input: unknown) {
  const answer = checkAnswer(hook, value);
  if (entry.observeOnly) checkObserved(hook, answer, input);
  reportPatch(hook, entry, answer, ctx);
  return answer;
}

/**
 * A failed hook, as the fold goes on: the failure (a stop, or a refused patch even under `skip`), or no answer (the
 * rule keeps what it had) with the run told. `attempt`: the failure was the last call of a retried hook.
 */
function failed(
  entry: Entry,
  ctx: unknown,
  failure: HookError | StatePatchError,
  attempt: HookAttempt | undefined,
): Observable<never> {
  if (!entry.skip || failure instanceof StatePatchError) {
    if (attempt !== undefined && failure instanceof HookError) sinkOf(ctx)?.attemptFailed?.(failure, attempt);
    return throwError(() => failure);
  }
  sinkOf(ctx)?.skipped(failure, attempt);
  return EMPTY;
}

/**
 * {@link answer$} for a middleware with `retry`: the call is made again (`again()`) while it fails transiently, up to
 * `attempts` calls, after each backoff (on the policy's scheduler, so virtual time drives it under test). Each failed
 * call is reported with its attempt and the invocation's id; the last one fails as without `retry`. A cancellation —
 * of the run (its signal) during a backoff, or an abort error — goes on as it is; unsubscribing tears the wait down.
 */
function retried$<H extends HookName>(
  hook: H,
  entry: Entry,
  ctx: unknown,
  first: () => unknown,
  again: () => unknown,
  input: unknown,
  toHookError: (error: unknown) => HookError | StatePatchError,
): Observable<HookAnswers[H]> {
  const policy = entry.retry!;
  return defer(() => {
    const sink = sinkOf(ctx);
    const signal = (ctx as { signal?: AbortSignal } | undefined)?.signal;
    const invocationId = sink?.invocationId?.() ?? localInvocationId();
    let attempt = 0;
    const call$ = defer(() => {
      attempt++;
      return answerOf(attempt === 1 ? first() : again());
    }).pipe(takeLast(1));
    return call$.pipe(
      retry({
        count: policy.attempts - 1,
        delay: (error: unknown) => {
          if (!retries(policy, error, signal)) return throwError(() => error);
          const failure = toHookError(error);
          if (failure instanceof HookError) sink?.attemptFailed?.(failure, { attempt, invocationId, willRetry: true });
          return backoff(policy, attempt, signal);
        },
      }),
      map((value) => checked(hook, entry, ctx, value, input)),
      catchError((error: unknown) => {
        if (error instanceof RetryCancelled) return throwError(() => error.reason);
        // A cancellation is no failed attempt: it fails (or is skipped) as without `retry`, and is not reported.
        const cancelled = isAbortError(error) || signal?.aborted === true;
        const report = cancelled ? undefined : { attempt, invocationId, willRetry: false };
        return failed(entry, ctx, toHookError(error), report);
      }),
    );
  });
}

type Merged = MergedTurnAction<AssistantMessage, Message, TurnDecision>;

function toTurnAction(merged: Merged): TurnAction {
  return {
    response: merged.response,
    injectMessages: merged.injectMessages,
    ...(merged.decision !== undefined ? { decision: merged.decision } : {}),
  };
}
