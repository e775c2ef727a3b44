/**
 * Composing many middlewares into one function per hook, each by its own rule.
 * @module
 */
import { catchError, defer, from, isObservable, map, of, throwError, type Observable } from 'rxjs';
import { chainHooks } from '../../operators/chain-hooks.js';
import { gateToolCall } from '../../operators/gate-tool-call.js';
import { lastHookWins } from '../../operators/last-hook-wins.js';
import { mergeToolResultPatch, mergeToolResults } from '../../operators/merge-tool-results.js';
import { mergeTurnAction, mergeTurnActions, type MergedTurnAction } from '../../operators/merge-turn-actions.js';
import { stopWhenAny } from '../../operators/stop-when-any.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import { ConfigurationError, HookError, type HookName } from '../types/errors.js';
import type { AssistantMessage, Message } from '../types/messages.js';
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
  type BeforeToolCallContext,
  type BeforeToolCallResult,
  type HookContext,
  type HookResult,
  type Middleware,
  type TurnAction,
  type TurnDecision,
  type TurnEndContext,
} from './types.js';

/** How one hook is composed: its rule, the middlewares that run (in order), and those that implement it but do not. */
export interface HookChainDescription {
  readonly rule: string;
  readonly runs: readonly string[];
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

/** The result of {@link composeMiddleware}: one function per implemented hook, the onions, a description. */
export interface ComposedMiddleware {
  readonly hooks: AgentHooks;
  readonly wrappers: Pick<ComposedWrappers, 'wrapModelCall' | 'wrapToolCall'>;
  readonly description: MiddlewareDescription;
}

/** The name a hook passed to the `Agent` constructor runs under. */
export const EXPLICIT_HOOKS_NAME = 'agent options';

const RULES: { readonly [H in HookName]: string } = {
  transformContext: 'chained: each sees the previous output',
  convertToLlm: 'last wins: only the last implementation runs',
  transformSystemPrompt: 'chained: each sees the previous output',
  beforeToolCall: 'first block wins: later hooks are not called',
  afterToolCall: 'field-wise merge: later non-undefined fields win',
  shouldStopAfterTurn: 'any true stops: later hooks are not called',
  afterModelResponse: 'chained merge: responses chain, injections concatenate, the last decision wins',
};

/** One middleware's implementation of one hook. */
interface Entry {
  readonly name: string;
  readonly call: (...args: unknown[]) => unknown;
}

/**
 * Composes `middleware` (in list order) and explicit hooks into one function per hook, each by its rule:
 *
 * | hook | rule | operator |
 * | --- | --- | --- |
 * | `transformContext`, `transformSystemPrompt` | chained | {@link chainHooks} |
 * | `convertToLlm` | the last implementation is the only one that runs | {@link lastHookWins} |
 * | `beforeToolCall` | the first `{ block: true }` stops the chain | {@link gateToolCall} |
 * | `afterToolCall` | every one runs; partial results merge field by field | {@link mergeToolResults} |
 * | `shouldStopAfterTurn` | any `true` stops; the rest are not called | {@link stopWhenAny} |
 * | `afterModelResponse` | chained merge; the last returned decision wins | {@link mergeTurnActions} |
 *
 * A hook given in `explicit` (the `Agent` constructor's options) replaces every middleware's version of it. Only the
 * hooks some middleware implements are wired. Composition happens once; each composed function runs the hooks with a
 * synchronous fast path (hooks answering plain values cost no subscription) and continues through the rule's operator
 * from the first hook that answers with a Promise or an Observable.
 *
 * A hook that throws, errors or answers with the wrong shape fails with a {@link HookError} naming its middleware.
 * Throws {@link ConfigurationError} for duplicate names, a middleware that is not an object, or a hook that is not a
 * function.
 */
export function composeMiddleware(
  middleware: readonly Middleware[] = [],
  explicit: AgentHooks = {},
): ComposedMiddleware {
  const names = middlewareNames(middleware);

  const hooks: Record<string, unknown> = {};
  const description = {} as Record<HookName, HookChainDescription>;
  for (const hook of HOOK_NAMES) {
    const implementers: Entry[] = [];
    middleware.forEach((m, index) => {
      const fn = (m as Record<string, unknown>)[hook];
      if (fn === undefined) return;
      if (typeof fn !== 'function')
        throw new ConfigurationError(`middleware "${names[index]}": ${hook} must be a function`);
      implementers.push({ name: names[index]!, call: fn.bind(m) as Entry['call'] });
    });
    const explicitHook = explicit[hook];
    if (explicitHook !== undefined && typeof explicitHook !== 'function') {
      throw new ConfigurationError(`the ${hook} hook must be a function`);
    }
    let entries = implementers;
    let overridden: Entry[] = [];
    if (explicitHook !== undefined) {
      entries = [{ name: EXPLICIT_HOOKS_NAME, call: explicitHook as Entry['call'] }];
      overridden = implementers;
    } else if (hook === 'convertToLlm' && implementers.length > 1) {
      entries = implementers.slice(-1);
      overridden = implementers.slice(0, -1);
    }
    description[hook] = {
      rule: RULES[hook],
      runs: entries.map((entry) => entry.name),
      overridden: overridden.map((entry) => entry.name),
    };
    if (entries.length > 0) hooks[hook] = COMPOSERS[hook](entries);
  }
  const { layers, ...wrappers } = composeWrappers(middleware, names);
  for (const kind of ['wrapModelCall', 'wrapToolCall'] as const) {
    const chain: WrapperChainDescription = {
      rule: 'onion: outermost first, by phase, then order, then registration',
      runs: layers[kind].map((layer) => layer.name),
      overridden: [],
      layers: layers[kind],
    };
    (description as Record<string, HookChainDescription>)[kind] = chain;
  }
  return { hooks: hooks as AgentHooks, wrappers, description: description as MiddlewareDescription };
}

const COMPOSERS: { readonly [H in HookName]: (entries: readonly Entry[]) => NonNullable<AgentHooks[H]> } = {
  transformContext: (entries) => chain('transformContext', entries),
  convertToLlm: (entries) => lastWins(entries),
  transformSystemPrompt: (entries) => chain('transformSystemPrompt', entries),
  beforeToolCall: (entries) => gate(entries),
  afterToolCall: (entries) => mergeResults(entries),
  shouldStopAfterTurn: (entries) => stopAny(entries),
  afterModelResponse: (entries) => turnActions(entries),
};

/** Calls one hook synchronously; a throw becomes a HookError naming its middleware. */
function callEntry(hook: HookName, entry: Entry, args: unknown[], input: unknown): unknown {
  try {
    return entry.call(...args);
  } catch (error) {
    throw hookError(hook, entry, input, error);
  }
}

/** Checks a plain answer; a wrong shape becomes a HookError naming its middleware. */
function check<H extends HookName>(hook: H, entry: Entry, answer: unknown, input: unknown): HookAnswers[H] {
  try {
    return checkAnswer(hook, answer);
  } catch (error) {
    throw hookError(hook, entry, input, error);
  }
}

function hookError(hook: HookName, entry: Entry, input: unknown, cause: unknown): HookError {
  if (cause instanceof HookError) return cause;
  return new HookError({ middleware: entry.name, hook, inputHash: hashInput(input), cause });
}

/** Whether an answer must be waited for: a thenable or an Observable (the driver's test, so both agree). */
function isAsync(answer: unknown): answer is PromiseLike<unknown> | Observable<unknown> {
  return isObservable(answer) || isPromiseLike(answer);
}

/** An answer already obtained, as a checked Observable (for the operator path). */
function checked$<H extends HookName>(
  hook: H,
  entry: Entry,
  answer: unknown,
  input: unknown,
): Observable<HookAnswers[H]> {
  const source: Observable<unknown> = isObservable(answer)
    ? answer
    : isAsync(answer)
      ? from(answer as PromiseLike<unknown>)
      : of(answer);
  return source.pipe(
    map((value) => checkAnswer(hook, value)),
    catchError((error: unknown) => throwError(() => hookError(hook, entry, input, error))),
  );
}

/** Calls a hook lazily, for the operator path: its answer as a checked Observable. */
function invoke$<H extends HookName>(
  hook: H,
  entry: Entry,
  args: unknown[],
  input: unknown,
): Observable<HookAnswers[H]> {
  return defer(() => checked$(hook, entry, callEntry(hook, entry, args, input), input));
}

type Chained = 'transformContext' | 'transformSystemPrompt';

function chain<H extends Chained>(hook: H, entries: readonly Entry[]): NonNullable<AgentHooks[H]> {
  type T = NonNullable<HookAnswers[H]>;
  const composed = (input: T, ctx: HookContext): HookResult<T> => {
    let value = input;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const answer = callEntry(hook, entry, [value, ctx], value);
      if (isAsync(answer)) {
        const pending = answer;
        return from(entries.slice(i)).pipe(
          chainHooks<Entry, T>(value, (next, current, k) =>
            (k === 0 ? checked$(hook, next, pending, current) : invoke$(hook, next, [current, ctx], current)).pipe(
              map((checkedValue) => (checkedValue ?? current) as T),
            ),
          ),
        );
      }
      value = (check(hook, entry, answer, value) ?? value) as T;
    }
    return value;
  };
  return composed as unknown as NonNullable<AgentHooks[H]>;
}

