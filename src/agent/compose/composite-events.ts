/**
 * The events, results and typed failure of composed agents (`sequence`, `parallel`, `race`, `supervise`).
 * @module
 */
import { CubepiError } from '../../types/errors.js';
import type { AgentEvent, RunOutcome } from '../../types/agent-events.js';
import type { ApprovalRequest } from '../../types/approval.js';
import type { Message } from '../../types/messages.js';
import type { SpendBound, Usage } from '../../types/usage.js';
import type { Agent } from '../agent.js';

/** Which operator built a composite. */
export type CompositeKind = 'sequence' | 'parallel' | 'race' | 'supervise';

/** One step of an event's path: the operator's kind, a member's index, a member's name, a worker's tool call id. */
export type CompositePathPart = string | number;

/** What a composite (and each of its members) is given to work on: a prompt, a message, or messages. */
export type CompositeInput = string | Message | readonly Message[];

/**
 * How a composite ended. `completed`: it has an answer. `stopped`: the shared budget was spent (`stop.reason` is
 * `budget`): every member still running was cancelled. `failed`: a member failed (`error` names it). `cancelled`: a
 * member's run was cancelled from outside (`abort()` on its agent, the run's `signal`). `suspended`: a member waits
 * for approvals (`pending`).
 */
export type CompositeOutcome = 'completed' | 'stopped' | 'failed' | 'cancelled' | 'suspended';

/** How one member's run ended, as the composite's end tells it. */
export interface MemberResult {
  readonly name: string;
  readonly index: number;
  /**
   * The member run's outcome; `not_run` for a member a sequence never reached, `lost` for a race's loser (its run
   * cancelled when the winner finished).
   */
  readonly outcome: RunOutcome | 'not_run' | 'lost';
  /** The text of the member's last assistant message, for a member that completed or was stopped. */
  readonly answer?: string | undefined;
  readonly runId?: string | undefined;
  /** The thread the member's agent stored its run on (its own `threadId`), when it has a checkpointer. */
  readonly threadId?: string | undefined;
  /** The messages the member's run added (empty for a member that did not run or whose run errored). */
  readonly messages: readonly Message[];
  readonly usage: Usage;
  /** For a member whose run errored (a hook failure, a checkpoint failure, a busy agent): the error. */
  readonly error?: unknown;
}

/** A member waiting for approvals: answer them on `agent` (`agent.respond(requestId, answer)`). */
export interface MemberPending {
  readonly name: string;
  readonly index: number;
  /** The agent the member ran on (the factory's product, for a factory): the one to answer. */
  readonly agent: Agent;
  readonly requests: readonly ApprovalRequest[];
}

/** The first event of a composite's run: its kind and members, in order. `seq` is 1. */
export interface CompositeStartEvent {
  readonly type: 'composite_start';
  readonly kind: CompositeKind;
  readonly path: readonly CompositePathPart[];
  readonly seq: number;
  readonly members: readonly string[];
}

/**
 * One event of a member's run, as the member's own subscribers see it. `path` is `[kind, index, name]` for a member
 * (`['supervise', 0, 'manager']`), and `[kind, index, name, toolCallId]` for a supervisor's worker started by the
 * manager's call `toolCallId`; `seq` numbers every event of the composite's run in one sequence.
 */
export interface MemberEvent {
  readonly type: 'member_event';
  readonly kind: CompositeKind;
  readonly path: readonly CompositePathPart[];
  readonly seq: number;
  /** The member's name and index (for a worker: the worker's, counted after the manager). */
  readonly member: string;
  readonly index: number;
  readonly event: AgentEvent;
}

/** The last event of a composite's run: nothing follows it. */
export interface CompositeEndEvent {
  readonly type: 'composite_end';
  readonly kind: CompositeKind;
  readonly path: readonly CompositePathPart[];
  readonly seq: number;
  readonly outcome: CompositeOutcome;
  /** The composite's answer, with outcome `completed`. */
  readonly answer?: string | undefined;
  /** For `race`: the winner's name. */
  readonly winner?: string | undefined;
  /** Each member's result, in the members' order (for `supervise`: the manager's only). */
  readonly results: readonly MemberResult[];
  /** What every member spent, summed (for `supervise`, the workers' spend is in the manager's). */
  readonly usage: Usage;
  /** With outcome `suspended`: who waits for what. */
  readonly pending?: readonly MemberPending[] | undefined;
  /** With outcome `failed`: the typed error naming the member. */
  readonly error?: CompositeMemberError | undefined;
  /** With outcome `stopped`: why (the shared budget, its bound, and what was counted when it stopped). */
  readonly stop?: { readonly reason: 'budget'; readonly bound: SpendBound; readonly spent: SpendCount } | undefined;
}

/** What a shared budget counted. */
export interface SpendCount {
  readonly usd: number;
  readonly tokens: number;
}

/** Any event of a composite's run. */
export type CompositeEvent = CompositeStartEvent | MemberEvent | CompositeEndEvent;

/**
 * A member of a composite failed: its run ended `failed` (a provider error, a failed hook that the run reported) or
 * its run's Observable errored (a `HookError`, a checkpoint failure, an `AgentBusyError`: then `cause` is that error).
 * `member` and `index` name it; `results` are every member's results (for `parallel`, all of them, siblings included).
 */
export class CompositeMemberError extends CubepiError {
  readonly code = 'composite_member_failed' as const;
  constructor(
    readonly kind: CompositeKind,
    readonly member: string,
    readonly index: number,
    readonly results: readonly MemberResult[],
    why: string,
    options?: { cause?: unknown },
  ) {
    super(`${kind}: member ${index} "${member}" failed: ${why}`, options);
  }
}
