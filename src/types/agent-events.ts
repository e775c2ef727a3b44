/**
 * Agent events: what a run emits, in order. Every event carries the `runId` of the run it belongs to.
 * @module
 */
import type { ApprovalRequest } from './approval.js';
import type { AssistantMessage, Message, ProviderErrorKind, ToolCallOutcome, ToolResultMessage } from './messages.js';
import type { ModelIncapability, ResolvedReasoning } from './model.js';
import type { MiddlewareChain } from './middleware-chain.js';
import type { AttemptOutput, OutputIssue } from './output.js';
import type { StatePatch } from './state.js';
import type { StreamEvent } from './stream-events.js';
import type { AgentToolResult } from './tool.js';
import type { Usage } from './usage.js';

/**
 * What started a run nested in another (a sub-agent's run, see `agentTool`; a run a hook started, see
 * `childRunOptions`): the parent run, its thread, the tool call or the hook that started it, and the parent run's
 * nesting depth (the child's is one more).
 */
export interface ParentRun {
  readonly runId: string;
  /** The parent's tool call that started the run; absent for a run a hook started. */
  readonly toolCallId?: string | undefined;
  readonly threadId?: string | undefined;
  readonly depth: number;
  /** The parent's hook that started the run (`childRunOptions(ctx, { hook, middleware })`), when it says so. */
  readonly hook?: ParentHook | undefined;
}

/** A hook that started a nested run: the hook's name and the middleware it belongs to. */
export interface ParentHook {
  readonly name: string;
  readonly middleware: string;
}

/**
 * A run started; `parent` names the tool call that started it, for a nested run (a sub-agent's). `middleware` is the
 * composed chain the run uses: per hook and wrapper, the middlewares that run, in order, with phase, order and version
 * (seed 002 §4: "启动时输出最终链", the final chain told at start). An Agent's runs always carry it (the same frozen
 * object for every run of one Agent); it is absent from runs of `runAgentLoop` called without `middlewareChain`, from
 * a queue worker's recovery frames, and from producers older than 0.2.0.
 */
export interface AgentStartEvent {
  readonly type: 'agent_start';
  readonly runId: string;
  readonly parent?: ParentRun;
  readonly middleware?: MiddlewareChain;
  /**
   * The name of the agent the run starts with, for an Agent whose thread can hand off (it has handoff tools, or a
   * handoff made another agent active): after a handoff in an earlier run, the agent handed to (docs/handoffs.md).
   */
  readonly agent?: string;
}

/**
 * A queued run is being run again after the worker running it was lost (killed, or cut off long enough to lose its
 * lease): emitted by the worker that took it over (`cubepi/worker`), before the new attempt's events (its own
 * `agent_start` follows). `attempt` counts the workers that took the run, so the first recovery is attempt 2. What the
 * previous attempt streamed stays valid up to its last stored message; a message it left open is replaced by the new
 * attempt's (see `assembleMessages`). Runs outside a queue never emit it.
 */
export interface RunRecoveringEvent {
  readonly type: 'run_recovering';
  readonly runId: string;
  readonly attempt: number;
}

/**
 * How a run ended: `completed` (nothing more to do), `stopped` (a hook or middleware ended it: `afterModelResponse`
 * deciding `stop`, `shouldStopAfterTurn`, a batch whose results all asked to terminate), `failed` (a provider error, a
 * hook failure, a `stop('failed')` decision, a state conflict, a checkpoint failure), `cancelled` (`abort()`, a
 * signal, a deadline, a `stop('cancelled')` decision, `abortPending()`) or `suspended` (tool calls wait for approval:
 * `pending` lists them; the run resumes when they are answered).
 */
export type RunOutcome = 'completed' | 'stopped' | 'failed' | 'cancelled' | 'suspended';

/**
 * A run ended; `messages` are the messages it added, in order, `usage` their summed usage (tokens and cost), and
 * `outcome` how it ended.
 */
