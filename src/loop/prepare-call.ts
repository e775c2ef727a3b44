/**
 * Before a tool call runs: its arguments validated, `beforeToolCall` asked (a denial, a replacement, a pause or a stop
 * settles it here); and after it: `afterToolCall`.
 * @module
 */
import { HOOK_SINK } from '../middleware/hook-sink.js';
import type { AfterToolCallContext, BeforeToolCallContext } from '../middleware/types.js';
import { validateToolArguments, type ValidationOutcome } from '../tools/define-tool.js';
import type { ApprovalRequest, ResumedApproval } from '../types/approval.js';
import type { ToolCall } from '../types/content.js';
import { isHookDecision, type PauseDecision } from '../types/decision.js';
import { errorMessageOf, InvalidInputError } from '../types/errors.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import type { AssistantMessage } from '../types/messages.js';
import { callSink, finishCall, startCall, type RunnableCall } from './call-records.js';
import { answerFinalCall } from './output-turn.js';
import { wait, type Op } from './drive.js';
import {
  callHook,
  errorOutcome,
  RunStopped,
  turnContext,
  type CallOutcome,
  type RunState,
  type TurnState,
} from './run-state.js';

const VALIDATION_UNFINISHED: ValidationOutcome = { ok: false, message: 'Validation did not finish' };

/**
 * Validation, then `beforeToolCall`. Returns the call to execute, or `undefined` when it is already answered. With
 * `approval` (a held call resumed), the arguments validated are the edit's if it is one, and the hook's context says
 * so (`BeforeToolCallContext.approval`).
 */
export function* prepareCall(
  run: RunState,
  turn: TurnState,
  assistant: AssistantMessage,
  index: number,
  approval?: ResumedApproval,
): Op<RunnableCall | undefined> {
  const call = turn.calls[index]!;
  startCall(run, turn, index);
  // In `tool` mode the final tool's call is the answer: checked in place of running a tool (no hook gates it).
  const final = turn.attemptOutput;
  if (final !== undefined && final.toolName === call.name && run.outputPlan !== undefined) {
    yield* answerFinalCall(run, turn, index);
    return undefined;
  }

  if (call.invalidArguments !== undefined) {
    return rejectCall(
      run,
      turn,
      index,
      `Tool call arguments for "${call.name}" are not valid JSON (${invalidJsonReason(call.invalidArguments)}). ` +
        `Received: ${call.invalidArguments}`,
    );
  }
  const tool = run.toolsByName.get(call.name);
  if (tool === undefined) return rejectCall(run, turn, index, `Tool ${call.name} not found`);

  let validation: ValidationOutcome;
  try {
    const given = approval !== undefined && 'edit' in approval.answer ? approval.answer.edit : call.arguments;
    const validated = validateToolArguments(tool, given);
    validation = isPromiseLike(validated)
      ? ((yield wait(validated, VALIDATION_UNFINISHED)) as ValidationOutcome)
      : validated;
  } catch (error) {
    if (run.signal.aborted) throw run.signal.reason;
    validation = { ok: false, message: `Invalid arguments for tool "${call.name}": ${errorMessageOf(error)}` };
  }
  if (!validation.ok) return rejectCall(run, turn, index, validation.message);
  const args = validation.args;

  const { beforeToolCall } = run.hooks;
  if (beforeToolCall !== undefined) {
    const ctx = turnContext(run, turn);
    const answer = yield* callHook(
      run,
      'beforeToolCall',
      { toolCall: call, args },
      () => {
        const hookCtx = {
          ...ctx,
          assistantMessage: assistant,
          toolCall: call,
          args,
          context: ctx,
          [HOOK_SINK]: callSink(run, turn, index),
        } as BeforeToolCallContext;
        // Only a resumed call's context has the field (a first pass builds the same object as before).
        if (approval !== undefined) (hookCtx as { approval?: ResumedApproval }).approval = approval;
        return beforeToolCall(hookCtx);
      },
      undefined,
    );
    if (answer !== undefined) {
      let decided: CallOutcome | undefined;
      if (isHookDecision(answer)) {
        switch (answer.kind) {
          case 'continue':
            break;
          case 'replace': {
            const isError = answer.value.isError === true;
            decided = { result: answer.value, isError, outcome: isError ? 'error' : 'ok' };
            break;
          }
          case 'pause':
            holdCall(run, turn, index, args, answer);
            return undefined;
          case 'stop':
            throw new RunStopped(answer.outcome, answer.reason, answer.by);
        }
      } else if (answer.block === true) {
        decided = errorOutcome(answer.reason ?? `Tool call ${call.name} was blocked`, 'denied');
      }
      if (decided !== undefined) {
        finishCall(run, turn, index, yield* afterToolCall(run, turn, assistant, call, args, decided, index));
        return undefined;
      }
    }
  }
  // A client tool runs in the front end: once the gate let it through, it is held for the client's `{ output }`.
  if (tool.client === true) {
    holdCall(run, turn, index, args, { reason: CLIENT_TOOL_REASON }, true);
    return undefined;
  }
  return { index, call, tool, args };
}

