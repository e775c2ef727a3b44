/**
 * Retrying transient failures of model calls (and of idempotent tools).
 * @module
 */
import {
  asyncScheduler,
  catchError,
  concatMap,
  defer,
  retry as retryOperator,
  throwError,
  timer,
  type Observable,
  type SchedulerLike,
} from 'rxjs';
import { ConfigurationError } from '../types/errors.js';
import type { ProviderErrorKind } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import { failBeforeContent, FailedBeforeContent } from './hold-until-content.js';
import type { Middleware } from './types.js';
import type {
  ModelCallContext,
  ModelCallNext,
  ModelRequest,
  ToolCallContext,
  ToolCallNext,
  ToolCallRequest,
  ToolOutcome,
} from './wrapper-types.js';

/** Exponential backoff: `initialMs × factor^(n-1)`, capped at `maxMs`, spread by ±`jitter` (a fraction). */
export interface Backoff {
  readonly initialMs?: number | undefined;
  readonly factor?: number | undefined;
  readonly maxMs?: number | undefined;
  readonly jitter?: number | undefined;
}

/** Options of {@link retry}. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 3). */
  readonly maxAttempts?: number | undefined;
  /** Default `{ initialMs: 500, factor: 2, maxMs: 30_000, jitter: 0.2 }`. */
  readonly backoff?: Backoff | undefined;
  /** The error kinds worth another attempt (default the transient ones: `rate_limited`, `unavailable`, `timeout`). */
  readonly retryOn?: readonly ProviderErrorKind[] | undefined;
  /**
   * Retry tools marked `idempotent: true` when they throw (default true). Other tools, and `isError` results, are
   * never retried.
   */
  readonly tools?: boolean | undefined;
  /** Where backoff waits are scheduled (default `asyncScheduler`; virtual inside `TestScheduler.run()`). */
  readonly scheduler?: SchedulerLike | undefined;
  /** The source of jitter (default `Math.random`). */
  readonly random?: (() => number) | undefined;
  readonly name?: string | undefined;
}

/** The transient kinds retried by default. */
export const TRANSIENT_ERROR_KINDS: readonly ProviderErrorKind[] = ['rate_limited', 'unavailable', 'timeout'];

class FailedTool extends Error {
  constructor(readonly outcome: ToolOutcome) {
    super('tool failed');
  }
}

/**
 * A wrapper (phase `retry`) that retries model calls failing with a transient error (`rate_limited`, `unavailable`),
 * with exponential backoff and jitter. It honours the provider's `retryAfterMs` (giving up when that is longer than
 * `backoff.maxMs`), retries **only before the first content event** (a stream that already produced text is never
 * silently replayed: its error stands), and never retries cancellation. Every attempt is a new request with its own
 * `attemptId` under the call's `invocationId` (`model_attempt` events). Unsubscribing during a backoff wait ends the
 * wait at once. When the attempts run out, the last error event is the call's result.
 *
 * Tools are retried only when marked `idempotent: true`, and only when they throw.
 *
 * @example
 * new Agent({ provider, model, middleware: [retry({ maxAttempts: 4, backoff: { initialMs: 1000 } })] });
 */
export function retry(options: RetryOptions = {}): Middleware {
  const maxAttempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
    throw new ConfigurationError('retry: maxAttempts must be a positive integer');
  const { initialMs = 500, factor = 2, maxMs = 30_000, jitter = 0.2 } = options.backoff ?? {};
  if (!(initialMs >= 0 && factor >= 1 && maxMs >= 0 && jitter >= 0 && jitter <= 1)) {
    throw new ConfigurationError('retry: backoff needs initialMs ≥ 0, factor ≥ 1, maxMs ≥ 0 and 0 ≤ jitter ≤ 1');
  }
  const retryOn = new Set<ProviderErrorKind>(options.retryOn ?? TRANSIENT_ERROR_KINDS);
  retryOn.delete('aborted'); // cancellation is never retried
  const scheduler = options.scheduler ?? asyncScheduler;
  const random = options.random ?? Math.random;
  const retryTools = options.tools ?? true;

  const backoffMs = (retryCount: number): number => {
    const base = Math.min(maxMs, initialMs * factor ** (retryCount - 1));
    return Math.max(0, Math.round(base * (1 + jitter * (2 * random() - 1))));
  };

  return {
    name: options.name ?? 'retry',
    phase: 'retry',
    nextCalls: 'many',
    wrapModelCall(request: ModelRequest, _ctx: ModelCallContext, next: ModelCallNext): Observable<StreamEvent> {
      return defer(() => next(request)).pipe(
        failBeforeContent((event) => retryOn.has(event.errorKind)),
        retryOperator({
          count: maxAttempts - 1,
          delay: (error: unknown, retryCount: number) => {
            if (!(error instanceof FailedBeforeContent)) return throwError(() => error);
            const { retryAfterMs } = error.event;
            if (retryAfterMs !== undefined && retryAfterMs > maxMs) return throwError(() => error);
            return timer(retryAfterMs ?? backoffMs(retryCount), scheduler);
          },
        }),
        catchError((error: unknown) =>
          error instanceof FailedBeforeContent ? [error.event] : throwError(() => error),
        ),
      );
    },
    wrapToolCall(call: ToolCallRequest, _ctx: ToolCallContext, next: ToolCallNext): Observable<ToolOutcome> {
      if (!retryTools || call.tool.idempotent !== true) return next(call);
      return defer(() => next(call)).pipe(
        concatMap((outcome) => (outcome.error === undefined ? [outcome] : throwError(() => new FailedTool(outcome)))),
        retryOperator({
          count: maxAttempts - 1,
          delay: (error: unknown, retryCount: number) =>
            error instanceof FailedTool ? timer(backoffMs(retryCount), scheduler) : throwError(() => error),
        }),
        catchError((error: unknown) => (error instanceof FailedTool ? [error.outcome] : throwError(() => error))),
      );
    },
  };
}
