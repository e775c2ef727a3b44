import { defaultIfEmpty, from, map, mergeScan, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/** What a turn hook answers (a `TurnAction`): the fields this rule merges. */
export interface TurnActionLike<TResponse, TMessage, TDecision extends string> {
  readonly response?: TResponse;
  readonly injectMessages?: readonly TMessage[];
  readonly decision?: TDecision;
}

/** The merged outcome: the current response, every injected message, and the winning decision (if any hook answered). */
export interface MergedTurnAction<TResponse, TMessage, TDecision extends string> {
  readonly response: TResponse;
  readonly injectMessages: readonly TMessage[];
  readonly decision: TDecision | undefined;
}

/**
 * The **chained merge** rule (`afterModelResponse`): hooks run one at a time, in list order, each seeing the current
 * response (possibly replaced by an earlier hook). A returned action's `response` replaces the current one for later
 * hooks and for what is stored; `injectMessages` are concatenated across the chain; the `decision` of the **last hook
 * that returned an action** wins — an action without a decision counts as `natural`. A hook that answers nothing
 * changes nothing and does not vote.
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
  ) => ObservableInput<TurnActionLike<TResponse, TMessage, TDecision> | undefined>,
): OperatorFunction<THook, MergedTurnAction<TResponse, TMessage, TDecision>> {
  const seed: MergedTurnAction<TResponse, TMessage, TDecision> = { response, injectMessages: [], decision: undefined };
  return (hooks) =>
    hooks.pipe(
      mergeScan(
        (merged: MergedTurnAction<TResponse, TMessage, TDecision>, hook: THook, index: number) =>
          from(invoke(hook, merged.response, index)).pipe(
            takeLast(1),
            map((action) => mergeTurnAction(merged, action, defaultDecision)),
            defaultIfEmpty(merged),
          ),
        seed,
        1,
      ),
      takeLast(1),
      defaultIfEmpty(seed),
    );
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
