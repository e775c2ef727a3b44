import type { ObservableInput, OperatorFunction } from 'rxjs';
import { foldHooks, type HookRule } from './fold-hooks.js';

/** What a gate answers: `{ block: true, reason }` stops the call. */
export interface GateDecision {
  readonly block?: boolean | undefined;
  readonly reason?: string | undefined;
}

const FIRST_BLOCK_WINS: HookRule<GateDecision | undefined, GateDecision | undefined | null> = {
  step: (decision, answer) => (answer?.block === true ? answer : decision),
  stop: (decision) => decision?.block === true,
};

/**
 * The **first block wins** rule as a reducer: the accumulator is the blocking decision (seed: `undefined`, the call
 * goes ahead); an answer with `block: true` becomes it, and stops the chain; any other answer changes nothing.
 *
 * ```
 * hooks:   (abc|)
 * a():     -u|            u: undefined (allow)
 * b():       -B|          B: { block: true }
 * foldHooks(firstBlockWinsRule(), undefined, …)
 * result:  ---(B|)        c is never called
 * ```
 *
 * @example
 * from(gates).pipe(foldHooks(firstBlockWinsRule(), undefined, (gate) => gate.beforeToolCall(ctx)));
 */
export function firstBlockWinsRule<TDecision extends GateDecision>(): HookRule<
  TDecision | undefined,
  TDecision | undefined | null
> {
  return FIRST_BLOCK_WINS as HookRule<TDecision | undefined, TDecision | undefined | null>;
}

/**
 * The **first block wins** rule (`beforeToolCall`): hooks run one at a time, in list order; the first answer with
 * `block: true` is the result and the hooks after it are never called (nor subscribed). When no hook blocks the
 * result is `undefined`: the call goes ahead. It is {@link foldHooks} of {@link firstBlockWinsRule}.
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
  invoke: (hook: THook, index: number) => ObservableInput<TDecision | undefined | null>,
): OperatorFunction<THook, TDecision | undefined> {
  return foldHooks(firstBlockWinsRule<TDecision>(), undefined, (hook: THook, _decision, index) => invoke(hook, index));
}
