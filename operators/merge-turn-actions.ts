import type { ObservableInput, OperatorFunction } from 'rxjs';
import { foldHooks, type HookRule } from './fold-hooks.js';

/** What a turn hook answers (a `TurnAction`): the fields this rule merges. */
export interface TurnActionLike<TResponse, TMessage, TDecision extends string> {
  readonly response?: TResponse | undefined;
  readonly injectMessages?: readonly TMessage[] | undefined;
  readonly decision?: TDecision | undefined;
}

/** The merged outcome: the current response, every injected message, and the winning decision (if any hook answered). */
export interface MergedTurnAction<TResponse, TMessage, TDecision extends string> {
  readonly response: TResponse;
  readonly injectMessages: readonly TMessage[];
  readonly decision: TDecision | undefined;
}

/**
 * The **chained merge** rule as a reducer: the accumulator is the merged outcome (seed: the response, no injected
 * messages, no decision); each hook is given the accumulator's current `response`; an answer is folded in by
 * {@link mergeTurnAction} (its `response` replaces the current one, its `injectMessages` are appended, its `decision`
 * — `defaultDecision` when it has none — wins); an answer of nothing changes nothing and does not vote. No early stop.
 *
 * ```
 * hooks:   (ab|)
 * a(r):    -A|               A: { response: r', injectMessages: [m] }
 * b(r'):     -B|             B: { decision: 'stop' }
 * foldHooks(chainedMergeRule('natural'), { response: r, injectMessages: [], decision: undefined }, …)
 * result:  --(M|)            M: { response: r', injectMessages: [m], decision: 'stop' }
 * ```
 *
 * @example
 * const rule = chainedMergeRule<AssistantMessage, Message, TurnDecision>('natural');
 * from(reviewers).pipe(
 *   foldHooks(rule, { response, injectMessages: [], decision: undefined }, (reviewer, current) =>
 *     reviewer.afterModelResponse(current, ctx),
 *   ),
 * );
 */
export function chainedMergeRule<TResponse, TMessage, TDecision extends string>(
  defaultDecision: TDecision,
): HookRule<
  MergedTurnAction<TResponse, TMessage, TDecision>,
  TurnActionLike<TResponse, TMessage, TDecision> | undefined | null,
  TResponse
> {
  return {
    step: (merged, action) => mergeTurnAction(merged, action, defaultDecision),
    input: (merged) => merged.response,
  };
}

/**
 * The **chained merge** rule (`afterModelResponse`): hooks run one at a time, in list order, each seeing the current
 * response (possibly replaced by an earlier hook). A returned action's `response` replaces the current one for later
 * hooks and for what is stored; `injectMessages` are concatenated across the chain; the `decision` of the **last hook
 * that returned an action** wins — an action without a decision counts as `natural`. A hook that answers nothing
 * changes nothing and does not vote. It is {@link foldHooks} of {@link chainedMergeRule}.
 *
 * ```
 * hooks:   (abc|)
 * a(r):    -A|               A: { response: r', injectMessages: [m] }
 * b(r'):     -B|             B: { decision: 'loop_to_model' }
 * c(r'):       -C|           C: {} (decision defaults to 'natural')
 * result:  -----(M|)         M: { response: r', injectMessages: [m], decision: 'natural' }
 * ```
 *
 * @example
 * from([redactor, validator, logger]).pipe(mergeTurnActions(response, 'natural', (hook, current) => hook.afterModelResponse(current, ctx)));
 */
export function mergeTurnActions<THook, TResponse, TMessage, TDecision extends string>(
  response: TResponse,
  defaultDecision: TDecision,
  invoke: (
    hook: THook,
    current: TResponse,
    index: number,
  ) => ObservableInput<TurnActionLike<TResponse, TMessage, TDecision> | undefined | null>,
): OperatorFunction<THook, MergedTurnAction<TResponse, TMessage, TDecision>> {
  const seed: MergedTurnAction<TResponse, TMessage, TDecision> = { response, injectMessages: [], decision: undefined };
  return foldHooks(chainedMergeRule<TResponse, TMessage, TDecision>(defaultDecision), seed, invoke);
}

/** Folds one hook's action into the merged outcome (see {@link mergeTurnActions}). */
export function mergeTurnAction<TResponse, TMessage, TDecision extends string>(
  merged: MergedTurnAction<TResponse, TMessage, TDecision>,
  action: TurnActionLike<TResponse, TMessage, TDecision> | undefined | null,
  defaultDecision: TDecision,
): MergedTurnAction<TResponse, TMessage, TDecision> {
  if (action === undefined || action === null) return merged;
  return {
    response: action.response ?? merged.response,
    injectMessages:
      action.injectMessages === undefined || action.injectMessages.length === 0
        ? merged.injectMessages
        : [...merged.injectMessages, ...action.injectMessages],
    decision: action.decision ?? defaultDecision,
  };
}