function lastWins(entries: readonly Entry[]): NonNullable<AgentHooks['convertToLlm']> {
  // Composition kept only the last implementation; the operator states the rule for the async path.
  const entry = entries[entries.length - 1]!;
  return (input: Message[], ctx: HookContext): HookResult<Message[]> => {
    const answer = callEntry('convertToLlm', entry, [input, ctx], input);
    if (!isAsync(answer)) return check('convertToLlm', entry, answer, input) ?? input;
    return from([entry]).pipe(
      lastHookWins<Entry, Message[]>(input, (last) =>
        checked$('convertToLlm', last, answer, input).pipe(map((value) => value ?? input)),
      ),
    );
  };
}

function gate(entries: readonly Entry[]): NonNullable<AgentHooks['beforeToolCall']> {
  return (ctx: BeforeToolCallContext): HookResult<BeforeToolCallResult | undefined> => {
    const input = { toolCall: ctx.toolCall, args: ctx.args };
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const answer = callEntry('beforeToolCall', entry, [ctx], input);
      if (isAsync(answer)) {
        const pending = answer;
        return from(entries.slice(i)).pipe(
          gateToolCall<Entry, BeforeToolCallResult>((next, k) =>
            k === 0 ? checked$('beforeToolCall', next, pending, input) : invoke$('beforeToolCall', next, [ctx], input),
          ),
        );
      }
      const decision = check('beforeToolCall', entry, answer, input);
      if (decision?.block === true) return decision;
    }
    return undefined;
  };
}

