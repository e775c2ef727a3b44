import { concatMap, defaultIfEmpty, from, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/**
 * The **last wins** rule (`convertToLlm`): only the last hook of the list runs; the others are never called. Its
 * answer is the result (`seed` when it answers nothing, or when there are no hooks).
 *
 * ```
 * hooks:   (abc|)
 * c(x):    --y|          a and b are never called
 * result:  --(y|)
 * ```
 *
 * @example
 * from(converters).pipe(lastHookWins(messages, (convert, input) => convert(input, ctx)));
 */
export function lastHookWins<THook, T>(
  seed: T,
  invoke: (hook: THook, input: T) => ObservableInput<T>,
): OperatorFunction<THook, T> {
  return (hooks) =>
    hooks.pipe(
      takeLast(1),
      concatMap((hook) => from(invoke(hook, seed)).pipe(takeLast(1), defaultIfEmpty(seed))),
      defaultIfEmpty(seed),
    );
}
