/**
 * The state of one run, shared by the loop's steps, and the small builders they use.
 * @module
 */
import { checkAnswer, type HookAnswers } from '../middleware/check-answer.js';
import type { MiddlewareChain } from '../types/middleware-chain.js';
import type { BlobResolver } from './resolve-blobs.js';
import type { TranscriptScan } from './transcript-scan.js';
import type { ComposedModelCall, ComposedToolCall } from '../middleware/compose-wrappers.js';
import { hashInput } from '../middleware/hash-input.js';
import type { HookContext } from '../middleware/hook-context.js';
import { HOOK_SINK, type HookAttempt, type HookSink } from '../middleware/hook-sink.js';
import type { ComposedHooks, HookResult } from '../middleware/types.js';
import type { AgentEvent, ParentRun, RunOutcome } from '../types/agent-events.js';
import { applyPatch, patchedKeys } from '../types/apply-patch.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { ToolCall } from '../types/content.js';
import { errorMessageOf, HookError, StatePatchConflictError, StatePatchError, type HookName } from '../types/errors.js';
import type { AssistantMessage, Message, ToolCallOutcome, ToolResultMessage } from '../types/messages.js';
import type { HookState, StatePatch } from '../types/state.js';
import type { Model, ReasoningSetting } from '../types/model.js';
import type { AttemptOutput, OutputSpec } from '../types/output.js';
import type { Provider, StreamOptions, ToolChoice } from '../types/provider.js';
import type { AgentToolResult, AnyAgentTool, ToolExecutionMode, ToolRunInfo } from '../types/tool.js';
import { addUsage, EMPTY_USAGE, type Usage } from '../types/usage.js';
import { isObservable } from 'rxjs';
import { isPromiseLike } from '../types/is-promise-like.js';
import { wait, type Op } from './drive.js';
import type { AnswerCheck, AnswerState } from './output-answer.js';
import type { OutputPlan } from './output-plan.js';
import { sideModelCall } from './side-model-call.js';

/** One tool call's final outcome. */
export interface CallOutcome {
  readonly result: AgentToolResult;
  readonly isError: boolean;
  readonly outcome: ToolCallOutcome;
}

/** A run ended by a `stop` decision: not a failure of the run's machinery, an ordinary (typed) end. */
export class RunStopped extends Error {
  constructor(
    readonly outcome: 'failed' | 'cancelled' | 'stopped',
    readonly reason: string,
    readonly by?: string,
  ) {
    super(reason);
  }
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
  /** Calls held for approval (`pause`), in the model's order: the batch suspends the run after the others. */
  held: ApprovalRequest[];
  /** Messages a hook injected in a turn that suspended: added after the resumed batch. */
  deferred: readonly Message[];
  /**
   * In a parallel batch of several calls: which call (by index) last changed each state key, so that two calls'
   * patches to one key are a conflict.
   */
  batchKeys: Map<string, { readonly call: number; readonly producer: string }> | undefined;
  /** What each call reported spending (`chargeUsage`), by tool call id; created at the first report. */
  spent: Map<string, Usage> | undefined;
  /** In a run with `output`: how the turn's last model attempt asked for the answer. */
  attemptOutput: AttemptOutput | undefined;
  /** In `tool` mode: what checking the final tool's call gave, once the batch handled it. */
  finalAnswer: AnswerCheck | undefined;
}

