/**
 * Running a tool: the one definition of what executing a call gives, in place or as a cold Observable (the innermost
 * layer of the tool-call onion, with its timeout).
 * @module
 */
import { defer, isObservable, Observable, timeout } from 'rxjs';
import type { ToolCallRequest, ToolOutcome } from '../middleware/wrapper-types.js';
import { toolResultProblem } from '../types/check-tool-result.js';
import type { ToolCall } from '../types/content.js';
import { ToolExecutionError } from '../types/errors.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import type { AgentToolResult, AnyAgentTool } from '../types/tool.js';
import { fromOp, wait, type Op } from './drive.js';
import type { Usage } from '../types/usage.js';
import { chargeCall, errorOutcome, errorResult, type CallOutcome, type RunState } from './run-state.js';

/**
 * Runs a tool: the one definition of what executing a call gives, whichever way it is run (in place, or as
 * {@link executeTool$}). The tool's output — a plain value, a Promise, or an Observable whose emissions before the
 * last are progress updates ({@link withUpdates}) — becomes its outcome ({@link normalizeResult}); a tool that throws,
 * rejects or errors gives an error outcome ({@link failedOutcome}) — except cancellation, which goes on.
 */
export function* runTool(
  run: RunState,
  toolCall: ToolCall,
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  onUpdate: (partial: AgentToolResult) => void,
  signal: AbortSignal,
): Op<CallOutcome & ToolOutcome> {
  try {
    const chargeUsage = (usage: Usage) => chargeCall(run, toolCall.id, usage);
    let raw: unknown = tool.execute(toolCall.id, args, {
      signal,
      onUpdate,
      toolCall,
      run: run.info,
      chargeUsage,
      principal: run.info.principal,
    });
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
export function executeTool$(
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

const NO_RESULT = Symbol('no result');

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
