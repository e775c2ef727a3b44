/**
 * Resuming a tool batch that was suspended for approval: the answered calls run (or get their denial), then the loop
 * goes on as after any batch.
 * @module
 */
import { rememberedApprovalKey, type ApprovalAnswer, type ApprovalRequest } from '../types/approval.js';
import { toolCallsOf, type AssistantMessage, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Op } from './drive.js';
import { INTERRUPTED_TOOL_RESULT } from './interrupted-tool-results.js';
import { addMessage, applyRunPatch, errorOutcome, newTurn, type CallOutcome, type RunState } from './run-state.js';
import { emitResultMessage, finishCall, openCalls, startCall, type RunnableCall } from './call-records.js';
import { afterToolCall, prepareCall } from './prepare-call.js';
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
  /**
   * The approval request of each held call, by tool-call id: its `requestId` is what `beforeToolCall` sees as
   * `ctx.approval.requestId` (without it, the tool-call id), and its `expiresAt` is checked when the batch resumes.
   */
  readonly requests?: ReadonlyMap<string, ApprovalRequest> | undefined;
}

/**
 * The resumed batch, as a turn of its own (no model call): `turn_start`, each held call's events, their result
 * messages in the model's order, and `turn_end` with every result of the assistant message. Approved calls (edited
 * ones with the edit) are validated again and go through `beforeToolCall` again with `ctx.approval` set, all of them
 * before any runs: a denial there makes the call `denied`, a pause holds it again (the run suspends again), a stop
 * ends the run. An approval past its request's `expiresAt` gives the call the outcome `expired` (it does not run);
 * denied calls get `denied`, aborted ones `aborted`, interrupted ones `interrupted`. An approval with
 * `remember: 'thread'` sets the state key `approvals.allow.<toolName>` (producer `approvals`). A client tool's call
 * answered with `{ output }` gets that output as its result (through `afterToolCall`; it does not run here). Calls
 * answered before the suspension are not run again.
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
  // One clock reading for the batch: every held call is checked against the moment the run resumed.
  const now = Date.now();
  let remembered: Set<string> | undefined;
  for (let index = 0; index < held.length; index++) {
    const call = held[index]!;
    const answer = answers.get(call.id);
    const tool = run.toolsByName.get(call.name);
    const request = resume.requests?.get(call.id);
    if (answer !== undefined && 'output' in answer) {
      // A client tool's call: the client ran it, its output is the call's one result (after `afterToolCall`), whether
      // or not this run has the tool (a front end's run tools are given per run).
      startCall(run, turn, index);
      const content =
        typeof answer.output === 'string' ? [{ type: 'text' as const, text: answer.output }] : [...answer.output];
      const isError = answer.isError === true;
      const given: CallOutcome = {
        result: { content, ...(isError ? { isError } : {}) },
        isError,
        outcome: isError ? 'error' : 'ok',
      };
      finishCall(run, turn, index, yield* afterToolCall(run, turn, assistant, call, call.arguments, given, index));
      continue;
    }
    // A client tool's call denied gets its denial whether or not this run has the tool.
    const gone = tool === undefined && !(request?.clientTool === true && answer !== undefined && 'deny' in answer);
    if (answer === undefined || 'abort' in answer || 'interrupted' in answer || gone) {
      startCall(run, turn, index);
      finishCall(run, turn, index, unrunnable(answer, call.name));
      continue;
    }
    if ('deny' in answer || (request?.expiresAt !== undefined && now > request.expiresAt)) {
      startCall(run, turn, index);
      const args = 'edit' in answer ? answer.edit : call.arguments;
      const closed =
        'deny' in answer
          ? errorOutcome(answer.deny, 'denied')
          : errorOutcome(
              `The approval of this ${call.name} call expired at ${new Date(request!.expiresAt!).toISOString()}; ` +
                'the call did not run',
              'expired',
            );
      finishCall(run, turn, index, yield* afterToolCall(run, turn, assistant, call, args, closed, index));
      continue;
    }
    if ('approve' in answer && answer.remember === 'thread' && !remembered?.has(call.name)) {
      (remembered ??= new Set()).add(call.name);
      applyRunPatch(run, APPROVALS_PRODUCER, { set: { [rememberedApprovalKey(call.name)]: true } });
    }
    // The gate again, on the call as it will run (the seed: resume re-checks deadlines and the target's state); every
    // gate answers before any call runs, as in a turn.
    const prepared = yield* prepareCall(run, turn, assistant, index, {
      requestId: request?.requestId ?? call.id,
      answer,
    });
    if (prepared !== undefined) runnable.push(prepared);
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

/** The producer of the state patch a remembered approval makes (`approvals.allow.<toolName>`). */
export const APPROVALS_PRODUCER = 'approvals';

/** The outcome of a held call that cannot run: never answered or aborted, interrupted, or its tool is gone. */
function unrunnable(answer: ResumeAnswer | undefined, toolName: string): CallOutcome {
  if (answer === undefined || 'abort' in answer) {
    return errorOutcome(`Tool call aborted: ${answer?.abort ?? 'it was never answered'}`, 'aborted');
  }
  if ('interrupted' in answer) return errorOutcome(INTERRUPTED_TOOL_RESULT, 'interrupted');
  return errorOutcome(`Tool ${toolName} not found`);
}

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