/** Everything a run's steps share. Built once per run. */
export interface RunState {
  readonly runId: string;
  /** The tool call that started this run, for a nested run. */
  readonly parent: ParentRun | undefined;
  /** What tools are told of the run (`ToolExecuteContext.run`): one object per run. */
  readonly info: ToolRunInfo;
  /** The provider, model, system prompt, tools, hooks and wrappers are the active agent's: a handoff replaces them. */
  provider: Provider;
  model: Model;
  systemPrompt: string;
  /** The tools in force: replaced (between turns, never during a batch) when `getTools` gives a new array. */
  tools: readonly AnyAgentTool[];
  toolsByName: ReadonlyMap<string, AnyAgentTool>;
  /** Read at the start of each turn, when given (see `RunAgentLoopOptions.getTools`); a handoff replaces it. */
  getTools: (() => readonly AnyAgentTool[]) | undefined;
  /** Waited for before a batch's calls start (see `RunAgentLoopOptions.untilStored`). */
  readonly untilStored: (() => PromiseLike<void> | undefined) | undefined;
  /**
   * Counts spend as it happens (each model call's usage, what tools report): the run's own budget, then the parent
   * call's; `undefined` when neither needs it.
   */
  readonly spend: ((usage: Usage) => void) | undefined;
  hooks: ComposedHooks;
  wrapModelCall: ComposedModelCall | undefined;
  wrapToolCall: ComposedToolCall | undefined;
  /** When the deadline passes (ms since the epoch), if the run has one. */
  readonly deadlineAt: number | undefined;
  /** The name hook failures are reported under when a hook is not a named middleware's. */
  readonly hookOwner: string;
  /** The composed chain `agent_start` tells, when the caller gave one. */
  readonly middlewareChain: MiddlewareChain | undefined;
  readonly toolExecution: ToolExecutionMode;
  /** Whether some tool asks for `executionMode: 'sequential'`. */
  hasSequentialTool: boolean;
  readonly toolConcurrency: number;
  readonly toolTimeoutMs: number | undefined;
  readonly streamOptions: Omit<StreamOptions, 'signal'> | undefined;
  readonly toolChoice: ToolChoice | undefined;
  /** The run's reasoning setting, resolved per attempt for the model (see `attemptExtras`). */
  readonly reasoning: ReasoningSetting | undefined;
  /** The run's typed-answer schema, if any. */
  readonly output: OutputSpec | undefined;
  /** How many times the run asks again after an invalid answer. */
  readonly outputRetries: number;
  /** Resolves file blocks stored by reference before each request (through the run's blob store, if any). */
  readonly blobs: BlobResolver;
  /** What the capability check read of the transcript (input kinds, tokens), kept so each call reads only what is new. */
  readonly scan: TranscriptScan;
  /** `output` made ready (its JSON Schema, final tool, per-model modes); `undefined` without `output`. */
  readonly outputPlan: OutputPlan | undefined;
  /** How the typed answer stands; `undefined` without `output`. */
  readonly answer: AnswerState | undefined;
  readonly threadId: string | undefined;
  /** The run state: replaced (never changed) by each applied patch. */
  state: HookState;
  /** Patches applied in this run, for their event ids. */
  patchCount: number;
  /** Invocations of retried hooks in this run, for their ids. */
  hookInvocations: number;
  /** Where composed hooks report patches and skipped failures (put on every hook context). */
  readonly sink: HookSink;
  /** How the run ends, once known (a stop decision, a suspension, a hook's `stop`). */
  outcome: RunOutcome | undefined;
  /** Who stopped the run on purpose (a stop decision with outcome `stopped`): `agent_end.stoppedBy`. */
  stoppedBy?: { readonly by: string; readonly reason: string } | undefined;
  readonly getSteeringMessages: (() => readonly Message[]) | undefined;
  readonly getFollowUpMessages: (() => readonly Message[]) | undefined;
  /** The whole transcript: history, then what this run added. */
  readonly transcript: Message[];
  /** What this run added. */
  readonly newMessages: Message[];
  /**
   * What model calls of the run's middleware (a compaction's summary: `sideModelCall`) spent: part of the run's
   * `agent_end.usage` and of its budget, though no message of the transcript carries it.
   */
  sideUsage: Usage;
  /** The hooks' `ctx.chargeUsage` ({@link hookCharge}): made at the first hook context, shared by all of them. */
  chargeHook: ((usage: Usage) => void) | undefined;
  readonly signal: AbortSignal;
  /** Cancels everything in flight (tools see their signal fire) with `reason`. */
  readonly abort: (reason: unknown) => void;
  readonly emit: (event: AgentEvent) => void;
  turnIndex: number;
  turn: TurnState | undefined;
  /**
   * The run's handoffs, in an Agent's run whose thread can hand off (a `HandoffHost`, declared by shape here so that
   * this module does not import it back): the active agent's name, and the switch the loop applies after each turn.
   */
  readonly handoffs: { readonly active: string; settle(): void } | undefined;
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
    held: [],
    deferred: [],
    batchKeys: undefined,
    spent: undefined,
    attemptOutput: undefined,
    finalAnswer: undefined,
  };
}

