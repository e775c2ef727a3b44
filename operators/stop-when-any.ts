import type { ObservableInput, OperatorFunction } from 'rxjs';
import { foldHooks, type HookRule } from './fold-hooks.js';

const ANY_TRUE_STOPS: HookRule<boolean, boolean | undefined | null> = {
  step: (stop, answer) => stop || answer === true,
  stop: (stop) => stop,
};

/**
 * The **any true stops** rule as a reducer: the accumulator is whether to stop (seed: `false`); an answer of `true`
 * makes it `true` and stops the chain; anything else (`false`, nothing) changes nothing.
 *
 * ```
 * hooks:   (abc|)
 * a():     -f|
 * b():       -T|
 * foldHooks(anyTrueStopsRule(), false, …)
 * result:  ---(T|)          c is never called
 * ```
 *
 * @example
 * from(sentinels).pipe(foldHooks(anyTrueStopsRule(), false, (sentinel) => sentinel.shouldStopAfterTurn(ctx)));
 */
export function anyTrueStopsRule(): HookRule<boolean, boolean | undefined | null> {
  return ANY_TRUE_STOPS;
}

/**
 * The **any true stops** rule (`shouldStopAfterTurn`): hooks run one at a time, in list order; the first `true` is
 * the result and the hooks after it are never called. No `true` (or no hooks) gives `false`. It is
 * {@link foldHooks} of {@link anyTrueStopsRule}.
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
  invoke: (hook: THook, index: number) => ObservableInput<boolean | undefined | null>,
): OperatorFunction<THook, boolean> {
  return foldHooks(anyTrueStopsRule(), false, (hook: THook, _stop, index) => invoke(hook, index));
}
