/**
 * The driver behind the loop: a generator that yields only when it must wait.
 *
 * The loop is written as a generator (`function*`) that reads like an async function: `yield wait(x, fallback)` waits
 * for `x`, a Promise or an Observable, and the loop yields only for such a value (a plain one is used at once).
 * Compared with `async`/`await` this buys three things the runtime promises:
 * - no microtask hop per step: a turn whose hooks and tools answer synchronously runs synchronously;
 * - virtual time: a hook, tool or provider that is an Observable built on RxJS schedulers resumes the loop from the
 *   scheduler, so a whole run can be marble-tested inside `TestScheduler.run()`;
 * - cancellation at every wait: tearing down unsubscribes the Observable (or drops the Promise) being waited on, and
 *   an aborted signal is thrown into the generator where it waits, so `try`/`catch` in the loop decides what the
 *   transcript gets.
 * @module
 */
import { Observable, type Subscription } from 'rxjs';
import { isPromiseLike } from '../types/is-promise-like.js';

/** What a generator yields: something to wait for, with the value to resume with when an Observable emits nothing. */
export interface Suspension {
  readonly source: Observable<unknown> | PromiseLike<unknown>;
  readonly fallback: unknown;
  /** Called synchronously for each value of an Observable source (the per-delta path of a provider stream). */
  readonly onNext?: ((value: unknown) => void) | undefined;
  /** When the signal aborts: resume with {@link ABORTED} (the wait is torn down) instead of throwing the reason. */
  readonly resumeOnAbort?: boolean | undefined;
}

/**
 * What a wait made with `resumeOnAbort` resumes with when the run's signal aborts: the step closes itself with no
 * exception thrown (an exception costs the first cancellation of a process a re-parse of the function it unwinds).
 */
export const ABORTED: unique symbol = Symbol('aborted');

/** A step of the loop: a generator that yields {@link Suspension}s and returns a `T`. */
export type Op<T> = Generator<Suspension, T, unknown>;

/**
 * The {@link Suspension} for `source`, for a step to yield: `(yield wait(source, fallback)) as T` resumes with a
 * Promise's value, or an Observable's last value (`fallback` when it emits none), calling `onNext` for each value of
 * an Observable as it arrives. With `resumeOnAbort`, a cancellation resumes it with {@link ABORTED} instead of
 * throwing.
 */
export function wait<T, F = T>(
  source: Observable<T> | PromiseLike<T>,
  fallback: F,
  onNext?: (value: T) => void,
  resumeOnAbort = false,
): Suspension {
  return { source, fallback, onNext: onNext as ((value: unknown) => void) | undefined, resumeOnAbort };
}

/** How a driven generator ends. */
export interface DriveHandlers<T> {
  complete(value: T): void;
  error(error: unknown): void;
}

/**
 * Runs `op` until it returns or throws. When `signal` aborts while the generator waits, the wait is torn down and
 * `signal.reason` is thrown into the generator (or, for a wait made with `resumeOnAbort`, the generator resumes with
 * {@link ABORTED}); if it aborts while the generator runs, the same happens at its next wait. Returns the teardown: it
 * tears down the wait in flight and closes the generator (its `finally` blocks run), and nothing is reported
 * afterwards.
 */
