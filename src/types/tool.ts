/**
 * Tools the model can call.
 * @module
 */
import type { Observable } from 'rxjs';
import type { z } from 'zod';
import type { ToolCall, ToolResultContent } from './content.js';
import type { ToolDefinition } from './provider.js';
import type { Principal } from './principal.js';
import type { Usage } from './usage.js';

/**
 * What a tool returns. `content` goes to the model; `details` stays with the host (UI, logs). `isError: true` tells
 * the model the call failed. `terminate: true` asks the loop to stop calling the model after this batch; it takes
 * effect only when every result of the batch asks for it.
 */
export interface AgentToolResult<TDetails = unknown> {
  readonly content: readonly ToolResultContent[];
  readonly details?: TDetails | undefined;
  readonly isError?: boolean | undefined;
  readonly terminate?: boolean | undefined;
  /**
   * What this call spent on model calls of its own (a sub-agent's run): stored on the result message and added to the
   * run's usage (`agent_end.usage`, `BudgetCap`). An `afterToolCall` answer cannot change it.
   */
  readonly usage?: Usage | undefined;
}

/**
 * The run a tool call belongs to, for tools that start runs of their own (a sub-agent, see `agentTool`): its id, its
 * thread, and how deeply it is nested (0 for a run nobody started from a tool).
 */
export interface ToolRunInfo {
  readonly runId: string;
  readonly threadId: string | undefined;
  /** Who the run acts for (`RunOptions.principal`), if anyone: a sub-agent's run inherits it. */
  readonly principal?: Principal | undefined;
  readonly depth: number;
  /** When the run's deadline passes (ms since the epoch; its own or one it inherited), if it has one. */
  readonly deadlineAt: number | undefined;
  /**
   * Fires when the budget of this run, or of a run above it, is spent (its reason a `RunAbortedError` with reason
   * `budget`); `undefined` when no budget bounds the run. A run a tool starts should stop when it fires.
   */
  readonly budgetSignal: AbortSignal | undefined;
}

/**
 * What a run inherits from the run whose tool call started it (see `agentTool`, `RunOptions.limits`): it ends by the
 * same deadline, is cancelled when the same budget is spent, and reports what it spends to the call.
 */
export interface RunLimits {
  /** The run is cancelled (reason `deadline`) when this passes (ms since the epoch), or earlier by its own deadline. */
  readonly deadlineAt?: number | undefined;
  /** The run is cancelled (with this signal's reason, `budget`) when it fires. */
  readonly budgetSignal?: AbortSignal | undefined;
  /**
   * Called with what the run spends, as it spends it: each model call's usage when its message ends, and what its own
   * tools report (their sub-runs). Give it the call's {@link ToolExecuteContext.chargeUsage}.
   */
  readonly charge?: ((usage: Usage) => void) | undefined;
}

/** The third argument of {@link AgentTool.execute}. */
export interface ToolExecuteContext<TDetails = unknown> {
  /** The run making the call. */
  readonly run: ToolRunInfo;
  /** Aborts when the run is cancelled (or the tool's timeout passes). A long tool should stop when it fires. */
  readonly signal: AbortSignal;
  /** Reports progress: each call becomes a `tool_execution_update` event. Calls after the tool settled are ignored. */
  readonly onUpdate: (partialResult: AgentToolResult<TDetails>) => void;
  /** The call being executed, as the model made it. */
  readonly toolCall: ToolCall;
  /**
   * Who the run acts for (`RunOptions.principal`: the server's authenticated caller), so a tool can act as that user;
   * `undefined` for a run started without one.
   */
  readonly principal?: Principal | undefined;
  /**
   * Reports what this call spends on model calls of its own (a sub-agent's), as it spends it: added to the run's
   * budget at once (a `BudgetCap` on the run cancels the sub-runs it bounds when it is reached), and stored as the
   * `usage` of the call's result message however the call ends (cancelled included), unless the result gives its own.
   */
  readonly chargeUsage: (usage: Usage) => void;
}

/**
 * What `execute` may return: a result, or a plain string (shorthand for one text block), directly, as a Promise, or
 * as an Observable whose emissions before the last are progress updates and whose last emission is the result.
 */
export type ToolExecuteResult<TDetails = unknown> =
  | AgentToolResult<TDetails>
  | string
  | PromiseLike<AgentToolResult<TDetails> | string>
  | Observable<AgentToolResult<TDetails> | string>;

/** How a tool runs within a batch; one `sequential` tool makes its whole batch sequential. */
export type ToolExecutionMode = 'parallel' | 'sequential';

/**
 * A tool: a {@link ToolDefinition} for the model plus the zod schema that validates arguments and the function that
 * executes a call. Build one with {@link defineTool}.
 */
export interface AgentTool<TSchema extends z.ZodType = z.ZodType, TDetails = unknown> extends ToolDefinition {
  /** The zod schema of the arguments; `inputSchema` is derived from it. */
  readonly parameters: TSchema;
  /** Defaults to the batch's mode (parallel unless the agent says otherwise). */
  readonly executionMode?: ToolExecutionMode | undefined;
  /** A call still running after this many milliseconds is aborted and answered with a timeout error. */
  readonly timeoutMs?: number | undefined;
  /**
   * Running the same call twice has the same effect as once: a `retry` wrapper may re-run it when it throws. Tools
   * are never retried otherwise.
   */
  readonly idempotent?: boolean | undefined;
  /**
   * The tool runs in the client (a front end), not here: build one with `clientTool`. A call to it is validated and
   * gated by `beforeToolCall` like any, then held instead of executed — the run ends `suspended` with the call pending
   * (`ApprovalRequest.clientTool: true`, reason `client_tool`) — and the client's answer `{ output }` becomes its
   * result (docs/approvals.md, "Client tools"). `execute` is never called.
   */
  readonly client?: boolean | undefined;
  /**
   * Runs one call with validated arguments (zod defaults applied). A thrown error or a rejected Promise becomes an
   * error tool result carrying its message; it never ends the run.
   */
  execute(
    toolCallId: string,
    params: z.output<TSchema>,
    context: ToolExecuteContext<TDetails>,
  ): ToolExecuteResult<TDetails>;
}

/**
 * Any tool, whatever its schema and details: the element type of tool lists.
 * (`execute` is declared as a method, so a tool with a narrower schema is assignable to it.)
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyAgentTool = AgentTool<z.ZodType, any>;