/** The context of the turn's hooks, built once per turn and only when a hook or wrapper needs it. */
export function turnContext(run: RunState, turn: TurnState): HookContext {
  return (turn.ctx ??= hookContext(run, turn.index));
}

/** The context every hook of a turn gets. */
export function hookContext(run: RunState, turnIndex: number): HookContext {
  // One fixed-shape literal (no conditional spreads: this runs every turn); absent options are undefined fields.
  // `state` and `extra` are read when a hook looks (patches replace the state during a turn); a spread of the context
  // for a tool call's hook copies what they are at that call. The sink travels under a symbol (spreads keep it).
  return {
    runId: run.runId,
    turnIndex,
    threadId: run.threadId,
    principal: run.info.principal,
    model: run.model,
    systemPrompt: run.systemPrompt,
    tools: run.tools,
    messages: run.transcript,
    get state() {
      return run.state;
    },
    get extra() {
      return run.state.values;
    },
    signal: run.signal,
    deadlineAt: run.deadlineAt,
    run: run.info,
    chargeUsage: (run.chargeHook ??= hookCharge(run)),
    [HOOK_SINK]: run.sink,
  } as HookContext;
}

/**
 * What a hook reports spending (a run it started): part of the run's `agent_end.usage` (as a middleware's own model
 * calls are) and counted by its budget, then the parent's, at once.
 */
function hookCharge(run: RunState): (usage: Usage) => void {
  return (usage) => {
    run.sideUsage = addUsage(run.sideUsage, usage);
    run.spend?.(usage);
  };
}

/**
 * The sink a run puts on its hook contexts: applies each patch through the one reducer ({@link applyPatch}) and
 * announces it (`state_patched`), and turns a skipped hook's failure into a `hook_error` event. During a parallel
 * batch, the call whose hooks report (`call`) is checked against the batch's earlier patches.
 */
export function runSink(run: RunState, call?: number): HookSink {
  return {
    patch: (producer, patch) => applyRunPatch(run, producer, patch, call),
    skipped: (error, attempt) => emitHookError(run, error, attempt),
    attemptFailed: (error, attempt) => emitHookError(run, error, attempt),
    invocationId: () => `${run.runId}.h${++run.hookInvocations}`,
    // A middleware's event is copied: the run numbers what it emits, and the middleware's object may be frozen or reused.
    emit: (event) => run.emit({ ...event }),
    callModel: (request, purpose, invocationId) => {
      const turnIndex = run.turn?.index ?? run.turnIndex;
      return sideModelCall(run, turnIndex, () => hookContext(run, turnIndex), request, purpose, invocationId);
    },
  };
}

/** A hook's failure as a `hook_error` event (with its attempt, for a middleware with `retry`). */
function emitHookError(run: RunState, error: HookError, attempt: HookAttempt | undefined): void {
  const event = {
    type: 'hook_error' as const,
    runId: run.runId,
    middleware: error.middleware,
    hook: error.hook,
    error: errorMessageOf(error.cause),
  };
  run.emit(attempt === undefined ? event : { ...event, ...attempt });
}