export interface AgentEndEvent {
  readonly type: 'agent_end';
  readonly runId: string;
  readonly messages: readonly Message[];
  readonly outcome: RunOutcome;
  readonly usage: Usage;
  /** With outcome `suspended`: the approval requests the run waits for. */
  readonly pending?: readonly ApprovalRequest[];
  /**
   * With outcome `suspended`: messages an `afterModelResponse` hook injected in the suspended turn, to be added after
   * the resumed batch's results (the Agent keeps them with the pending requests).
   */
  readonly deferredMessages?: readonly Message[];
  /**
   * For a run with `output`: the final answer as a value of the schema (validated). Absent when the run ended without
   * one; then `outputError` says why.
   */
  readonly output?: unknown;
  /**
   * For a run with `output` that ended without a valid answer: `invalid` (the last answer was not a value of the
   * schema and the run's `outputRetries` were spent: outcome `failed`), or `missing` (the run ended `outcome` before
   * the model answered: failed, stopped, cancelled, suspended). `issues` are the last answer's.
   */
  readonly outputError?: {
    readonly reason: 'invalid' | 'missing';
    readonly issues: readonly OutputIssue[];
    readonly attempts: number;
  };
  /** How the run settled (set by the Agent; see {@link ExecutionResult}). */
  readonly execution?: ExecutionResult;
  /** With outcome `stopped` by a stop decision (a guardrail trip): who stopped the run and why. */
  readonly stoppedBy?: { readonly by: string; readonly reason: string };
}

/**
 * How a run of an Agent settled (`agent_end.execution`): its `outcome`, whether what closes it is in the checkpointer
 * (`committed`: every message and the final `extra` were stored before `agent_end`; `failed`: a write failed, and the
 * thread holds what was stored up to it; `none`: the agent has no checkpointer), and whether the history is consistent:
 * in what the run stored (or, without a checkpointer, added), every tool call has exactly one result, except the calls
 * a suspended run waits for, which have none. Runs of `runAgentLoop` alone have no `execution`.
 */
export interface ExecutionResult {
  readonly runId: string;
  readonly outcome: RunOutcome;
  readonly checkpoint: 'committed' | 'none' | 'failed';
  readonly historyConsistent: boolean;
}

/**
 * The input of a run is stored: emitted once for each input given with an idempotency key (`RunOptions` or
 * `InputOptions.idempotencyKey`) — right after the `message_end` of its (last) message, which with a checkpointer is
 * delivered only once the append that holds it succeeded; for an approval's answer (`respond`), which is stored
 * before its run starts, right after that run's `agent_start`. `threadSeq` is the thread's `seq` once the input is
 * stored (absent without a checkpointer). An input without a key emits no `input_committed`.
 */
export interface InputCommittedEvent {
  readonly type: 'input_committed';
  readonly runId: string;
  readonly idempotencyKey?: string;
  readonly threadSeq?: number;
}

/** A turn started: one model call and the tool batch it asks for. `turnIndex` counts from 0 within the run. */
export interface TurnStartEvent {
  readonly type: 'turn_start';
  readonly runId: string;
  readonly turnIndex: number;
  /** The agent active for this turn, in a run that can hand off (see {@link AgentStartEvent.agent}). */
  readonly agent?: string;
}

/**
 * A handoff was taken: the model of agent `from` called the handoff tool `toolName` (call `toolCallId`, in turn
 * `turnIndex`), and `to` is the thread's active agent from the next turn on (its system prompt, tools, model and
 * middleware). Emitted after that turn's `turn_end`, right after the `state_patched` that stores `handoff.active`
 * (docs/handoffs.md).
 */
export interface HandoffEvent {
  readonly type: 'handoff';
  readonly runId: string;
  readonly from: string;
  readonly to: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly turnIndex: number;
}

/** A turn ended: its assistant message and the results of its tool calls, in the model's order. */
export interface TurnEndEvent {
  readonly type: 'turn_end';
  readonly runId: string;
  readonly turnIndex: number;
  readonly message: AssistantMessage;
  readonly toolResults: readonly ToolResultMessage[];
}