/** The reason of a client tool call's request (`ApprovalRequest.reason`, with `clientTool: true`). */
export const CLIENT_TOOL_REASON = 'client_tool';

/**
 * Holds call `index` for approval: it gets no result in this run, and the run suspends after the batch. The request's
 * id is the pause's `resumeToken`, else `<runId>:<toolCallId>`; a token that is not a non-empty string, or that
 * another held call of the batch has, is an {@link InvalidInputError} (the run fails: the request could not be told
 * apart from the other).
 */
export function holdCall(
  run: RunState,
  turn: TurnState,
  index: number,
  args: Readonly<Record<string, unknown>>,
  pause: Pick<PauseDecision, 'reason' | 'payload' | 'resumeToken' | 'expiresAt'>,
  clientTool = false,
): void {
  const call = turn.calls[index]!;
  const { reason, payload, resumeToken, expiresAt } = pause;
  if (resumeToken !== undefined) {
    if (typeof resumeToken !== 'string' || resumeToken === '') {
      throw new InvalidInputError(`The pause of tool call ${call.id}: \`resumeToken\` must be a non-empty string`);
    }
    if (turn.held.some((held) => held.requestId === resumeToken)) {
      throw new InvalidInputError(`The pause of tool call ${call.id}: resume token "${resumeToken}" is already held`);
    }
  }
  if (expiresAt !== undefined && !Number.isFinite(expiresAt)) {
    throw new InvalidInputError(`The pause of tool call ${call.id}: \`expiresAt\` must be a finite epoch-ms number`);
  }
  const request: ApprovalRequest = {
    requestId: resumeToken ?? `${run.runId}:${call.id}`,
    toolCallId: call.id,
    toolName: call.name,
    args,
    reason,
    ...(payload === undefined ? {} : { payload }),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    ...(clientTool ? { clientTool: true as const } : {}),
  };
  turn.held.push(request);
  run.emit({ type: 'approval_requested', runId: run.runId, ...request });
}

/** Answers call `index` with an error result before it runs; returns `undefined` (nothing left to execute). */
function rejectCall(run: RunState, turn: TurnState, index: number, text: string): undefined {
  finishCall(run, turn, index, errorOutcome(text));
  return undefined;
}

/** `afterToolCall`: a partial result merged over the call's outcome, field by field. */
export function* afterToolCall(
  run: RunState,
  turn: TurnState,
  assistant: AssistantMessage,
  call: ToolCall,
  args: Record<string, unknown>,
  outcome: CallOutcome,
  index: number,
): Op<CallOutcome> {
  const hook = run.hooks.afterToolCall;
  if (hook === undefined) return outcome;
  const ctx = turnContext(run, turn);
  const patch = yield* callHook(
    run,
    'afterToolCall',
    { toolCall: call, args, result: outcome.result },
    () =>
      hook({
        ...ctx,
        assistantMessage: assistant,
        toolCall: call,
        args,
        result: outcome.result,
        isError: outcome.isError,
        context: ctx,
        [HOOK_SINK]: callSink(run, turn, index),
      } as AfterToolCallContext),
    undefined,
  );
  if (patch === undefined || patch === null) return outcome;
  const { result } = outcome;
  const isError = patch.isError ?? outcome.isError;
  const details = patch.details !== undefined ? patch.details : result.details;
  const terminate = patch.terminate ?? result.terminate;
  return {
    result: {
      content: patch.content ?? result.content,
      ...(details !== undefined ? { details } : {}),
      ...(isError ? { isError } : {}),
      ...(terminate !== undefined ? { terminate } : {}),
      // What the call spent stays counted, whatever the hook says of its result.
      ...(result.usage !== undefined ? { usage: result.usage } : {}),
    },
    isError,
    // A denial or an abort stays what it was; a result the hook turned into an error (or back) is `error` (or `ok`).
    outcome: outcome.outcome === 'ok' || outcome.outcome === 'error' ? (isError ? 'error' : 'ok') : outcome.outcome,
  };
}

function invalidJsonReason(raw: string): string {
  try {
    const value: unknown = JSON.parse(raw);
    return `expected a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`;
  } catch (error) {
    return errorMessageOf(error);
  }
}