/** Applies `patch` of `producer` to the run state (see {@link runSink}); throws a `StatePatchConflictError`. */
export function applyRunPatch(run: RunState, producer: string, patch: StatePatch, call?: number): void {
  if (patch.baseVersion !== undefined && patch.baseVersion !== run.state.version)
    throw staleVersion(run, producer, patch);
  const keys = run.turn?.batchKeys;
  if (keys !== undefined && call !== undefined) {
    for (const key of patchedKeys(patch)) {
      const earlier = keys.get(key);
      if (earlier !== undefined && earlier.call !== call)
        throw new StatePatchConflictError(key, earlier.producer, producer);
    }
    for (const key of patchedKeys(patch)) keys.set(key, { call, producer });
  }
  const baseVersion = run.state.version;
  const eventId = `${run.runId}.p${++run.patchCount}`;
  run.state = applyPatch(run.state, patch, producer, eventId);
  run.emit({
    type: 'state_patched',
    runId: run.runId,
    eventId,
    producer,
    baseVersion,
    version: run.state.version,
    patch,
  });
}

/** The conflict of a patch whose `baseVersion` is not the state's version, naming who made that version if known. */
function staleVersion(run: RunState, producer: string, patch: StatePatch): StatePatchConflictError {
  const actualVersion = run.state.version;
  let lastProducer: string | undefined;
  for (const change of Object.values(run.state.changedBy)) {
    if (change.version === actualVersion) lastProducer = change.producer;
  }
  return new StatePatchConflictError({
    producer,
    keys: patchedKeys(patch),
    expectedVersion: patch.baseVersion!,
    actualVersion,
    lastProducer,
  });
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

/** Wraps a hook failure, keeping one that composition already named (and a state conflict as it is). */
export function toHookError(
  run: RunState,
  hook: HookName,
  input: unknown,
  error: unknown,
): HookError | StatePatchError {
  if (error instanceof HookError || error instanceof StatePatchError) return error;
  return new HookError({ middleware: run.hookOwner, hook, inputHash: hashInput(input), cause: error });
}

/** An error result with one text block. */
export function errorResult(text: string): AgentToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * Reports what call `toolCallId` of the current turn spent (its `chargeUsage`): kept for its result message, and
 * counted by the run at once. A report after the call was answered still counts for the run.
 */
export function chargeCall(run: RunState, toolCallId: string, usage: Usage): void {
  const turn = run.turn;
  if (turn !== undefined) {
    const spent = (turn.spent ??= new Map<string, Usage>());
    const before = spent.get(toolCallId);
    spent.set(toolCallId, before === undefined ? usage : addUsage(before, usage));
  }
  run.spend?.(usage);
}

/** The transcript message for a tool call's outcome; `usage` is what the call spent, when it reported any. */
export function toolResultMessage(call: ToolCall, callOutcome: CallOutcome, spent?: Usage): ToolResultMessage {
  const { result, isError, outcome } = callOutcome;
  const timestamp = Date.now();
  const usage = result.usage ?? spent;
  if (usage !== undefined) {
    // Rare (a sub-agent): a message of the general shape, with only the fields that are set.
    return {
      role: 'toolResult',
      toolCallId: call.id,
      toolName: call.name,
      content: result.content,
      ...(result.details === undefined ? {} : { details: result.details }),
      isError,
      outcome,
      usage,
      timestamp,
    };
  }
  // `details` is present only when the tool gave some, so the stored JSON carries no empty field.
  return result.details === undefined
    ? {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: call.name,
        content: result.content,
        isError,
        outcome,
        timestamp,
      }
    : {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: call.name,
        content: result.content,
        details: result.details,
        isError,
        outcome,
        timestamp,
      };
}

/** An outcome whose result is an error saying `text`. */
export function errorOutcome(text: string, outcome: ToolCallOutcome = 'error'): CallOutcome {
  return { result: errorResult(text), isError: true, outcome };
}

/**
 * The message that closes a run ended by cancellation or a hook failure, standing in for the model call that did not
 * happen: empty content, `stopReason` `aborted` or `error`, `errorMessage` saying why.
 */
export function closingMessage(run: RunState, aborted: boolean, reason: unknown): AssistantMessage {
  // A stop on purpose (a guardrail) is a refusal, like a vendor's own `blocked`, not an error.
  const blocked = reason instanceof RunStopped && reason.outcome === 'stopped';
  return {
    role: 'assistant',
    content: [],
    stopReason: aborted ? 'aborted' : blocked ? 'blocked' : 'error',
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
