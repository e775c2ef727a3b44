import { defaultIfEmpty, from, mergeScan, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/**
 * The **chained** rule (`transformContext`, `transformSystemPrompt`): each hook's answer is the next hook's input; the
 * last answer is the result. A hook that answers nothing (an empty Observable) passes its input on unchanged; no hooks
 * at all give `seed`. Hooks run one at a time, in order.
 *
 * The source is the hooks, in list order; `invoke(hook, input, index)` calls one and returns its answer (the last
 * value of an Observable counts).
 *
 * ```
 * hooks:   (ab|)
 * a(x):    --y|
 * b(y):      ---z|
 * result:  -----(z|)
 * ```
 *
 * @example
 * from([trim, summarise]).pipe(chainHooks(messages, (hook, input) => hook(input, ctx)));
 */
export function chainHooks<THook, T>(
  seed: T,
  invoke: (hook: THook, input: T, index: number) => ObservableInput<T>,
): OperatorFunction<THook, T> {
  return (hooks) =>
    hooks.pipe(
      mergeScan(
        (input: T, hook: THook, index: number) =>
          from(invoke(hook, input, index)).pipe(takeLast(1), defaultIfEmpty(input)),
        seed,
        1,
      ),
      takeLast(1),
      defaultIfEmpty(seed),
    );
}
