/**
 * Resuming a tool batch that was suspended for approval: the answered calls run (or get their denial), then the loop
 * goes on as after any batch.
 * @module
 */
import { validateToolArguments, type ValidationOutcome } from '../tools/define-tool.js';
import type { ApprovalAnswer } from '../types/approval.js';
import { errorMessageOf } from '../types/errors.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import { toolCallsOf, type AssistantMessage, type Message, type ToolResultMessage } from '../types/messages.js';
import { wait, type Op } from './drive.js';
import { INTERRUPTED_TOOL_RESULT } from './interrupted-tool-results.js';
import { addMessage, errorOutcome, newTurn, type RunState } from './run-state.js';
import { emitResultMessage, finishCall, openCalls, startCall, type RunnableCall } from './call-records.js';
import { afterToolCall } from './prepare-call.js';
import { batchResult, executeCall, executeInParallel, isSequential, type BatchResult } from './tool-batch.js';

/**
 * How each held call of a suspended batch is answered: a person's answer, an abort (`abortPending`), or `interrupted`
 * (its approval was stored but the process stopped before the call finished, and the tool is not idempotent).
 */
export type ResumeAnswer = ApprovalAnswer | { readonly abort: string } | { readonly interrupted: true };

/** A suspended batch to finish before the run goes on (see `RunAgentLoopOptions.resume`). */
export interface ResumeBatch {
  /** The assistant message whose calls were held; it is in the history, with the results of the calls that ran. */
  readonly assistant: AssistantMessage;
  /** The answer of each held call, by tool-call id. */
  readonly answers: ReadonlyMap<string, ResumeAnswer>;
  /** After the batch, end the run as cancelled with this reason (`abortPending`). */
  readonly abort?: string | undefined;
  /** Messages injected in the suspended turn (`agent_end.deferredMessages`): added after the batch's results. */
  readonly inject?: readonly Message[] | undefined;
}

/**
 * The resumed batch, as a turn of its own (no model call): `turn_start`, each held call's events (approved calls run
 * with their arguments validated again, edited ones with the edit; denied ones get the denial as an outcome `denied`;
 * aborted ones `aborted`; interrupted ones `interrupted`), their result messages in the model's order, and `turn_end`
 * with every result of the assistant message. Calls answered before the suspension are not run again.
 */
export function* resumeBatch(run: RunState, resume: ResumeBatch): Op<BatchResult> {
  const turn = newTurn(run.turnIndex++);
  run.turn = turn;
  run.emit({ type: 'turn_start', runId: run.runId, turnIndex: turn.index });
  const { assistant, answers } = resume;
  turn.assistant = assistant;
  const answered = resultsAfter(run, assistant);
  const held = toolCallsOf(assistant).filter((call) => !answered.has(call.id));
  openCalls(turn, held);
  const runnable: RunnableCall[] = [];
  for (let index = 0; index < held.length; index++) {
    const call = held[index]!;
    startCall(run, turn, index);
    const answer = answers.get(call.id);
    if (answer === undefined || 'abort' in answer) {
      finishCall(
        run,
        turn,
        index,
        errorOutcome(`Tool call aborted: ${answer?.abort ?? 'it was never answered'}`, 'aborted'),
      );
      continue;
    }
    if ('interrupted' in answer) {
      finishCall(run, turn, index, errorOutcome(INTERRUPTED_TOOL_RESULT, 'interrupted'));
      continue;
    }
    const tool = run.toolsByName.get(call.name);
    if (tool === undefined) {
      finishCall(run, turn, index, errorOutcome(`Tool ${call.name} not found`));
      continue;
    }
    if ('deny' in answer) {
      const denied = errorOutcome(answer.deny, 'denied');
      finishCall(run, turn, index, yield* afterToolCall(run, turn, assistant, call, call.arguments, denied, index));
      continue;
    }
    const args = 'edit' in answer ? answer.edit : call.arguments;
    let validation: ValidationOutcome;
    try {
      const validated = validateToolArguments(tool, args);
      validation = isPromiseLike(validated) ? ((yield wait(validated, UNFINISHED)) as ValidationOutcome) : validated;
    } catch (error) {
      if (run.signal.aborted) throw run.signal.reason;
      validation = { ok: false, message: `Invalid arguments for tool "${call.name}": ${errorMessageOf(error)}` };
    }
    if (!validation.ok) {
      finishCall(run, turn, index, errorOutcome(validation.message));
      continue;
    }
    runnable.push({ index, call, tool, args: validation.args });
  }
  if (isSequential(run, held)) {
    for (const call of runnable) {
      const outcome = yield* executeCall(run, turn, assistant, call);
      if (outcome !== undefined) finishCall(run, turn, call.index, outcome);
    }
  } else {
    yield* executeInParallel(run, turn, assistant, runnable);
  }
  for (let index = 0; index < held.length; index++) emitResultMessage(run, turn, index);
  const batch = batchResult(turn);
  if (batch.held.length > 0) {
    // A wrapper held an approved call again: the run suspends again, as a turn would (no turn_end; the messages
    // deferred from the first suspension stay deferred). `run.turn` keeps the held requests for the loop.
    turn.deferred = resume.inject ?? [];
    return batch;
  }
  for (const message of resume.inject ?? []) addMessage(run, message);
  // The turn's results: those the suspended run stored, then these, in the model's order.
  const all = new Map<string, ToolResultMessage>(answered);
  for (const message of batch.results) all.set(message.toolCallId, message);
  const toolResults = toolCallsOf(assistant)
    .map((call) => all.get(call.id))
    .filter((message): message is ToolResultMessage => message !== undefined);
  run.turn = undefined;
  run.emit({ type: 'turn_end', runId: run.runId, turnIndex: turn.index, message: assistant, toolResults });
  return batch;
}

const UNFINISHED: ValidationOutcome = { ok: false, message: 'Validation did not finish' };

/** The results already in the transcript for `assistant`'s calls, by tool-call id. */
function resultsAfter(run: RunState, assistant: AssistantMessage): Map<string, ToolResultMessage> {
  const at = run.transcript.lastIndexOf(assistant);
  const found = new Map<string, ToolResultMessage>();
  for (let i = at + 1; at >= 0 && i < run.transcript.length; i++) {
    const message = run.transcript[i]!;
    if (message.role === 'toolResult') found.set(message.toolCallId, message);
    else break;
  }
  return found;
}
