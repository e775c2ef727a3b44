import { from, map, mergeMap, takeLast, type ObservableInput, type OperatorFunction } from 'rxjs';

/** One call's outcome, tagged with the call's position in the model's order. */
export interface IndexedOutcome<T> {
  readonly index: number;
  readonly outcome: T;
}

/**
 * Executes tool calls concurrently, at most `concurrency` at a time, and emits each call's outcome as soon as it
 * completes (completion order), tagged with the call's index in the source (the model's order), so the caller can
 * restore that order explicitly. The outcome of a call is the last value of `execute(call, index)`; a call that
 * completes without a value emits nothing.
 *
 * `execute` is where failures become values: an error from one call's Observable errors the whole batch and tears
 * down its siblings, so a tool's failure should already be an error result by then.
 *
 * This is what the agent loop runs for a parallel batch (two or more calls that passed validation and
 * `beforeToolCall`, with `concurrency` the agent's `toolConcurrency`): it records each outcome at its index as it
 * arrives, so `tool_execution_end` fires in completion order while the result messages keep the model's order.
 *
 * ```
 * source:   (abc|)
 * execute:  a: ----A|   b: -B|   c: --C|          (concurrency 2)
 * result:   -B---A--C|        as { index, outcome }: {1,B} {0,A} {2,C}
 * ```
 *
 * @example
 * from(calls).pipe(executeToolCalls((call) => runTool$(call), 4)).subscribe(({ index, outcome }) => {
 *   results[index] = outcome;
 * });
 */
export function executeToolCalls<TCall, TOutcome>(
  execute: (call: TCall, index: number) => ObservableInput<TOutcome>,
  concurrency = Infinity,
): OperatorFunction<TCall, IndexedOutcome<TOutcome>> {
  return mergeMap(
    (call: TCall, index: number) =>
      from(execute(call, index)).pipe(
        takeLast(1),
        map((outcome) => ({ index, outcome })),
      ),
    concurrency,
  );
}