/** A message entered the transcript (for an assistant message: the model started answering). */
export interface MessageStartEvent {
  readonly type: 'message_start';
  readonly runId: string;
  readonly message: Message;
}

/** The streaming assistant message changed; `streamEvent` is the provider event behind it, `message` its snapshot. */
export interface MessageUpdateEvent {
  readonly type: 'message_update';
  readonly runId: string;
  readonly message: AssistantMessage;
  readonly streamEvent: StreamEvent;
}

/** A message is final (and, with a checkpointer, stored before this event is delivered). */
export interface MessageEndEvent {
  readonly type: 'message_end';
  readonly runId: string;
  readonly message: Message;
}

/** A tool call is being handled (validation, `beforeToolCall`, then execution). */
export interface ToolExecutionStartEvent {
  readonly type: 'tool_execution_start';
  readonly runId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly args: Readonly<Record<string, unknown>>;
}

/** A running tool reported progress. */
export interface ToolExecutionUpdateEvent {
  readonly type: 'tool_execution_update';
  readonly runId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly partialResult: AgentToolResult;
}

/** A tool call has its final result (after `afterToolCall`); emitted in completion order. */
export interface ToolExecutionEndEvent {
  readonly type: 'tool_execution_end';
  readonly runId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly result: AgentToolResult;
  readonly isError: boolean;
  /** How the call ended: `ok`, `error`, `denied` (a policy refused it), `aborted` or `interrupted`. */
  readonly outcome: ToolCallOutcome;
}

/**
 * A tool call needs a person's approval (a `pause` decision): it is held, the rest of the batch runs, and the run
 * suspends. Answer with `agent.respond(requestId, …)`.
 */
export interface ApprovalRequestedEvent extends ApprovalRequest {
  readonly type: 'approval_requested';
  readonly runId: string;
}

/**
 * A hook of a middleware declared `onError: 'skip'` failed: its answer was dropped and the run went on. (A hook of a
 * middleware that stops on error ends the run with a `HookError` instead.) For a middleware with `retry`, every
 * failed call of a hook is one: `attempt`, `invocationId` and `willRetry` are set (and only then); the last one is
 * followed by the skip or by the run's failure.
 */
export interface HookErrorEvent {
  readonly type: 'hook_error';
  readonly runId: string;
  readonly middleware: string;
  readonly hook: string;
  /** The failure's message. */
  readonly error: string;
  /** Which call of the hook failed (1-based), for a middleware with `retry`. */
  readonly attempt?: number | undefined;
  /** The invocation the attempt belongs to: one id for all the attempts of one hook call. */
  readonly invocationId?: string | undefined;
  /** Whether the hook is called again (after its backoff). */
  readonly willRetry?: boolean | undefined;
}

/**
 * A patch was applied to the run state: who produced it, the version it was applied to and the version it made, and
 * this event's id (recorded as the key's `changedBy` in the state).
 */
export interface StatePatchedEvent {
  readonly type: 'state_patched';
  readonly runId: string;
  readonly eventId: string;
  readonly producer: string;
  readonly baseVersion: number;
  readonly version: number;
  readonly patch: StatePatch;
}

/**
 * A request is being sent to a model (or, with `incapable`, was refused before it was sent): one per attempt. Every attempt of one model call (retries, fallbacks) shares
 * the `invocationId` and has its own `attemptId`; `attempt` counts from 1. From the second attempt on, `previous`
 * says how the attempt before this one ended (what a retry or a fallback reacted to).
 */
