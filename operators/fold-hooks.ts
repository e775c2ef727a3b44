import {
  defaultIfEmpty,
  from,
  map,
  mergeScan,
  takeLast,
  takeWhile,
  type ObservableInput,
  type OperatorFunction,
} from 'rxjs';

/**
 * A composition rule, written once as a reducer over the hooks' answers in list order. The accumulator starts at a
 * seed (given to {@link foldHooks}); each hook's answer is folded in by `step`; once `stop` holds, the accumulator is
 * the result and the hooks after it are never called. A chained rule says with `input` what the next hook is given.
 *
 * cubepi derives both ways of running a rule from this one object: the public operator ({@link foldHooks} under
 * `chainHooks`, `gateToolCall`, …) and the synchronous fast path its composed middleware takes while hooks answer with
 * plain values. A property test holds the two together.
 *
 * ```
 * hooks:   (abc|)
 * a(s):    -x|               step(seed, x) = s1
 * b(s1):     -y|             step(s1, y) = s2, and stop(s2) holds
 * result:  ---(s2|)          c is never called
 * ```
 *
 * @example
 * // "the first hook that answers a number wins"
 * const firstNumber: HookRule<number | undefined, number | undefined> = {
 *   step: (_acc, answer) => answer,
 *   stop: (acc) => acc !== undefined,
 * };
 * from(lookups).pipe(foldHooks(firstNumber, undefined, (lookup) => lookup(key)));
 */
export interface HookRule<TAcc, TAnswer, TInput = TAcc> {
  /**
   * Folds one hook's answer into the accumulator. A hook that answers no value at all (an empty Observable) is not
   * folded; of an Observable that answers several, the last counts.
   */
  readonly step: (acc: TAcc, answer: TAnswer) => TAcc;
  /** Early stop: once the accumulator satisfies it, it is the result and the hooks after are never called. */
  readonly stop?: ((acc: TAcc) => boolean) | undefined;
  /** What the next hook is given, taken from the accumulator (chained rules); without it, the accumulator itself. */
  readonly input?: ((acc: TAcc) => TInput) | undefined;
}

/**
 * Runs hooks by a {@link HookRule}: one at a time, in source order (`mergeScan` with a concurrency of 1), folding each
 * answer into the accumulator with `rule.step`, and stopping at the first accumulator that satisfies `rule.stop`
 * (`takeWhile`, inclusive: the hooks after it are never called, nor subscribed). Emits the final accumulator once and
 * completes; no hooks at all give `seed`.
 *
 * The source is the hooks, in list order; `invoke(hook, input, index)` calls one with what the rule gives it
 * (`rule.input(acc)`, or the accumulator) and returns its answer: the last value of an Observable counts, an empty
 * one leaves the accumulator as it was. An error from `invoke`, an answer or `rule.step` errors the result;
 * unsubscribing tears down the hook in flight and calls no other.
 *
 * ```
 * hooks:   (ab|)
 * a(s):    --x|
 * b(s1):     ---y|
 * result:  -----(r|)        r = step(step(seed, x), y)
 * ```
 *
 * @example
 * from([trim, summarise]).pipe(foldHooks(chainedRule<Message[]>(), messages, (hook, input) => hook(input, ctx)));
 */
export function foldHooks<THook, TAcc, TAnswer, TInput = TAcc>(
  rule: HookRule<TAcc, TAnswer, TInput>,
  seed: TAcc,
  invoke: (hook: THook, input: TInput, index: number) => ObservableInput<TAnswer>,
): OperatorFunction<THook, TAcc> {
  const { step, stop, input } = rule;
  return (hooks) => {
    const folded = hooks.pipe(
      mergeScan(
        (acc: TAcc, hook: THook, index: number) =>
          from(invoke(hook, input === undefined ? (acc as unknown as TInput) : input(acc), index)).pipe(
            takeLast(1),
            map((answer) => step(acc, answer)),
            defaultIfEmpty(acc),
          ),
        seed,
        1,
      ),
    );
    return (stop === undefined ? folded : folded.pipe(takeWhile((acc) => !stop(acc), true))).pipe(
      takeLast(1),
      defaultIfEmpty(seed),
    );
  };
}
