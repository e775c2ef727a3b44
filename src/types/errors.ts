/**
 * Typed errors, so a host can react to a failure without parsing its message. Every class has a stable `code`.
 *
 * Failures of a model call and of a tool are *values* (an `error` stream event, an error tool result), not these
 * errors: these are for configuration mistakes, misuse of the API, bugs in hooks, and cancellation.
 * @module
 */
import type { ProviderErrorKind } from './messages.js';

/** The base of every error cubepi throws. */
export abstract class CubepiError extends Error {
  /** A stable, machine-readable identifier of the error class. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Invalid options given to a constructor. Raised at construction, never at the first call. */
export class ConfigurationError extends CubepiError {
  readonly code = 'configuration';
}

/** An invalid argument given to a method (a prompt that is not a message, a negative limit, …). */
export class InvalidInputError extends CubepiError {
  readonly code = 'invalid_input';
}

/** A run was asked for while another run of the same agent is active (use `steer` or `followUp` instead). */
export class AgentBusyError extends CubepiError {
  readonly code = 'agent_busy';
}

/** An operation the current state does not allow (resuming an empty history, …); nothing was done. */
export class InvalidStateError extends CubepiError {
  readonly code = 'invalid_state';
}

/** The names of the seven middleware hooks. */
export type HookName =
  | 'transformContext'
  | 'convertToLlm'
  | 'transformSystemPrompt'
  | 'beforeToolCall'
  | 'afterToolCall'
  | 'shouldStopAfterTurn'
  | 'afterModelResponse';

/** Where a {@link HookError} happened. */
export interface HookErrorDetails {
  /** The middleware's name (`agent options` for a hook passed to the `Agent` constructor). */
  readonly middleware: string;
  readonly hook: HookName | (string & {});
  /** The middleware's phase, when it has one. */
  readonly phase?: string;
  /** A hash of the hook's input, to correlate failures without logging the input itself. */
  readonly inputHash?: string;
  readonly cause: unknown;
}

/**
 * A hook threw or errored: a bug, not a tool failure. The run ends (its transcript kept consistent: unanswered tool
 * calls get error results), `prompt()` rejects with this error and `agent_end` is still emitted.
 */
export class HookError extends CubepiError {
  readonly code = 'hook_error';
  readonly middleware: string;
  readonly hook: string;
  readonly phase?: string;
  readonly inputHash?: string;

  constructor(details: HookErrorDetails) {
    super(`Hook ${details.hook} of middleware "${details.middleware}" failed: ${errorMessageOf(details.cause)}`, {
      cause: details.cause,
    });
    this.middleware = details.middleware;
    this.hook = details.hook;
    if (details.phase !== undefined) this.phase = details.phase;
    if (details.inputHash !== undefined) this.inputHash = details.inputHash;
  }
}

/** Why a run was cancelled: `abort()`, its `prompt$` subscriber left, its deadline passed, or a caller's signal fired. */
export type AbortReason = 'abort' | 'unsubscribed' | 'deadline' | 'signal';

/**
 * A run was cancelled. It is the `reason` of the run's `AbortSignal` (so tools and hooks can tell why) and is never
 * retried or turned into an ordinary error.
 */
export class RunAbortedError extends CubepiError {
  readonly code = 'aborted';
  readonly reason: AbortReason;

  constructor(reason: AbortReason, message = defaultAbortMessage(reason)) {
    super(message);
    this.reason = reason;
  }
}

function defaultAbortMessage(reason: AbortReason): string {
  switch (reason) {
    case 'abort':
      return 'Run aborted';
    case 'unsubscribed':
      return 'Run aborted: its subscriber unsubscribed';
    case 'deadline':
      return 'Run aborted: deadline exceeded';
    case 'signal':
      return "Run aborted: the caller's signal fired";
  }
}

/** Whether an error means "cancelled" (a {@link RunAbortedError} or a DOM `AbortError`). */
export function isAbortError(error: unknown): boolean {
  return (
    error instanceof RunAbortedError ||
    (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError')
  );
}

/**
 * A failed model call, classified. Providers report failures as `error` stream events; this class is for code that
 * must throw one (a wrapper, a custom provider built on a throwing client).
 */
export class ProviderError extends CubepiError {
  readonly code = 'provider_error';
  readonly kind: ProviderErrorKind;
  readonly retryAfterMs?: number;
  readonly status?: number;

  constructor(
    message: string,
    details: { kind: ProviderErrorKind; retryAfterMs?: number; status?: number; cause?: unknown },
  ) {
    super(message, { cause: details.cause });
    this.kind = details.kind;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.status !== undefined) this.status = details.status;
  }
}

/** The message of any thrown value. */
export function errorMessageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