export interface ModelAttemptEvent {
  readonly type: 'model_attempt';
  readonly runId: string;
  readonly turnIndex: number;
  readonly invocationId: string;
  readonly attemptId: string;
  readonly attempt: number;
  readonly provider: string;
  readonly model: string;
  readonly previous?: PreviousAttempt;
  /**
   * Present when the attempt was **not sent**: the model cannot take the request (by its capabilities or the model
   * table's, see `modelIncapability`). The attempt then ends at once with an error — kind `model_incapable`, or
   * `context_overflow` for a request over the model's context window — which `fallback` moves on from.
   */
  readonly incapable?: ModelIncapability;
  /** For a run with `output`: how this attempt asks for the typed answer. */
  readonly output?: AttemptOutput;
  /** For a run with `reasoning`: the setting resolved for this model, as it is sent. */
  readonly reasoning?: ResolvedReasoning;
}

/**
 * The final answer of a run with `output` is not a value of its schema: `issues` say why, `attempt` counts the
 * answers validated so far in this run (from 1). When the run's `outputRetries` allow, the model is asked again with
 * the issues (`retrying: true`); otherwise the run ends `failed` with `agent_end.outputError`.
 */
export interface OutputInvalidEvent {
  readonly type: 'output_invalid';
  readonly runId: string;
  readonly turnIndex: number;
  readonly attempt: number;
  readonly issues: readonly OutputIssue[];
  readonly retrying: boolean;
}

/**
 * The attempt before a `model_attempt`: its id and, when it ended with an error event, the error's kind and message
 * (both absent when a wrapper dropped it for another reason, e.g. a timeout of its own).
 */
export interface PreviousAttempt {
  readonly attemptId: string;
  readonly errorKind?: ProviderErrorKind;
  readonly error?: string;
}

/** A model call moved to another model (or provider) after an attempt failed; emitted before the new attempt. */
export interface ModelFallbackEvent {
  readonly type: 'model_fallback';
  readonly runId: string;
  readonly turnIndex: number;
  readonly invocationId: string;
  readonly from: { readonly provider: string; readonly model: string };
  readonly to: { readonly provider: string; readonly model: string };
  /** Why the previous attempt failed, when it ended with an error event. */
  readonly reason?: string;
}

/**
 * A `transformContext` middleware (e.g. `ContextBudget`) left messages out of the request to keep it under its token
 * budget: `dropped` messages from the oldest (whole turns: a tool call never without its result), the estimate before
 * and after, and the budget. The stored transcript is unchanged.
 */
export interface ContextTrimmedEvent {
  readonly type: 'context_trimmed';
  readonly runId: string;
  readonly turnIndex: number;
  readonly middleware: string;
  /** How many messages of the context it was given were left out (from the oldest). */
  readonly dropped: number;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly budget: number;
}

/**
 * A guardrail tripped: `guardrail` (its name) of `kind` found `reason` in what it inspected. `action` says what
 * followed: `stop` (the run ends `stopped`, `agent_end.stoppedBy` names the guardrail) or `deny` (a tool guardrail:
 * the call is answered with a denial, outcome `denied`, and the run goes on). `timeout` is true when the guardrail
 * did not answer within its `timeoutMs`. `toolCallId` is set for a tool guardrail.
 */
export interface GuardrailTrippedEvent {
  readonly type: 'guardrail_tripped';
  readonly runId: string;
  readonly turnIndex: number;
  readonly guardrail: string;
  readonly kind: 'input' | 'output' | 'tool';
  readonly reason: string;
  readonly info?: unknown;
  readonly action: 'stop' | 'deny';
  readonly timeout?: boolean;
  readonly toolCallId?: string;
}

/**
 * The assistant message streaming in turn `turnIndex` is withdrawn: a stop on purpose (a guardrail trip, named by
 * `by`) came before its `message_end`. What its `message_update`s showed is not the answer: drop it. It is never
 * stored; the run's closing message (stopReason `blocked`) says why it stopped.
 */
export interface MessageRetractedEvent {
  readonly type: 'message_retracted';
  readonly runId: string;
  readonly turnIndex: number;
  readonly by: string;
  readonly reason: string;
}

/** Why a compaction ran: the context passed the threshold, or the provider answered `context_overflow`. */
export type CompactionReason = 'threshold' | 'overflow';

