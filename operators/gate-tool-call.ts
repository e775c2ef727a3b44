import type { ObservableInput, OperatorFunction } from 'rxjs';
import { foldHooks, type HookRule } from './fold-hooks.js';

/**
 * What a gate answers: `{ block: true, reason }` denies the call; a decision (`kind`) of `replace`, `pause` or `stop`
 * also ends the gate; nothing, or `kind: 'continue'`, lets the call go ahead.
 */
export interface GateDecision {
  readonly block?: boolean | undefined;
  readonly reason?: string | undefined;
  readonly kind?: string | undefined;
}

/** Whether a gate's answer decides the call: a block, or a decision other than `continue`. */
export function isFinalGateAnswer(answer: GateDecision | undefined | null): boolean {
  return answer?.block === true || (answer?.kind !== undefined && answer.kind !== 'continue');
}

const FIRST_BLOCK_WINS: HookRule<GateDecision | undefined, GateDecision | undefined | null> = {
  step: (decision, answer) => (isFinalGateAnswer(answer) ? answer! : decision),
  stop: isFinalGateAnswer,
};

/**
 * The **first block wins** rule as a reducer: the accumulator is the deciding answer (seed: `undefined`, the call
 * goes ahead); an answer with `block: true`, or a `replace`, `pause` or `stop` decision, becomes it and stops the
 * chain; any other answer (nothing, `continue`) changes nothing.
 *
 * ```
 * hooks:   (abc|)
 * a():     -u|            u: undefined (allow), or Decision.continue()
 * b():       -B|          B: { block: true }, or a replace / pause / stop decision
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
 * The **first block wins** rule (`beforeToolCall`): hooks run one at a time, in list order; the first answer that
 * decides the call — `block: true` (a denial), or a `replace`, `pause` or `stop` decision — is the result and the hooks
 * after it are never called (nor subscribed). When none decides, the result is `undefined`: the call goes ahead. It
 * is {@link foldHooks} of {@link firstBlockWinsRule}.
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
