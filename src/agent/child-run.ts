/**
 * What a run started from inside another run (in a hook, or in a tool) passes to be that run's child.
 * @module
 */
import type { HookContext } from '../middleware/hook-context.js';
import type { ParentRun } from '../types/agent-events.js';
import { ConfigurationError } from '../types/errors.js';
import type { Principal } from '../types/principal.js';
import type { RunLimits, ToolExecuteContext } from '../types/tool.js';

/** The run options that make a run the child of the run a hook or a tool belongs to (see {@link childRunOptions}). */
export interface ChildRunOptions {
  /** The parent's signal: cancelling the parent (abort, a signal, its deadline, its budget) cancels the child. */
  readonly signal: AbortSignal;
  /** Names the parent run (and the tool call or the hook) on the child's `agent_start.parent`; depth is one more. */
  readonly parent: ParentRun;
  /** The parent's deadline and budget signal, and its `chargeUsage`, so the child's spend counts for the parent. */
  readonly limits: RunLimits;
  /** The parent's principal: the child acts for the same caller. */
  readonly principal: Principal | undefined;
}

/**
 * The options that make a run started inside a hook (or a tool's `execute`) a child of the run it belongs to: give
 * them to the other agent's `prompt`/`prompt$` (spread, with options of your own). The child's `agent_start.parent`
 * names the parent run (its `toolCallId` for a tool's context; `hook`, when `from` names it, for a hook's); what the
 * child spends is charged to the parent as it spends it (its `agent_end.usage`, a `BudgetCap` on it or above); it
 * inherits the parent's deadline and budget (the earlier of the deadlines applies), and cancelling the parent cancels
 * it. Depth is not limited here (`agentTool` has `maxDepth`): a hook that starts runs of an agent whose hooks start
 * runs should check `ctx.run.depth`.
 *
 * Throws a `ConfigurationError` for a context the Agent did not build (no `run` / `chargeUsage`).
 *
 * @example
 * const reviewer: Middleware = {
 *   name: 'reviewer',
 *   afterModelResponse: async (response, ctx) => {
 *     const review = await critic.prompt(textOf(response), childRunOptions(ctx, { hook: 'afterModelResponse', middleware: 'reviewer' }));
 *     return undefined;
 *   },
 * };
 */
export function childRunOptions(
  ctx: HookContext | ToolExecuteContext,
  from?: { readonly hook: string; readonly middleware: string },
): ChildRunOptions {
  const { run, chargeUsage, signal } = ctx;
  if (run === undefined || typeof chargeUsage !== 'function') {
    throw new ConfigurationError('childRunOptions: the context has no run (give it the context a hook or tool got)');
  }
  const toolCallId = 'toolCall' in ctx && 'onUpdate' in ctx ? ctx.toolCall.id : undefined;
  const parent: ParentRun = {
    runId: run.runId,
    ...(toolCallId === undefined ? {} : { toolCallId }),
    ...(run.threadId === undefined ? {} : { threadId: run.threadId }),
    depth: run.depth,
    ...(from === undefined ? {} : { hook: { name: from.hook, middleware: from.middleware } }),
  };
  return {
    signal,
    parent,
    limits: { deadlineAt: run.deadlineAt, budgetSignal: run.budgetSignal, charge: chargeUsage },
    principal: run.principal,
  };
}