/**
 * A compaction started: the stored messages `fromSeq + 1 … throughSeq` (1-based sequence numbers, as the
 * checkpointer counts them), with the previous summary when `fromSeq > 0`, are being summarised by a model call
 * (`invocationId`, whose `model_attempt` events follow).
 */
export interface CompactionStartEvent {
  readonly type: 'compaction_start';
  readonly runId: string;
  readonly turnIndex: number;
  readonly middleware: string;
  readonly invocationId: string;
  readonly reason: CompactionReason;
  readonly fromSeq: number;
  readonly throughSeq: number;
  /** The estimated tokens of the context that triggered it. */
  readonly tokensBefore: number;
}

/**
 * A compaction ended: `stored` (the summary replaces the messages through `throughSeq` from now on, and is kept with
 * the thread) or `failed` (the summarising call failed; `error` says why; nothing was stored). A cancelled compaction
 * has no end event: the run is cancelled, nothing is stored.
 */
export interface CompactionEndEvent {
  readonly type: 'compaction_end';
  readonly runId: string;
  readonly turnIndex: number;
  readonly middleware: string;
  readonly invocationId: string;
  readonly outcome: 'stored' | 'failed';
  readonly throughSeq: number;
  readonly summary?: string;
  readonly error?: string;
  /** What the summarising call spent (its last attempt's); every attempt's spend is in the run's `agent_end.usage`. */
  readonly usage?: Usage;
  /** The estimated tokens of the context the model now receives. */
  readonly tokensAfter?: number;
}

/**
 * Every event of a run. Order within a turn: `turn_start` → prompt/steering messages (`message_start`/`message_end`)
 * → `model_attempt` (and `model_fallback`) per request sent → the assistant message (`message_start`,
 * `message_update`×N, `message_end`) → tool events → `toolResult` messages → `turn_end`. A run is `agent_start` …
 * `agent_end`.
 */
export type AgentEvent = (
  | AgentStartEvent
  | RunRecoveringEvent
  | AgentEndEvent
  | InputCommittedEvent
  | TurnStartEvent
  | TurnEndEvent
  | HandoffEvent
  | MessageStartEvent
  | MessageUpdateEvent
  | MessageEndEvent
  | ToolExecutionStartEvent
  | ToolExecutionUpdateEvent
  | ToolExecutionEndEvent
  | ModelAttemptEvent
  | ModelFallbackEvent
  | OutputInvalidEvent
  | GuardrailTrippedEvent
  | MessageRetractedEvent
  | ApprovalRequestedEvent
  | HookErrorEvent
  | StatePatchedEvent
  | ContextTrimmedEvent
  | CompactionStartEvent
  | CompactionEndEvent
) &
  EventPlace;

/**
 * Where an event stands in its run (seed 002 §8: "事件要带单调序号"). `seq` is 1 for the run's `agent_start`, then one
 * more per event the run emits, in the order its listeners receive them, so a listener can order and deduplicate events
 * without the server. Every event a run emits carries it; it is optional in the type so that events can be built by hand
 * (tests, replays). The count is per run in this process: a run recovered on another worker (`run_recovering`, which
 * the worker emits before the run's own events, carries none) counts from 1 again, and the wire numbers events on its
 * own (after coalescing deltas: {@link SequencedEvent}).
 */
export interface EventPlace {
  readonly seq?: number | undefined;
}

/** The events a middleware may emit through the run (see `docs/context.md`). */
export type MiddlewareEvent = ContextTrimmedEvent | CompactionStartEvent | CompactionEndEvent | GuardrailTrippedEvent;

/**
 * An agent event with its place in its run, as `cubepi/server` sends it and `cubepi/client` delivers it: `seq` is 1
 * for the run's first event, then strictly increasing (see `numberEvents` in `cubepi/operators`). A client that has
 * seen `seq` n resumes with what comes after n.
 */
export type SequencedEvent = AgentEvent & { readonly seq: number };

/** The `type` of any agent event. */
export type AgentEventType = AgentEvent['type'];
