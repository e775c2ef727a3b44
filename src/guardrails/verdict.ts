/**
 * What a guardrail says of what it inspected, and the shape of a check over text: the one contract the guardrail
 * runner (`inputGuardrail`, `outputGuardrail`, `toolGuardrail`) and the built-in checks (PII, keywords, prompt
 * injection, length, moderation) share. Browser-safe: no `node:` import.
 * @module
 */
import type { Observable } from 'rxjs';
import type { SideModelRequest } from '../middleware/hook-sink.js';
import type { StreamEvent } from '../types/stream-events.js';

/** The guardrail found nothing to stop: what it inspected goes on unchanged. */
export type GuardrailPass = 'pass';

/**
 * The guardrail stopped what it inspected. `reason` is for people (events, spans, the run's outcome); `info` is
 * the guardrail's own detail (which pattern matched, a moderation category), JSON-serialisable.
 */
export interface GuardrailTrip {
  readonly trip: true;
  readonly reason: string;
  readonly info?: unknown;
}

/**
 * The guardrail lets what it inspected go on, changed: `text` replaces the inspected text (a redaction). Where the
 * guardrail sits decides what is replaced (a tool result's text, an input's text). `info` as on a trip.
 */
export interface GuardrailRewrite {
  readonly rewrite: true;
  readonly text: string;
  readonly info?: unknown;
}

/** A guardrail's answer. */
export type GuardrailVerdict = GuardrailPass | GuardrailTrip | GuardrailRewrite;

/** What a check gets besides the text: its cancellation, and the run's model (charged to the run, traced). */
export interface TextCheckContext {
  /** Aborted when the check's answer is no longer wanted (the run was cancelled, the guardrail timed out). */
  readonly signal: AbortSignal;
  /**
   * A model call of the check's own through the run (its provider and model unless the request names others):
   * counted in the run's usage and budget, announced as `model_attempt`, traced as a child of the run. Absent where
   * a check runs outside a run (a unit test calling it directly).
   */
  readonly callModel?: ((request: SideModelRequest) => Observable<StreamEvent>) | undefined;
}

/** A check over text: the unit the built-ins are made of, and what a guardrail can be given instead of an inspector. */
export type TextCheck = (
  text: string,
  context: TextCheckContext,
) => GuardrailVerdict | PromiseLike<GuardrailVerdict> | Observable<GuardrailVerdict>;

/** Whether `verdict` is a trip. */
export function isTrip(verdict: GuardrailVerdict): verdict is GuardrailTrip {
  return typeof verdict === 'object' && 'trip' in verdict && verdict.trip === true;
}

/** Whether `verdict` is a rewrite. */
export function isRewrite(verdict: GuardrailVerdict): verdict is GuardrailRewrite {
  return typeof verdict === 'object' && 'rewrite' in verdict && verdict.rewrite === true;
}
