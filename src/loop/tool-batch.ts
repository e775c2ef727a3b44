/**
 * A turn's tool batch: validate, gate (`beforeToolCall`), execute (in parallel through `mergeMap`, or one by one),
 * rewrite (`afterToolCall`), and answer every call exactly once, in the model's order.
 * @module
 */
import { from } from 'rxjs';
import { executeToolCalls, type IndexedOutcome } from '../../operators/execute-tool-calls.js';
import { WrapperDecision } from '../middleware/compose-wrappers.js';
import type { ToolCallNext, ToolCallRequest, ToolOutcome } from '../middleware/wrapper-types.js';
import type { ApprovalRequest } from '../types/approval.js';
import { toolResultProblem } from '../types/check-tool-result.js';
import type { ToolCall } from '../types/content.js';
import { errorMessageOf, HookError, StatePatchError } from '../types/errors.js';
import type { AssistantMessage, ToolCallOutcome, ToolResultMessage } from '../types/messages.js';
import type { AgentToolResult } from '../types/tool.js';
import { emitResultMessage, finishCall, openCalls, startCall, type RunnableCall } from './call-records.js';
import { fromOp, wait, type Op } from './drive.js';
import { afterToolCall, holdCall, prepareCall } from './prepare-call.js';
import { errorOutcome, RunStopped, turnContext, type CallOutcome, type RunState, type TurnState } from './run-state.js';
import { executeTool$, runTool } from './run-tool.js';

/** What the batch produced. */
export interface BatchResult {
  /** The result messages emitted, in the model's order (not those of held calls). */
  readonly results: ToolResultMessage[];
  /** Every result asked to terminate. */
  readonly terminate: boolean;
  /** Calls held for approval: when there are any, the run suspends after the batch. */
  readonly held: readonly ApprovalRequest[];
}

/**
 * Runs the tool calls of `assistant`. In parallel mode every call is validated and gated first, in the model's
 * order; then the runnable calls execute at most `toolConcurrency` at a time, each settling on its own (a failing tool
 * is an error result, never a failed batch); `tool_execution_end` fires in completion order, and the result messages
 * follow the batch in the model's order. In sequential mode (the agent's setting, or any tool of the batch asking for
 * it) each call is handled and answered before the next one starts.
 */
export function* runToolBatch(
  run: RunState,
  turn: TurnState,
  assistant: AssistantMessage,
  calls: readonly ToolCall[],
): Op<BatchResult> {
  openCalls(turn, calls);
  // One call is the same in both modes (prepare, execute, answer): the common case, with no operator chain.
  if (calls.length === 1 || isSequential(run, calls)) {
    for (let index = 0; index < calls.length; index++) {
      const runnable = yield* prepareCall(run, turn, assistant, index);
      if (runnable !== undefined) {
        const outcome = yield* executeCall(run, turn, assistant, runnable);
        if (outcome !== undefined) finishCall(run, turn, index, outcome);
      }
      emitResultMessage(run, turn, index);
    }
  } else {
    // Two calls of one parallel batch must not change one state key: the sink checks each patch against this.
    turn.batchKeys = new Map();
    const runnable: RunnableCall[] = [];
    for (let index = 0; index < calls.length; index++) {
      const prepared = yield* prepareCall(run, turn, assistant, index);
      if (prepared !== undefined) runnable.push(prepared);
    }
    yield* executeInParallel(run, turn, assistant, runnable);
    for (let index = 0; index < calls.length; index++) emitResultMessage(run, turn, index);
    turn.batchKeys = undefined;
  }
  return batchResult(turn);
}

/**
 * Executes `runnable` calls together: at most `toolConcurrency` at a time through the public batch operator (one
 * `mergeMap`); each outcome is recorded by the model's index as it arrives, so `tool_execution_end` fires in
 * completion order. One call runs in place, with no operator chain.
 */
export function* executeInParallel(
  run: RunState,
  turn: TurnState,
  assistant: AssistantMessage,
  runnable: readonly RunnableCall[],
): Op<void> {
  if (runnable.length === 1) {
    const only = runnable[0]!;
    const outcome = yield* executeCall(run, turn, assistant, only);
    if (outcome !== undefined) finishCall(run, turn, only.index, outcome);
  } else if (runnable.length > 1) {
    const batch$ = from(runnable).pipe(
      executeToolCalls((call) => fromOp(() => executeCall(run, turn, assistant, call)), run.toolConcurrency),
    );
    yield wait(batch$, undefined, ({ index, outcome }: IndexedOutcome<CallOutcome | undefined>) => {
      if (outcome !== undefined) finishCall(run, turn, runnable[index]!.index, outcome);
    });
  }
}

