import { concatMap, first, from, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/**
 * The **any true stops** rule (`shouldStopAfterTurn`): hooks run one at a time, in list order; the first `true` is
 * the result and the hooks after it are never called. No `true` (or no hooks) gives `false`.
 *
 * ```
 * hooks:   (abc|)
 * a():     -f|
 * b():       -T|
 * result:  ---(T|)          c is never called
 * ```
 *
 * @example
 * from([maxTurns, budgetCap, sentinel]).pipe(stopWhenAny((hook) => hook.shouldStopAfterTurn(ctx)));
 */
export function stopWhenAny<THook>(
  invoke: (hook: THook, index: number) => ObservableInput<boolean | undefined>,
): OperatorFunction<THook, boolean> {
  return (hooks) =>
    hooks.pipe(
      concatMap((hook, index) => from(invoke(hook, index)).pipe(takeLast(1))),
      first((stop): stop is true => stop === true, false),
    );
}
