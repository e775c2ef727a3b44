import { concatMap, first, from, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/** What a gate answers: `{ block: true, reason }` stops the call. */
export interface GateDecision {
  readonly block?: boolean;
  readonly reason?: string;
}

/**
 * The **first block wins** rule (`beforeToolCall`): hooks run one at a time, in list order; the first answer with
 * `block: true` is the result and the hooks after it are never called (nor subscribed). When no hook blocks the
 * result is `undefined`: the call goes ahead.
 *
 * ```
 * hooks:   (abc|)
 * a():     -u|            u: undefined (allow)
 * b():       --B|         B: { block: true }
 * result:  ----(B|)       c is never called
 * ```
 *
 * @example
 * from([rateLimiter, safetyFilter, auditLogger]).pipe(gateToolCall((hook) => hook.beforeToolCall(ctx)));
 */
export function gateToolCall<THook, TDecision extends GateDecision>(
  invoke: (hook: THook, index: number) => ObservableInput<TDecision | undefined>,
): OperatorFunction<THook, TDecision | undefined> {
  return (hooks) =>
    hooks.pipe(
      concatMap((hook, index) => from(invoke(hook, index)).pipe(takeLast(1))),
      first((decision): decision is TDecision => decision?.block === true, undefined),
    );
}