/** The batch's results so far, whether all asked to terminate, and the calls it holds. */
export function batchResult(turn: TurnState): BatchResult {
  let terminate = true;
  const results: ToolResultMessage[] = [];
  for (let index = 0; index < turn.calls.length; index++) {
    const message = turn.resultMessages[index];
    if (message !== undefined) results.push(message);
    if (turn.outcomes[index]?.result.terminate !== true) terminate = false;
  }
  return { results, terminate: terminate && turn.held.length === 0, held: turn.held };
}

/** Whether the batch runs one call at a time: the agent's setting, or a tool of the batch asking for it. */
export function isSequential(run: RunState, calls: readonly ToolCall[]): boolean {
  if (run.toolExecution === 'sequential') return true;
  if (!run.hasSequentialTool) return false;
  for (let index = 0; index < calls.length; index++) {
    if (run.toolsByName.get(calls[index]!.name)?.executionMode === 'sequential') return true;
  }
  return false;
}

/**
 * Answers calls that will not run (the response hit the token limit, or a hook stopped the run) with `text`, with the
 * same events an executed call has.
 */
export function answerUnexecuted(
  run: RunState,
  turn: TurnState,
  calls: readonly ToolCall[],
  text: string,
  outcome: ToolCallOutcome,
): BatchResult {
  openCalls(turn, calls);
  for (let index = 0; index < calls.length; index++) {
    startCall(run, turn, index);
    finishCall(run, turn, index, errorOutcome(text, outcome));
    emitResultMessage(run, turn, index);
  }
  return { results: turn.resultMessages as ToolResultMessage[], terminate: false, held: [] };
}

/**
 * Executes one call (through the `wrapToolCall` onion, when there is one), then `afterToolCall`: the call's outcome,
 * for the caller to record ({@link finishCall}).
 */
export function* executeCall(
  run: RunState,
  turn: TurnState,
  assistant: AssistantMessage,
  runnable: RunnableCall,
): Op<CallOutcome | undefined> {
  const { call, tool, args } = runnable;
  let settled = false;
  const onUpdate = (partialResult: AgentToolResult) => {
    if (settled || run.signal.aborted) return;
    run.emit({
      type: 'tool_execution_update',
      runId: run.runId,
      toolCallId: call.id,
      toolName: call.name,
      partialResult,
    });
  };
  let outcome: CallOutcome;
  try {
    if (run.wrapToolCall !== undefined) {
      const request: ToolCallRequest = { toolCall: call, tool, args };
      const execute: ToolCallNext = (next) => executeTool$(run, next, onUpdate);
      const wrapCtx = {
        ...turnContext(run, turn),
        invocationId: `${run.runId}.${turn.index}.${call.id}`,
        assistantMessage: assistant,
      };
      const executed = (yield wait(run.wrapToolCall(request, wrapCtx, execute), undefined)) as ToolOutcome | undefined;
      const problem = executed === undefined ? 'no outcome' : toolResultProblem(executed.result);
      // A wrapper may answer in the tool's place (a cache hit, a replace decision): its result passes the same check
      // as a tool's.
      outcome =
        problem === undefined
          ? {
              result: executed!.result,
              isError: executed!.isError,
              outcome: executed!.outcome ?? (executed!.isError ? 'error' : 'ok'),
            }
          : errorOutcome(`Tool ${call.name} (through wrapToolCall) produced an invalid result: ${problem}`);
    } else if (tool.timeoutMs !== undefined || run.toolTimeoutMs !== undefined) {
      outcome = (yield wait(executeTool$(run, { toolCall: call, tool, args }, onUpdate), NO_OUTCOME)) as CallOutcome;
    } else {
      // In place, when no wrapper needs the call as an Observable and no timeout needs a signal of its own: the step
      // executeTool$ runs, without the Observable around it, so a plain or Promise result costs no operator chain.
      outcome = yield* runTool(run, call, tool, args, onUpdate, run.signal);
    }
  } catch (error) {
    // Cancellation goes on; a wrapper's bug ends the run (a HookError); anything else is this call's failure.
    if (run.signal.aborted) throw run.signal.reason;
    if (error instanceof WrapperDecision) {
      // A wrapper's pause holds the call (like a gate's); its stop ends the run.
      const { decision } = error;
      if (decision.kind === 'stop') throw new RunStopped(decision.outcome, decision.reason, decision.by);
      holdCall(run, turn, runnable.index, args, decision);
      return undefined;
    }
    if (error instanceof HookError || error instanceof RunStopped || error instanceof StatePatchError) throw error;
    outcome = errorOutcome(errorMessageOf(error));
  } finally {
    settled = true;
  }
  if (run.hooks.afterToolCall !== undefined) {
    outcome = yield* afterToolCall(run, turn, assistant, call, args, outcome, runnable.index);
  }
  return outcome;
}

const NO_OUTCOME: CallOutcome = { result: { content: [] }, isError: true, outcome: 'error' };
