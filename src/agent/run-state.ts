/**
 * The state of one run, shared by the loop's steps, and the small builders they use.
 * @module
 */
import { checkAnswer, type HookAnswers } from '../middleware/check-answer.js';
import type { ComposedModelCall, ComposedToolCall } from '../middleware/compose-wrappers.js';
import { hashInput } from '../middleware/hash-input.js';
import type { HookContext } from '../middleware/hook-context.js';
import type { ComposedHooks, HookResult } from '../middleware/types.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { ToolCall } from '../types/content.js';
import { errorMessageOf, HookError, type HookName } from '../types/errors.js';
import type { AssistantMessage, Message, ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamOptions, ToolChoice } from '../types/provider.js';
import type { AgentToolResult, AnyAgentTool, ToolExecutionMode } from '../types/tool.js';
import { EMPTY_USAGE } from '../types/usage.js';
import { isObservable } from 'rxjs';
import { isPromiseLike } from '../types/is-promise-like.js';
import { wait, type Op } from './drive.js';

/** One tool call's final outcome. */
export interface CallOutcome {
  readonly result: AgentToolResult;
  readonly isError: boolean;
}

/** What the loop knows about the turn in progress, so that an interrupted turn can be closed consistently. */
export interface TurnState {
  readonly index: number;
  /** The assistant message being streamed (`message_start` emitted, no `message_end` yet). */
  streaming: AssistantMessage | undefined;
  /** A complete response waiting for `afterModelResponse` (no `message_end` yet). */
  response: AssistantMessage | undefined;
  /** The turn's assistant message after its `message_end`. */
  assistant: AssistantMessage | undefined;
  /** The tool calls being handled, in the model's order, and what is known of each. */
  calls: readonly ToolCall[];
  started: boolean[];
  outcomes: (CallOutcome | undefined)[];
  /** The result messages emitted so far, by call index. */
  resultMessages: (ToolResultMessage | undefined)[];
  /** The hooks' context, built at the first hook of the turn ({@link turnContext}). */
  ctx: HookContext | undefined;
}

/** Everything a run's steps share. Built once per run. */
export interface RunState {
  readonly runId: string;
  readonly provider: Provider;
  readonly model: Model;
  readonly systemPrompt: string;
  readonly tools: readonly AnyAgentTool[];
  readonly toolsByName: ReadonlyMap<string, AnyAgentTool>;
  readonly hooks: ComposedHooks;
  readonly wrapModelCall: ComposedModelCall | undefined;
  readonly wrapToolCall: ComposedToolCall | undefined;
  /** When the deadline passes (ms since the epoch), if the run has one. */
  readonly deadlineAt: number | undefined;
  /** The name hook failures are reported under when a hook is not a named middleware's. */
  readonly hookOwner: string;
  readonly toolExecution: ToolExecutionMode;
  /** Whether some tool asks for `executionMode: 'sequential'`. */
  readonly hasSequentialTool: boolean;
  readonly toolConcurrency: number;
  readonly toolTimeoutMs: number | undefined;
  readonly streamOptions: Omit<StreamOptions, 'signal'> | undefined;
  readonly toolChoice: ToolChoice | undefined;
  readonly threadId: string | undefined;
  readonly extra: Record<string, unknown>;
  readonly getSteeringMessages: (() => readonly Message[]) | undefined;
  readonly getFollowUpMessages: (() => readonly Message[]) | undefined;
  /** The whole transcript: history, then what this run added. */
  readonly transcript: Message[];
  /** What this run added. */
  readonly newMessages: Message[];
  readonly signal: AbortSignal;
  /** Cancels everything in flight (tools see their signal fire) with `reason`. */
  readonly abort: (reason: unknown) => void;
  readonly emit: (event: AgentEvent) => void;
  turnIndex: number;
  turn: TurnState | undefined;
}

/** A turn's call arrays before `openCalls` (a write to them throws: every writer opens the calls first). */
const NO_CALLS: readonly never[] = Object.freeze([]);

