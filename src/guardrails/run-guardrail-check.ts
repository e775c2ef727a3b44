/**
 * Running one guardrail check: its own cancellation, the run's side model call, a bound on how long it may take, and a
 * check of its answer's shape. Shared by `inputGuardrail`, `outputGuardrail` and `toolGuardrail`. Browser-safe.
 * @module
 */
import {
  defaultIfEmpty,
  from,
  isObservable,
  map,
  Observable,
  of,
  race,
  takeLast,
  timer,
  type ObservableInput,
} from 'rxjs';
import { sinkOf } from '../middleware/hook-sink.js';
import type { HookContext } from '../middleware/hook-context.js';
import { ConfigurationError, InvalidInputError } from '../types/errors.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import type { GuardrailVerdict, TextCheckContext } from './verdict.js';

/** A check's answer: a verdict, a Promise of one, or an Observable whose last value is one. */
export type GuardrailAnswer = GuardrailVerdict | PromiseLike<GuardrailVerdict> | Observable<GuardrailVerdict>;

/** What settling a check gave: its verdict, or `timeout` when it did not answer within its bound. */
export type CheckSettled = GuardrailVerdict | 'timeout';

/** The default bound on one guardrail check. */
export const DEFAULT_GUARDRAIL_TIMEOUT_MS = 30_000;

/**
 * Runs `check` for the hook context `ctx` as a cold Observable of one value: its verdict, or `timeout` after
 * `timeoutMs`. The check's signal fires when the run is cancelled, when it timed out, and on unsubscribe. A check that
 * throws, fails, answers nothing or answers something that is not a verdict errors the Observable (the wrapper's
 * error: the run's `HookError`).
 */
export function runGuardrailCheck(
  name: string,
  ctx: HookContext,
  timeoutMs: number,
  check: (context: TextCheckContext) => GuardrailAnswer,
): Observable<CheckSettled> {
  return new Observable<CheckSettled>((subscriber) => {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(ctx.signal.reason);
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort, { once: true });
    const sink = sinkOf(ctx);
    const purpose = `guardrail:${name}`;
    const context: TextCheckContext = {
      signal: controller.signal,
      callModel:
        sink?.callModel === undefined
          ? undefined
          : (request) => sink.callModel!(request, purpose, sink.invocationId?.() ?? purpose),
    };
    let answer: GuardrailAnswer;
    try {
      answer = check(context);
    } catch (error) {
      subscriber.error(error);
      return () => ctx.signal.removeEventListener('abort', onAbort);
    }
    const verdict$: ObservableInput<GuardrailVerdict | undefined> = isObservable(answer)
      ? // An Observable that answers nothing is not a pass: `undefined` fails the verdict check below.
        answer.pipe(takeLast(1), defaultIfEmpty(undefined))
      : isPromiseLike(answer)
        ? from(answer)
        : of(answer);
    const subscription = race(
      from(verdict$).pipe(map((verdict) => checkedVerdict(name, verdict))),
      timer(timeoutMs).pipe(map((): CheckSettled => 'timeout')),
    ).subscribe(subscriber);
    return () => {
      subscription.unsubscribe();
      ctx.signal.removeEventListener('abort', onAbort);
      // The answer is no longer wanted (settled, timed out or cancelled): work the check started stops. One reason for
      // every check: `abort()` without one builds a DOMException (a stack trace) per check, most of a passing check's
      // cost (bench/RESULTS.md, "Guardrail cost").
      controller.abort(noLongerWanted());
    };
  });
}

let settledReason: unknown;

/** The reason a check's signal carries when its answer is no longer wanted (created once). */
function noLongerWanted(): unknown {
  return (settledReason ??= new DOMException('The guardrail check is no longer wanted', 'AbortError'));
}

function checkedVerdict(name: string, verdict: unknown): GuardrailVerdict {
  if (verdict === 'pass') return verdict;
  if (typeof verdict === 'object' && verdict !== null) {
    const value = verdict as { trip?: unknown; rewrite?: unknown; reason?: unknown; text?: unknown };
    if (value.trip === true && typeof value.reason === 'string') return verdict as GuardrailVerdict;
    if (value.rewrite === true && typeof value.text === 'string') return verdict as GuardrailVerdict;
  }
  throw new InvalidInputError(
    `Guardrail ${name} answered ${JSON.stringify(verdict)}: expected 'pass', { trip: true, reason } or { rewrite: true, text }`,
  );
}

/** Checks the options every guardrail factory shares. */
export function checkGuardrailOptions(
  factory: string,
  options: { readonly name?: unknown; readonly timeoutMs?: unknown },
): void {
  if (typeof options.name !== 'string' || options.name.length === 0) {
    throw new ConfigurationError(`${factory}: name must be a non-empty string`);
  }
  const { timeoutMs } = options;
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs > 0))) {
    throw new ConfigurationError(`${factory} ${options.name}: timeoutMs must be a positive number of milliseconds`);
  }
}

/** Reports a trip as `guardrail_tripped` through the run's sink (absent outside a run). */
export function emitGuardrailTrip(
  ctx: HookContext,
  trip: {
    readonly guardrail: string;
    readonly kind: 'input' | 'output' | 'tool';
    readonly reason: string;
    readonly info?: unknown;
    readonly action: 'stop' | 'deny';
    readonly timeout: boolean;
    readonly toolCallId?: string | undefined;
  },
): void {
  const { info, toolCallId, timeout, ...rest } = trip;
  sinkOf(ctx)?.emit?.({
    type: 'guardrail_tripped',
    runId: ctx.runId,
    turnIndex: ctx.turnIndex,
    ...rest,
    ...(info === undefined ? {} : { info }),
    ...(timeout ? { timeout } : {}),
    ...(toolCallId === undefined ? {} : { toolCallId }),
  });
}

/** A settled check as a trip (`reason`, `info`, `timeout`), or undefined when it passed or rewrote. */
export function tripOf(
  settled: CheckSettled,
  timeoutMs: number,
): { readonly reason: string; readonly info?: unknown; readonly timeout: boolean } | undefined {
  if (settled === 'timeout') return { reason: `timeout: no answer within ${timeoutMs} ms`, timeout: true };
  if (settled !== 'pass' && 'trip' in settled) return { reason: settled.reason, info: settled.info, timeout: false };
  return undefined;
}
