/**
 * A turn's tool batch: validate, gate (`beforeToolCall`), execute (in parallel through `mergeMap`, or one by one),
 * rewrite (`afterToolCall`), and answer every call exactly once, in the model's order.
 * @module
 */
import { defer, from, isObservable, Observable, timeout } from 'rxjs';
import { executeToolCalls, type IndexedOutcome } from '../../operators/execute-tool-calls.js';
import type { ToolCallNext, ToolCallRequest, ToolOutcome } from '../middleware/wrapper-types.js';
import { toolResultProblem } from '../types/check-tool-result.js';
import { validateToolArguments, type ValidationOutcome } from '../tools/define-tool.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { ToolCall } from '../types/content.js';
import { isHookDecision } from '../types/decision.js';
import { errorMessageOf, HookError, StatePatchConflictError, ToolExecutionError } from '../types/errors.js';
import type { AssistantMessage, ToolCallOutcome, ToolResultMessage } from '../types/messages.js';
import type { AgentToolResult, AnyAgentTool } from '../types/tool.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import { fromOp, wait, type Op } from './drive.js';
import {
  callHook,
  errorOutcome,
  errorResult,
  RunStopped,
  runSink,
  toolResultMessage,
  turnContext,
  type CallOutcome,
  type RunState,
  type TurnState,
} from './run-state.js';
import { HOOK_SINK } from '../middleware/hook-sink.js';
import { WrapperDecision } from '../middleware/compose-wrappers.js';
import type { AfterToolCallContext, BeforeToolCallContext } from '../middleware/types.js';

/** A call that passed validation and `beforeToolCall`, ready to execute. */
export interface RunnableCall {
  readonly index: number;
  readonly call: ToolCall;
  readonly tool: AnyAgentTool;
  readonly args: Record<string, unknown>;
}

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

/** The turn's calls, and what is known of each, in arrays of exactly their length (before any call is started). */
export function openCalls(turn: TurnState, calls: readonly ToolCall[]): void {
  turn.calls = calls;
  turn.started = new Array<boolean>(calls.length).fill(false);
  turn.outcomes = new Array<CallOutcome | undefined>(calls.length).fill(undefined);
  turn.resultMessages = new Array<ToolResultMessage | undefined>(calls.length).fill(undefined);
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

/** Validation, then `beforeToolCall`. Returns the call to execute, or `undefined` when it is already answered. */
function* prepareCall(
  run: RunState,
  turn: TurnState,
  assistant: AssistantMessage,
  index: number,
): Op<RunnableCall | undefined> {
  const call = turn.calls[index]!;
  startCall(run, turn, index);

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
    const validated = validateToolArguments(tool, call.arguments);
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
      () =>
        beforeToolCall({
          ...ctx,
          assistantMessage: assistant,
          toolCall: call,
          args,
          context: ctx,
          [HOOK_SINK]: callSink(run, turn, index),
        } as BeforeToolCallContext),
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
            holdCall(run, turn, index, args, answer.reason, answer.payload);
            return undefined;
          case 'stop':
            throw new RunStopped(answer.outcome, answer.reason);
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
  return { index, call, tool, args };
}

/** Holds call `index` for approval: it gets no result in this run, and the run suspends after the batch. */
function holdCall(
  run: RunState,
  turn: TurnState,
  index: number,
  args: Readonly<Record<string, unknown>>,
  reason: string,
  payload: unknown,
): void {
  const call = turn.calls[index]!;
  const request: ApprovalRequest = {
    requestId: `${run.runId}:${call.id}`,
    toolCallId: call.id,
    toolName: call.name,
    args,
    reason,
    ...(payload === undefined ? {} : { payload }),
  };
  turn.held.push(request);
  run.emit({ type: 'approval_requested', runId: run.runId, ...request });
}

/**
 * The sink for the hooks of call `index`: in a parallel batch, patches are checked against the other calls' (see
 * {@link runSink}). Outside one, the run's own sink.
 */
function callSink(run: RunState, turn: TurnState, index: number) {
  return turn.batchKeys === undefined ? run.sink : runSink(run, index);
}

const VALIDATION_UNFINISHED: ValidationOutcome = { ok: false, message: 'Validation did not finish' };

/** Answers call `index` with an error result before it runs; returns `undefined` (nothing left to execute). */
function rejectCall(run: RunState, turn: TurnState, index: number, text: string): undefined {
  finishCall(run, turn, index, errorOutcome(text));
  return undefined;
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
      if (decision.kind === 'stop') throw new RunStopped(decision.outcome, decision.reason);
      holdCall(run, turn, runnable.index, args, decision.reason, decision.payload);
      return undefined;
    }
    if (error instanceof HookError || error instanceof RunStopped || error instanceof StatePatchConflictError)
      throw error;
    outcome = errorOutcome(errorMessageOf(error));
  } finally {
    settled = true;
  }
  if (run.hooks.afterToolCall !== undefined) {
    outcome = yield* afterToolCall(run, turn, assistant, call, args, outcome, runnable.index);
  }
  return outcome;
}

/**
 * Runs a tool: the one definition of what executing a call gives, whichever way it is run (in place, or as
 * {@link executeTool$}). The tool's output — a plain value, a Promise, or an Observable whose emissions before the
 * last are progress updates ({@link withUpdates}) — becomes its outcome ({@link normalizeResult}); a tool that throws,
 * rejects or errors gives an error outcome ({@link failedOutcome}) — except cancellation, which goes on.
 */