/** Starts the state of a new turn. */
export function newTurn(index: number): TurnState {
  return {
    index,
    streaming: undefined,
    response: undefined,
    assistant: undefined,
    // Shared and frozen until a batch opens its calls (`openCalls`), which gives each turn arrays of its own.
    calls: NO_CALLS,
    started: NO_CALLS as never[],
    outcomes: NO_CALLS as never[],
    resultMessages: NO_CALLS as never[],
    ctx: undefined,
  };
}

/** The context of the turn's hooks, built once per turn and only when a hook or wrapper needs it. */
export function turnContext(run: RunState, turn: TurnState): HookContext {
  return (turn.ctx ??= hookContext(run, turn.index));
}

/** The context every hook of a turn gets. */
export function hookContext(run: RunState, turnIndex: number): HookContext {
  // One fixed-shape literal (no conditional spreads: this runs every turn); absent options are undefined fields.
  return {
    runId: run.runId,
    turnIndex,
    threadId: run.threadId,
    model: run.model,
    systemPrompt: run.systemPrompt,
    tools: run.tools,
    messages: run.transcript,
    extra: run.extra,
    signal: run.signal,
    deadlineAt: run.deadlineAt,
  };
}

/**
 * Calls a hook and waits for its answer, checked for its shape ({@link checkAnswer}); no answer (`undefined`, or an
 * Observable that emits nothing) gives `fallback`. A throw, an error or a wrong answer becomes a {@link HookError}
 * (named after the hook's owner, with a hash of `input`), except when the run was cancelled meanwhile: then the
 * cancellation goes on.
 */
export function* callHook<H extends HookName, F extends HookAnswers[H]>(
  run: RunState,
  hook: H,
  input: unknown,
  invoke: () => HookResult<unknown>,
  fallback: F,
): Op<NonNullable<HookAnswers[H]> | F> {
  try {
    let returned: unknown = invoke();
    if (isObservable(returned) || isPromiseLike(returned)) returned = yield wait(returned, undefined);
    const answer = checkAnswer(hook, returned);
    return answer === undefined ? fallback : answer;
  } catch (error) {
    if (run.signal.aborted) throw run.signal.reason;
    throw toHookError(run, hook, input, error);
  }
}

/** Wraps a hook failure, keeping one that composition already named. */
export function toHookError(run: RunState, hook: HookName, input: unknown, error: unknown): HookError {
  if (error instanceof HookError) return error;
  return new HookError({ middleware: run.hookOwner, hook, inputHash: hashInput(input), cause: error });
}

/** An error result with one text block. */
export function errorResult(text: string): AgentToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** The transcript message for a tool call's outcome. */
export function toolResultMessage(call: ToolCall, outcome: CallOutcome): ToolResultMessage {
  const { result, isError } = outcome;
  const timestamp = Date.now();
  // `details` is present only when the tool gave some, so the stored JSON carries no empty field.
  return result.details === undefined
    ? { role: 'toolResult', toolCallId: call.id, toolName: call.name, content: result.content, isError, timestamp }
    : {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: call.name,
        content: result.content,
        details: result.details,
        isError,
        timestamp,
      };
}

/**
 * The message that closes a run ended by cancellation or a hook failure, standing in for the model call that did not
 * happen: empty content, `stopReason` `aborted` or `error`, `errorMessage` saying why.
 */
export function closingMessage(run: RunState, aborted: boolean, reason: unknown): AssistantMessage {
  return {
    role: 'assistant',
    content: [],
    stopReason: aborted ? 'aborted' : 'error',
    errorMessage: errorMessageOf(reason),
    ...(aborted ? { errorKind: 'aborted' as const } : {}),
    usage: EMPTY_USAGE,
    provider: run.provider.id,
    model: run.model.id,
    timestamp: Date.now(),
  };
}

/** Appends a message to the transcript and emits its start and end. */
export function addMessage(run: RunState, message: Message): void {
  run.emit({ type: 'message_start', runId: run.runId, message });
  run.transcript.push(message);
  run.newMessages.push(message);
  run.emit({ type: 'message_end', runId: run.runId, message });
}
