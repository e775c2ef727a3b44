/**
 * Typed decisions: what a control-flow hook answers instead of `undefined` meaning three things.
 * @module
 */
import type { StatePatch } from './state.js';

/** Go on (optionally changing the run state). */
export interface ContinueDecision {
  readonly kind: 'continue';
  readonly patch?: StatePatch | undefined;
}

/** Do not make the call: `value` stands in for its result (a cache hit, a canned answer). */
export interface ReplaceDecision<T> {
  readonly kind: 'replace';
  readonly value: T;
  readonly reason: string;
}

/**
 * Wait for someone: the call is held, the run suspends durably (`agent_end` with outcome `suspended`), and it resumes
 * when the request is answered (`agent.respond`), also after a process restart.
 */
export interface PauseDecision {
  readonly kind: 'pause';
  readonly reason: string;
  /** Anything the person answering should see (JSON). */
  readonly payload?: unknown;
  /**
   * The token to resume with (the seed's `resumeToken`): it becomes the request's `requestId`, the id
   * `agent.respond(token, answer)` takes. Optional: without it the runtime's token is `<runId>:<toolCallId>`. A
   * non-empty string, unique among the calls the batch holds (a duplicate fails the run with `InvalidInputError`).
   */
  readonly resumeToken?: string | undefined;
  /** When the approval lapses (epoch ms; see `ApprovalRequest.expiresAt`). */
  readonly expiresAt?: number | undefined;
}

/** End the run now, as `failed` or `cancelled`, saying why. */
export interface StopDecision {
  readonly kind: 'stop';
  /**
   * How the run ends: `failed`, `cancelled`, or `stopped` (a policy ended it on purpose, e.g. a guardrail trip: the
   * message being streamed is retracted (`message_retracted`), not stored, and `agent_end.stoppedBy` names `by`).
   */
  readonly outcome: 'failed' | 'cancelled' | 'stopped';
  readonly reason: string;
  /** Who stopped the run (a guardrail's name), reported on `agent_end.stoppedBy`. */
  readonly by?: string | undefined;
}

/**
 * What `beforeToolCall`, `wrapToolCall` and `wrapModelCall` may answer (besides their older answers, which keep their
 * meaning). `T` is what `replace` stands in for: a tool result, or an assistant message.
 */
export type HookDecision<T> = ContinueDecision | ReplaceDecision<T> | PauseDecision | StopDecision;

/**
 * The decision constructors.
 *
 * @example
 * beforeToolCall: (ctx) =>
 *   ctx.toolCall.name === 'delete_file' ? Decision.pause({ reason: 'Deleting needs a human' }) : Decision.continue(),
 */
export const Decision = Object.freeze({
  /** Go on; `patch` changes the run state. */
  continue(patch?: StatePatch): ContinueDecision {
    return patch === undefined ? CONTINUE : { kind: 'continue', patch };
  },
  /** Do not make the call; `value` is its result. */
  replace<T>(value: T, reason: string): ReplaceDecision<T> {
    return { kind: 'replace', value, reason };
  },
  /**
   * Hold the call until someone answers; the run suspends durably. `resumeToken` names the request (default
   * `<runId>:<toolCallId>`), `expiresAt` (epoch ms) bounds when an approval may still run it.
   */
  pause(request: {
    readonly reason: string;
    readonly payload?: unknown;
    readonly resumeToken?: string | undefined;
    readonly expiresAt?: number | undefined;
  }): PauseDecision {
    const { reason, payload, resumeToken, expiresAt } = request;
    return {
      kind: 'pause',
      reason,
      ...(payload === undefined ? {} : { payload }),
      ...(resumeToken === undefined ? {} : { resumeToken }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
  },
  /** End the run now; `by` names who stopped it (reported on `agent_end.stoppedBy`). */
  stop(outcome: 'failed' | 'cancelled' | 'stopped', reason: string, by?: string): StopDecision {
    return by === undefined ? { kind: 'stop', outcome, reason } : { kind: 'stop', outcome, reason, by };
  },
});

const CONTINUE: ContinueDecision = Object.freeze({ kind: 'continue' });

/** Whether `value` is a {@link HookDecision} (an object whose `kind` is one of the four). */
export function isHookDecision(value: unknown): value is HookDecision<unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const kind = (value as { kind?: unknown }).kind;
  return kind === 'continue' || kind === 'replace' || kind === 'pause' || kind === 'stop';
}