function* runTool(
  run: RunState,
  toolCall: ToolCall,
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  onUpdate: (partial: AgentToolResult) => void,
  signal: AbortSignal,
): Op<CallOutcome & ToolOutcome> {
  try {
    let raw: unknown = tool.execute(toolCall.id, args, { signal, onUpdate, toolCall, run: run.info });
    if (isObservable(raw)) raw = yield wait(withUpdates(raw, onUpdate), NO_RESULT);
    else if (isPromiseLike(raw)) raw = yield wait(raw, NO_RESULT);
    return normalizeResult(toolCall.name, raw);
  } catch (error) {
    if (run.signal.aborted) throw error;
    return failedOutcome(toolCall, error);
  }
}

/**
 * Executes a tool: the innermost layer of the tool-call onion, {@link runTool} as a cold Observable of one outcome.
 * With a timeout (the tool's, or the agent's), a call that overruns it gets an error outcome saying so, and its own
 * signal aborts with a `TimeoutError` so the tool can stop.
 */
function executeTool$(
  run: RunState,
  request: ToolCallRequest,
  onUpdate: (partial: AgentToolResult) => void,
): Observable<ToolOutcome> {
  const { toolCall, tool, args } = request;
  const timeoutMs = tool.timeoutMs ?? run.toolTimeoutMs;
  if (timeoutMs === undefined) return fromOp(() => runTool(run, toolCall, tool, args, onUpdate, run.signal));
  return defer(() => {
    // One controller per run is the rule; a call gets its own only when it has a timeout to enforce.
    const controller = new AbortController();
    const signal = AbortSignal.any([run.signal, controller.signal]);
    return fromOp(() => runTool(run, toolCall, tool, args, onUpdate, signal)).pipe(
      timeout({
        first: timeoutMs,
        with: () => {
          const message = `Tool ${toolCall.name} timed out after ${timeoutMs} ms`;
          // The reason a timed-out signal carries everywhere else (AbortSignal.timeout): a DOMException TimeoutError.
          controller.abort(new DOMException(message, 'TimeoutError'));
          return [failedOutcome(toolCall, new ToolTimeout(message))];
        },
      }),
    );
  });
}

/** A failed execution as an outcome: an error result with the failure's message for the model. */
function failedOutcome(toolCall: ToolCall, cause: unknown): CallOutcome & ToolOutcome {
  const failure = new ToolExecutionError({ toolName: toolCall.name, toolCallId: toolCall.id, cause });
  return { result: errorResult(failure.message), isError: true, outcome: 'error', error: failure };
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
  });
}

/** Emits the result message of call `index` (once; none for a call held for approval) and adds it to the transcript. */
export function emitResultMessage(run: RunState, turn: TurnState, index: number): void {
  const outcome = turn.outcomes[index];
  if (turn.resultMessages[index] !== undefined || outcome === undefined) return;
  const message = toolResultMessage(turn.calls[index]!, outcome);
  turn.resultMessages[index] = message;
  run.emit({ type: 'message_start', runId: run.runId, message });
  run.transcript.push(message);
  run.newMessages.push(message);
  run.emit({ type: 'message_end', runId: run.runId, message });
}

const NO_RESULT = Symbol('no result');
const NO_OUTCOME: CallOutcome = { result: { content: [] }, isError: true, outcome: 'error' };

/**
 * An Observable tool's result: its last emission (`NO_RESULT` when it emits nothing); each emission before the last is
 * reported through `onUpdate` when the next one arrives.
 */
function withUpdates(output: Observable<unknown>, onUpdate: (partial: AgentToolResult) => void): Observable<unknown> {
  return new Observable<unknown>((subscriber) => {
    let previous: unknown = NO_RESULT;
    return output.subscribe({
      next: (value) => {
        if (previous !== NO_RESULT) onUpdate(normalizeResult('', previous).result);
        previous = value;
      },
      error: (error: unknown) => subscriber.error(error),
      complete: () => {
        subscriber.next(previous);
        subscriber.complete();
      },
    });
  });
}

class ToolTimeout extends Error {}

/** A string is one text block; anything else must look like an {@link AgentToolResult}. */
function normalizeResult(toolName: string, raw: unknown): CallOutcome {
  if (typeof raw === 'string') {
    return { result: { content: [{ type: 'text', text: raw }] }, isError: false, outcome: 'ok' };
  }
  if (raw === NO_RESULT) return errorOutcome(`Tool ${toolName} completed without a result`);
  if (raw !== null && typeof raw === 'object' && Array.isArray((raw as AgentToolResult).content)) {
    // Checked here, at the boundary: a malformed result stored in the thread would break every later request on it.
    const problem = toolResultProblem(raw);
    if (problem !== undefined) return errorOutcome(`Tool ${toolName} returned an invalid result: ${problem}`);
    const result = raw as AgentToolResult;
    const isError = result.isError === true;
    return { result, isError, outcome: isError ? 'error' : 'ok' };
  }
  return errorOutcome(`Tool ${toolName} returned an invalid result (expected a string or { content: [...] })`);
}

function invalidJsonReason(raw: string): string {
  try {
    const value: unknown = JSON.parse(raw);
    return `expected a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`;
  } catch (error) {
    return errorMessageOf(error);
  }
}
