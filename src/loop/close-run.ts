/**
 * Closing a run interrupted by cancellation, a failure or a stop, so that its transcript stays consistent.
 * @module
 */
import { errorMessageOf } from '../types/errors.js';
import { isRecordOnly, toolCallsOf, type AssistantMessage, type ToolResultMessage } from '../types/messages.js';
import {
  addMessage,
  closingMessage,
  errorOutcome,
  newTurn,
  RunStopped,
  type RunState,
  type TurnState,
} from './run-state.js';
import { emitResultMessage, finishCall, openCalls, startCall } from './call-records.js';
import { storable } from './stream-guard.js';

/** Ends the turn `state`: `turn_end` with its assistant message and tool results. */
export function endTurn(
  run: RunState,
  state: TurnState,
  message: AssistantMessage,
  toolResults: readonly ToolResultMessage[],
): void {
  run.turn = undefined;
  run.emit({ type: 'turn_end', runId: run.runId, turnIndex: state.index, message, toolResults, seq: 0 });
}

/**
 * Closes a run interrupted by cancellation or a failure, so the transcript stays consistent: the streaming message
 * ends (as `aborted`/`error`), a settled response gets its `message_end`, every tool call gets exactly one result,
 * the turn ends, and unless the turn's own message already says why the run stopped, a closing assistant message does.
 *
 * Kept in small pieces: a function is compiled when first called, and a run cancelled mid-stream (the common case)
 * calls only the first two.
 */
export function closeRun(run: RunState, aborted: boolean, reason: unknown): void {
  const state = run.turn;
  if (state === undefined) {
    closingTurn(run, aborted, reason);
    return;
  }
  if (state.streaming !== undefined) {
    if (reason instanceof RunStopped && reason.outcome === 'stopped') retractStreamingMessage(run, state, reason);
    else endStreamingMessage(run, state, aborted, reason);
  } else if (state.response !== undefined) endSettledResponse(run, state);

  const assistant = state.assistant;
  if (assistant === undefined) {
    // The model call never happened: the closing message is this turn's message.
    const closing = closingMessage(run, aborted, reason);
    addMessage(run, closing);
    endTurn(run, state, closing, []);
    return;
  }
  if (isRecordOnly(assistant)) {
    endTurn(
      run,
      state,
      assistant,
      state.resultMessages.filter((message) => message !== undefined),
    );
    return;
  }
  answerOpenCalls(run, state, assistant, aborted, reason);
  endTurn(
    run,
    state,
    assistant,
    state.resultMessages.filter((message) => message !== undefined),
  );
  closingTurn(run, aborted, reason);
}

/**
 * A stop on purpose (a guardrail trip) while a message streams: what was streamed is withdrawn, never stored nor
 * ended — the UI drops it on `message_retracted`, and the closing message says why the run stopped.
 */
function retractStreamingMessage(run: RunState, state: TurnState, reason: RunStopped): void {
  const message = state.streaming!;
  state.streaming = undefined;
  run.spend?.(message.usage);
  run.emit({
    type: 'message_retracted',
    runId: run.runId,
    turnIndex: state.index,
    by: reason.by ?? 'middleware',
    reason: reason.reason,
  });
}

/** The message being streamed ends as `aborted` (or `error`), with what was received so far. */
function endStreamingMessage(run: RunState, state: TurnState, aborted: boolean, reason: unknown): void {
  // The snapshot passed only the per-event checks of the provider boundary: stored only in a well-formed form.
  const message = storable(
    {
      ...state.streaming!,
      stopReason: aborted ? 'aborted' : 'error',
      errorMessage: errorMessageOf(reason),
      ...(aborted ? { errorKind: 'aborted' as const } : {}),
    },
    run.provider.id,
    run.model.id,
  );
  state.streaming = undefined;
  state.assistant = message;
  // What the cut-off call spent, as far as the provider reported it, counts.
  run.spend?.(message.usage);
  run.transcript.push(message);
  run.newMessages.push(message);
  run.emit({ type: 'message_end', runId: run.runId, message });
}

/** A complete response still waiting for `afterModelResponse` gets its `message_end` as it is. */
function endSettledResponse(run: RunState, state: TurnState): void {
  const message = state.response!;
  state.response = undefined;
  state.assistant = message;
  run.transcript.push(message);
  run.newMessages.push(message);
  run.emit({ type: 'message_end', runId: run.runId, message });
}

/** Every tool call of `assistant` without an outcome gets an error result (and its events); results are emitted. */
function answerOpenCalls(
  run: RunState,
  state: TurnState,
  assistant: AssistantMessage,
  aborted: boolean,
  reason: unknown,
): void {
  if (state.calls.length === 0) openCalls(state, toolCallsOf(assistant));
  const text = aborted
    ? 'Tool call aborted: the run was cancelled'
    : reason instanceof RunStopped
      ? `Tool call not completed: the run was stopped (${reason.reason})`
      : `Tool call not completed: the run ended because of an error (${errorMessageOf(reason)})`;
  for (let index = 0; index < state.calls.length; index++) {
    if (state.outcomes[index] !== undefined) continue;
    if (!state.started[index]) startCall(run, state, index);
    finishCall(run, state, index, errorOutcome(text, 'aborted'));
  }
  for (let index = 0; index < state.calls.length; index++) emitResultMessage(run, state, index);
}

/** A turn of its own for the closing message, standing in for the model call that was not made. */
function closingTurn(run: RunState, aborted: boolean, reason: unknown): void {
  const state = newTurn(run.turnIndex++);
  run.emit({ type: 'turn_start', runId: run.runId, turnIndex: state.index });
  const closing = closingMessage(run, aborted, reason);
  addMessage(run, closing);
  endTurn(run, state, closing, []);
}
