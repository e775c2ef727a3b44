/**
 * What every hook and every wrapper is told about the run: the context both kinds of middleware share.
 * @module
 */
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Principal } from '../types/principal.js';
import type { HookState } from '../types/state.js';
import type { AnyAgentTool, ToolRunInfo } from '../types/tool.js';
import type { Usage } from '../types/usage.js';

/** What every hook is told about the run it is part of. */
export interface HookContext {
  readonly runId: string;
  /** The turn (model call) this hook belongs to, from 0. */
  readonly turnIndex: number;
  readonly threadId?: string | undefined;
  /** Who the run acts for (`RunOptions.principal`: the server's authenticated caller), if anyone. */
  readonly principal?: Principal | undefined;
  readonly model: Model;
  readonly systemPrompt: string;
  readonly tools: readonly AnyAgentTool[];
  /** The stored transcript so far. Read-only: hooks change what the model receives, never the transcript. */
  readonly messages: readonly Message[];
  /**
   * The run state (read-only): values, an event log and context fragments, persisted with the thread. A hook changes
   * it only by returning a patch (see `docs/state.md`).
   */
  readonly state: HookState;
  /** `state.values`, read-only (kept for compatibility: hooks used to mutate it; they now return a patch). */
  readonly extra: Readonly<Record<string, unknown>>;
  /** Aborts when the run is cancelled; a long hook should stop when it fires. */
  readonly signal: AbortSignal;
  /** When the run's deadline passes (milliseconds since the epoch), if it has one. */
  readonly deadlineAt?: number | undefined;
  /**
   * The run, as a tool is told of it (`ToolExecuteContext.run`): its id, thread, principal, nesting depth, deadline
   * and budget signal (`run.budgetSignal`, fired when the budget of this run or of a run above it is spent). What a run
   * started in the hook needs to be this run's child: give `childRunOptions(ctx)` to its `prompt`. One object per
   * run. Set on every context the Agent builds; absent on a context built by hand.
   */
  readonly run?: ToolRunInfo | undefined;
  /**
   * Reports what the hook spends on model calls of its own (a run it started: `childRunOptions` passes it as
   * `limits.charge`), as it spends it: added to the run's `agent_end.usage` and counted by its budget at once (a
   * `BudgetCap` on the run, or above it, cancels the runs it bounds when reached). One function per run. Set on every
   * context the Agent builds; absent on a context built by hand.
   */
  readonly chargeUsage?: ((usage: Usage) => void) | undefined;
}
