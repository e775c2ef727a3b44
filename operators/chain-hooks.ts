import type { ObservableInput, OperatorFunction } from 'rxjs';
import { foldHooks, type HookRule } from './fold-hooks.js';

const CHAINED: HookRule<unknown, unknown> = { step: (value, answer) => answer ?? value };

/**
 * The **chained** rule as a reducer: the accumulator is the value being transformed (seed: the input); each answer
 * replaces it and is what the next hook is given; an answer of nothing (`undefined`, `null`, or no value) leaves it.
 * No early stop.
 *
 * ```
 * hooks:   (ab|)
 * a(x):    -u|               u: undefined (x passes on)
 * b(x):      -y|
 * foldHooks(chainedRule(), x, …)
 * result:  ---(y|)
 * ```
 *
 * @example
 * from([trim, summarise]).pipe(foldHooks(chainedRule<Message[]>(), messages, (hook, input) => hook(input, ctx)));
 */
export function chainedRule<T>(): HookRule<T, T | undefined | null> {
  return CHAINED as HookRule<T, T | undefined | null>;
}

/**
 * The **chained** rule (`transformContext`, `transformSystemPrompt`): each hook's answer is the next hook's input; the
 * last answer is the result. A hook that answers nothing (`undefined`, `null` or an empty Observable) passes its
 * input on unchanged; no hooks at all give `seed`. Hooks run one at a time, in order. It is {@link foldHooks} of
 * {@link chainedRule}.
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
  invoke: (hook: THook, input: T, index: number) => ObservableInput<T | undefined | null>,
): OperatorFunction<THook, T> {
  return foldHooks(chainedRule<T>(), seed, invoke);
}