export function drive<T>(op: Op<T>, handlers: DriveHandlers<T>, signal?: AbortSignal): () => void {
  let running = false;
  let done = false;
  // Each wait gets a token; a callback from an older wait (a late Promise, a torn-down source) is ignored.
  let token = 0;
  let waiting = false;
  let current: Subscription | undefined;
  let queued: { ok: boolean; value: unknown } | undefined;
  // The Observable being waited on: the token of its wait, its last value, what to call for each value. One observer
  // serves every such wait (no closures per wait). A wait that is over is unsubscribed, so it delivers nothing more;
  // until then (it ended while its subscribe call was still running) its calls carry a stale token and are ignored,
  // and no other wait can start before that subscribe call returns.
  let observedToken = -1;
  let last: unknown;
  let onNext: ((value: unknown) => void) | undefined;
  const observer = {
    next: (value: unknown) => {
      if (observedToken !== token) return;
      last = value;
      if (onNext === undefined) return;
      try {
        onNext(value);
      } catch (error) {
        resume(observedToken, false, error);
      }
    },
    error: (error: unknown) => resume(observedToken, false, error),
    complete: () => resume(observedToken, true, last),
  };

  const finish = () => {
    done = true;
    waiting = false;
    signal?.removeEventListener('abort', onAbort);
  };

  const resume = (forToken: number, ok: boolean, value: unknown) => {
    if (done || forToken !== token) return;
    token++;
    waiting = false;
    last = undefined;
    onNext = undefined;
    const source = current;
    current = undefined;
    source?.unsubscribe();
    if (running) queued = { ok, value };
    else step(ok, value);
  };

  let resumeOnAbort = false;
  function onAbort() {
    if (!waiting) return;
    if (resumeOnAbort) resume(token, true, ABORTED);
    else resume(token, false, signal!.reason);
  }

  function step(ok: boolean, value: unknown): void {
    running = true;
    try {
      for (;;) {
        let result: IteratorResult<Suspension, T>;
        try {
          result = ok ? op.next(value) : op.throw(value);
        } catch (error) {
          finish();
          handlers.error(error);
          return;
        }
        if (done) {
          // Torn down while the generator ran: close it now that it is suspended again.
          closeQuietly(op);
          return;
        }
        if (result.done) {
          finish();
          handlers.complete(result.value);
          return;
        }
        const wait = result.value;
        if (signal?.aborted) {
          ok = wait.resumeOnAbort === true;
          value = ok ? ABORTED : signal.reason;
          continue;
        }
        queued = undefined;
        waiting = true;
        resumeOnAbort = wait.resumeOnAbort === true;
        const waitToken = token;
        try {
          if (isPromiseLike(wait.source)) {
            wait.source.then(
              (resolved) => resume(waitToken, true, resolved),
              (rejected) => resume(waitToken, false, rejected),
            );
          } else {
            observedToken = waitToken;
            last = wait.fallback;
            onNext = wait.onNext;
            const subscription: Subscription = wait.source.subscribe(observer);
            // Resumed during subscribe (completed, errored or aborted synchronously): release it now.
            if (waitToken === token) current = subscription;
            else subscription.unsubscribe();
          }
        } catch (error) {
          // A thenable whose `then` throws (or a `then` getter that does) fails the wait like a rejection: thrown
          // into the generator where it waits, never out of the driver (where nobody could catch it).
          resume(waitToken, false, error);
        }
        if (queued === undefined) return; // suspended: a callback will call step() again
        ({ ok, value } = queued);
        queued = undefined;
      }
    } finally {
      running = false;
    }
  }

  signal?.addEventListener('abort', onAbort);
  step(true, undefined);

  return () => {
    if (done) return;
    finish();
    token++;
    const source = current;
    current = undefined;
    source?.unsubscribe();
    if (!running) closeQuietly(op);
  };
}

/**
 * Runs `factory()`'s generator on subscription, as a cold Observable of its return value. It listens to no signal:
 * it runs inside a wait of the run's own driver, which unsubscribes it (closing the generator) when the run aborts.
 */
export function fromOp<T>(factory: () => Op<T>): Observable<T> {
  return new Observable<T>((subscriber) =>
    drive(factory(), {
      complete: (value) => {
        subscriber.next(value);
        subscriber.complete();
      },
      error: (error) => subscriber.error(error),
    }),
  );
}

function closeQuietly(op: Op<unknown>): void {
  try {
    op.return(undefined);
  } catch {
    // A `finally` block that throws while the run is torn down has nobody left to tell.
  }
}
