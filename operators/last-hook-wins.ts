import { takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';
import { chainedRule } from './chain-hooks.js';
import { foldHooks } from './fold-hooks.js';

/**
 * The **last wins** rule (`convertToLlm`): only the last hook of the list runs; the others are never called. Its
 * answer is the result (`seed` when it answers nothing — `undefined`, `null` or no value — or when there are no
 * hooks). It is {@link chainedRule} over the last hook alone.
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
  invoke: (hook: THook, input: T) => ObservableInput<T | undefined | null>,
): OperatorFunction<THook, T> {
  return (hooks) =>
    hooks.pipe(
      takeLast(1),
      foldHooks(chainedRule<T>(), seed, (hook: THook, input: T) => invoke(hook, input)),
    );
}
