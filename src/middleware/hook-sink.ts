/**
 * Where composed hooks report what is not their answer: state patches (with who produced them) and the failures of
 * hooks that skip on error. The loop puts a sink on every hook context it builds, under a symbol.
 * @module
 */
import type { Observable } from 'rxjs';
import type { MiddlewareEvent } from '../types/agent-events.js';
import type { HookError } from '../types/errors.js';
import type { StatePatch } from '../types/state.js';
import type { StreamEvent } from '../types/stream-events.js';
import type { ModelRequest } from './wrapper-types.js';

/** What a run does with a hook's side reports. */
export interface HookSink {
  /** A hook of `producer` answered with `patch`: apply it now (it may throw a `StatePatchConflictError`). */
  patch(producer: string, patch: StatePatch): void;
  /**
   * A hook of a middleware declared `onError: 'skip'` failed: report it (`hook_error`); its answer is dropped.
   * `attempt` says which call it was, for a middleware with `retry`.
   */
  skipped(error: HookError, attempt?: HookAttempt): void;
  /**
   * A call of a hook of a middleware with `retry` failed and is not skipped: it is called again (`willRetry`) or its
   * failure ends the run. Report it (`hook_error`).
   */
  attemptFailed?(error: HookError, attempt: HookAttempt): void;
  /** A new id for one invocation of a hook (shared by its attempts): unique within the run. */
  invocationId?(): string;
  /** Emits a middleware's own event into the run (a run's sink has it; a sink made elsewhere may not). */
  emit?(event: MiddlewareEvent): void;
  /**
   * A model call of a middleware's own (a compaction's summary), through the run's wrappers like the turn's call:
   * `model_attempt` events, retries, tracing; cold, cancelled by unsubscribing or by the run's cancellation. The
   * wrappers see `purpose` on their context. Calls the invocation `invocationId`.
   */
  callModel?(request: SideModelRequest, purpose: string, invocationId: string): Observable<StreamEvent>;
}

/** Which call of a retried hook failed: its attempt (1-based), the id its attempts share, whether another follows. */
export interface HookAttempt {
  readonly attempt: number;
  readonly invocationId: string;
  readonly willRetry: boolean;
}

/** A middleware's own model call: the run's provider and model unless it names others; no tools unless given. */
export interface SideModelRequest extends Omit<ModelRequest, 'provider' | 'model' | 'tools'> {
  readonly provider?: ModelRequest['provider'] | undefined;
  readonly model?: ModelRequest['model'] | undefined;
  readonly tools?: ModelRequest['tools'] | undefined;
}

/** The key of the sink on a hook context (a symbol: invisible to hooks that do not look for it, kept by spreads). */
export const HOOK_SINK: unique symbol = Symbol('cubepi.hookSink');

/** The sink on `ctx`, if the run put one there. */
export function sinkOf(ctx: unknown): HookSink | undefined {
  return typeof ctx === 'object' && ctx !== null ? (ctx as { [HOOK_SINK]?: HookSink })[HOOK_SINK] : undefined;
}