function mergeResults(entries: readonly Entry[]): NonNullable<AgentHooks['afterToolCall']> {
  return (ctx: AfterToolCallContext): HookResult<AfterToolCallResult | undefined> => {
    const input = { toolCall: ctx.toolCall, args: ctx.args, result: ctx.result };
    let merged: AfterToolCallResult = {};
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const answer = callEntry('afterToolCall', entry, [ctx], input);
      if (isAsync(answer)) {
        const pending = answer;
        const before = merged;
        return from(entries.slice(i)).pipe(
          mergeToolResults<Entry, AfterToolCallResult>((next, k) =>
            k === 0 ? checked$('afterToolCall', next, pending, input) : invoke$('afterToolCall', next, [ctx], input),
          ),
          map((rest) => mergeToolResultPatch(before, rest)),
        );
      }
      merged = mergeToolResultPatch(merged, check('afterToolCall', entry, answer, input));
    }
    return merged;
  };
}

function stopAny(entries: readonly Entry[]): NonNullable<AgentHooks['shouldStopAfterTurn']> {
  return (ctx: TurnEndContext): HookResult<boolean> => {
    const input = { message: ctx.message };
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const answer = callEntry('shouldStopAfterTurn', entry, [ctx], input);
      if (isAsync(answer)) {
        const pending = answer;
        return from(entries.slice(i)).pipe(
          stopWhenAny<Entry>((next, k) =>
            k === 0
              ? checked$('shouldStopAfterTurn', next, pending, input)
              : invoke$('shouldStopAfterTurn', next, [ctx], input),
          ),
        );
      }
      if (check('shouldStopAfterTurn', entry, answer, input) === true) return true;
    }
    return false;
  };
}

type Merged = MergedTurnAction<AssistantMessage, Message, TurnDecision>;

function turnActions(entries: readonly Entry[]): NonNullable<AgentHooks['afterModelResponse']> {
  return (response: AssistantMessage, ctx: HookContext): HookResult<TurnAction | undefined> => {
    let merged: Merged = { response, injectMessages: [], decision: undefined };
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const current = merged.response;
      const answer = callEntry('afterModelResponse', entry, [current, ctx], current);
      if (isAsync(answer)) {
        const pending = answer;
        const before = merged;
        return from(entries.slice(i)).pipe(
          mergeTurnActions<Entry, AssistantMessage, Message, TurnDecision>(current, 'natural', (next, latest, k) =>
            k === 0
              ? checked$('afterModelResponse', next, pending, latest)
              : invoke$('afterModelResponse', next, [latest, ctx], latest),
          ),
          map((rest) => toTurnAction(concatMerged(before, rest))),
        );
      }
      const action = check('afterModelResponse', entry, answer, current);
      merged = mergeTurnAction(merged, action, 'natural');
    }
    return toTurnAction(merged);
  };
}

/** The synchronous prefix, then what the operator merged from the rest. */
function concatMerged(before: Merged, rest: Merged): Merged {
  return {
    response: rest.response,
    injectMessages: rest.injectMessages.length
      ? [...before.injectMessages, ...rest.injectMessages]
      : before.injectMessages,
    decision: rest.decision ?? before.decision,
  };
}

function toTurnAction(merged: Merged): TurnAction {
  return {
    response: merged.response,
    injectMessages: merged.injectMessages,
    ...(merged.decision !== undefined ? { decision: merged.decision } : {}),
  };
}
