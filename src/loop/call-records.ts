/**
 * The record of a turn's tool calls: which started, how each ended, its result message; each step emitted as it happens.
 * @module
 */
import type { AnyAgentTool } from '../types/tool.js';
import type { ToolCall } from '../types/content.js';
import type { ToolResultMessage } from '../types/messages.js';
import { runSink, toolResultMessage, type CallOutcome, type RunState, type TurnState } from './run-state.js';

/** A call that passed validation and `beforeToolCall`, ready to execute. */
export interface RunnableCall {
  readonly index: number;
  readonly call: ToolCall;
  readonly tool: AnyAgentTool;
  readonly args: Record<string, unknown>;
}

/** The turn's calls, and what is known of each, in arrays of exactly their length (before any call is started). */
export function openCalls(turn: TurnState, calls: readonly ToolCall[]): void {
  turn.calls = calls;
  turn.started = new Array<boolean>(calls.length).fill(false);
  turn.outcomes = new Array<CallOutcome | undefined>(calls.length).fill(undefined);
  turn.resultMessages = new Array<ToolResultMessage | undefined>(calls.length).fill(undefined);
}

/** Marks call `index` started and emits its `tool_execution_start`. */
export function startCall(run: RunState, turn: TurnState, index: number): void {
  const call = turn.calls[index]!;
  turn.started[index] = true;
  run.emit({
    type: 'tool_execution_start',
    runId: run.runId,
    toolCallId: call.id,
    toolName: call.name,
    args: call.arguments,
    seq: 0,
  });
}

/** Records a call's outcome and emits its `tool_execution_end`. */
export function finishCall(run: RunState, turn: TurnState, index: number, outcome: CallOutcome): void {
  const call = turn.calls[index]!;
  turn.outcomes[index] = outcome;
  run.emit({
    type: 'tool_execution_end',
    runId: run.runId,
    toolCallId: call.id,
    toolName: call.name,
    result: outcome.result,
    isError: outcome.isError,
    outcome: outcome.outcome,
    seq: 0,
  });
}

/** Emits the result message of call `index` (once; none for a call held for approval) and adds it to the transcript. */
export function emitResultMessage(run: RunState, turn: TurnState, index: number): void {
  const outcome = turn.outcomes[index];
  if (turn.resultMessages[index] !== undefined || outcome === undefined) return;
  const call = turn.calls[index]!;
  const spent = turn.spent?.get(call.id);
  // A result that gives its own usage without having reported it as it spent: the run counts it now.
  if (outcome.result.usage !== undefined && spent === undefined) run.spend?.(outcome.result.usage);
  const message = toolResultMessage(call, outcome, spent);
  turn.resultMessages[index] = message;
  run.emit({ type: 'message_start', runId: run.runId, message, seq: 0 });
  run.transcript.push(message);
  run.newMessages.push(message);
  run.emit({ type: 'message_end', runId: run.runId, message, seq: 0 });
}

/**
 * The sink for the hooks of call `index`: in a parallel batch, patches are checked against the other calls' (see
 * {@link runSink}). Outside one, the run's own sink.
 */
export function callSink(run: RunState, turn: TurnState, index: number) {
  return turn.batchKeys === undefined ? run.sink : runSink(run, index);
}
