/**
 * The seven hooks: their contexts, results and contracts.
 * @module
 */
import type { Observable, SchedulerLike } from 'rxjs';
import type { RunOutcome } from '../types/agent-events.js';
import type { ToolCall, ToolResultContent } from '../types/content.js';
import type { HookDecision } from '../types/decision.js';
import type { AssistantMessage, Message, ToolResultMessage } from '../types/messages.js';
import type { StatePatch } from '../types/state.js';
import type { ResumedApproval } from '../types/approval.js';
import type { HookPhase } from '../types/middleware-chain.js';
import type { AgentToolResult } from '../types/tool.js';
import type { SpendBound } from '../types/usage.js';
import type { HookContext } from './hook-context.js';
import type { Wrappers } from './wrapper-types.js';

// The context every hook gets lives in its own file, which wrapper-types.ts shares without importing this one.
export type { HookContext } from './hook-context.js';

/**
 * What a hook may return: a value, a Promise, or an Observable whose **last** value counts (an Observable that
 * completes without a value means "no result": the input unchanged for a transform, nothing for the others).
 * A plain value costs nothing extra: only a Promise is awaited and only an Observable is subscribed.
 */
export type HookResult<T> = T | PromiseLike<T> | Observable<T>;

/** The context of `beforeToolCall`. `context` is the turn's {@link HookContext} (whose fields this one repeats). */
export interface BeforeToolCallContext extends HookContext {
  readonly assistantMessage: AssistantMessage;
  readonly toolCall: ToolCall;
  /** The arguments after validation (zod defaults applied). */
  readonly args: Readonly<Record<string, unknown>>;
  readonly context: HookContext;
  /**
   * Set when the call was held for approval and is now resumed, approved or edited (`args` is then the edit,
   * validated): `beforeToolCall` runs again on the call as it will run, so a hook can check again what may have
   * changed since it asked (a deadline, the target's state). Answers keep their meaning: a denial makes the call
   * `denied`, a `pause` asks again (a new approval request), a `stop` ends the run. A hook that asked should not ask
   * again for the same reason (`ToolGuard` treats its `ask` as answered). Absent on a call's first pass.
   */
  readonly approval?: ResumedApproval | undefined;
}

/**
 * `{ block: true }` denies the call: it is not executed, its outcome is `denied` and the model is told `reason`.
 * (Or answer a {@link HookDecision}: `continue(patch?)`, `replace(result, reason)`, `pause({ reason })`, `stop(…)`.)
 */
export interface BeforeToolCallResult {
  readonly block?: boolean | undefined;
  readonly reason?: string | undefined;
}

/**
 * What `beforeToolCall` answers: nothing or `Decision.continue(patch?)` (run the call), `{ block: true, reason }` (deny
 * it), `Decision.replace(result, reason)` (do not run it: `result` is its result), `Decision.pause({ reason })` (hold
 * it for a person's approval; the run suspends), `Decision.stop(outcome, reason)` (end the run). Composed: the first
 * denial, replace, pause or stop wins in middleware order; the later hooks are not called.
 */
export type BeforeToolCallAnswer = BeforeToolCallResult | HookDecision<AgentToolResult> | undefined;

/** The context of `afterToolCall`: the call and the result it produced (executed, or the error of a blocked call). */
export interface AfterToolCallContext extends HookContext {
  readonly assistantMessage: AssistantMessage;
  readonly toolCall: ToolCall;
  readonly args: Readonly<Record<string, unknown>>;
  readonly result: AgentToolResult;
  readonly isError: boolean;
  readonly context: HookContext;
}

/** Fields that replace those of the tool's result; `undefined` fields leave them as they are. */
export interface AfterToolCallResult {
  readonly content?: readonly ToolResultContent[] | undefined;
  readonly details?: unknown;
  readonly isError?: boolean | undefined;
  readonly terminate?: boolean | undefined;
  /** A change to the run state (see `docs/state.md`). */
  readonly patch?: StatePatch | undefined;
}

/** The context of `shouldStopAfterTurn`, given after `turn_end`. */
export interface TurnEndContext extends HookContext {
  /** The turn's assistant message. */
  readonly message: AssistantMessage;
  readonly toolResults: readonly ToolResultMessage[];
  /** Every message this run added so far. */
  readonly newMessages: readonly Message[];
  readonly context: HookContext;
}

/**
 * What the loop does after a model response: `natural` (execute its tool calls and continue if there were any, else
 * end), `stop` (end the run after this response; its tool calls are not executed and get error results), or
 * `loop_to_model` (call the model again after this turn, even without tool calls).
 */
export type TurnDecision = 'natural' | 'stop' | 'loop_to_model';

/**
 * The answer of `afterModelResponse`. `response` replaces the response (for later middlewares and for what is
 * stored); `injectMessages` are added to the transcript after this turn's tool results, before the next model call;
 * `decision` steers the loop.
 */
export interface TurnAction {
  readonly response?: AssistantMessage | undefined;
  readonly injectMessages?: readonly Message[] | undefined;
  readonly decision?: TurnDecision | undefined;
  /** A change to the run state (see `docs/state.md`). */
  readonly patch?: StatePatch | undefined;
}

/**
 * What `onRunStart` answers: nothing, a {@link StatePatch}, `Decision.continue(patch?)`, or `Decision.stop(outcome,
 * reason)` (the run ends before its first model call). Every middleware's runs, in order, until one stops.
 */
export type RunStartAnswer = StatePatch | HookDecision<never> | undefined;

/** The context of `onRunEnd`: the run's context and what it added. */
export interface RunEndContext extends HookContext {
  /** Every message the run added. */
  readonly newMessages: readonly Message[];
}

/**
 * The seven hooks. Each is optional; each may answer with a value, a Promise or an Observable ({@link HookResult});
 * each gets the run's `signal` through its context. A hook that throws or errors ends the run with a `HookError`.
 */
export interface AgentHooks {
  /**
   * Before every model call: turns the transcript into the messages the model receives (trim, summarise, inject).
   * Gets a copy; the stored transcript never changes. Chained across middlewares.
   */
  transformContext?(messages: Message[], ctx: HookContext): HookResult<Message[]>;
  /** Just before the provider call, after `transformContext`: the final conversion. Only one implementation runs. */
  convertToLlm?(messages: Message[], ctx: HookContext): HookResult<Message[]>;
  /** Before every model call: the system prompt the model receives. Chained. */
  transformSystemPrompt?(prompt: string, ctx: HookContext): HookResult<string>;
  /**
   * Per tool call, after argument validation, before execution: may deny, replace, pause or stop it (see
   * {@link BeforeToolCallAnswer}).
   */
  beforeToolCall?(ctx: BeforeToolCallContext): HookResult<BeforeToolCallAnswer>;
  /** Per tool call, after execution (or blocking): may rewrite the result, field by field. */
  afterToolCall?(ctx: AfterToolCallContext): HookResult<AfterToolCallResult | undefined>;
  /** At every turn end: `true` ends the run (queued steering and follow-ups stay queued). */
  shouldStopAfterTurn?(ctx: TurnEndContext): HookResult<boolean>;
  /** After each successful model response settles, before its `message_end`: may replace it, inject, decide. */
  afterModelResponse?(response: AssistantMessage, ctx: HookContext): HookResult<TurnAction | undefined>;
  /** When a run starts, before its first model call: may change the state or stop the run. Every one runs, in order. */
  onRunStart?(ctx: HookContext): HookResult<RunStartAnswer>;
  /**
   * When a run ends, before its `agent_end`, with its outcome: may change the state (a patch), which is stored with
   * the thread. Every one runs, in order. A throw is a `HookError` (the run's outcome becomes `failed`).
   */
  onRunEnd?(ctx: RunEndContext, outcome: RunOutcome): HookResult<StatePatch | undefined>;
}

/**
 * The hooks as the loop calls them: one plain function per hook (`this` is not used), each already composed from
 * every middleware that implements it. What `composeMiddleware` returns and `runAgentLoop` takes; an `AgentHooks`
 * object whose hooks are arrow functions or bound methods is one.
 */
export type ComposedHooks = {
  readonly [H in keyof AgentHooks]?:
    | ((this: void, ...args: Parameters<NonNullable<AgentHooks[H]>>) => ReturnType<NonNullable<AgentHooks[H]>>)
    | undefined;
};

/**
 * A middleware: any object with some of the seven hooks and an optional `name`. Only the hooks it has are wired;
 * several middlewares compose hook by hook, each hook by its own rule (see `composeMiddleware` and
 * `docs/middleware.md`). Without a `name`, a class instance is named after its class.
 *
 * @example
 * class AuditLogger implements Middleware {
 *   readonly name = 'AuditLogger';
 *   afterToolCall(ctx: AfterToolCallContext) { audit.write(ctx.toolCall.name, ctx.isError); return undefined; }
 * }
 */
export interface Middleware extends AgentHooks, Wrappers {
  readonly name?: string | undefined;
  /**
   * This middleware's version (e.g. `1.2.0`), shown where its name is: `describeMiddleware()`, the `agent_start`
   * chain, and the spans and span events that name it (`cubepi.middleware.version`). A non-empty string.
   */
  readonly version?: string | undefined;
  /**
   * Where this middleware's hooks sit in each hook's chain: one of {@link HOOK_PHASES} (`run`, `context`, `model`,
   * `tool`, `state`, `final`); `context` when absent. Each hook's implementers run sorted by phase, then by
   * {@link hookOrder}, then in list order (a stable sort), so a program that declares neither keeps its list order.
   * (The wrappers have their own `phase` and `order`.) An unknown phase is a `ConfigurationError` at construction.
   */
  readonly hookPhase?: HookPhase | undefined;
  /**
   * The order of this middleware's hooks within its {@link hookPhase}, lower first; 0 when absent. A finite number.
   * Two middlewares that implement the same hook in the same phase and both declare the same `hookOrder` are a
   * `ConfigurationError` at construction: their order would be an accident of the list.
   */
  readonly hookOrder?: number | undefined;
  /**
   * What a failure of one of this middleware's hooks does: `stop` (the default) ends the run with a `HookError`;
   * `skip` drops that hook's answer for this call, emits a `hook_error` event and goes on (for a middleware whose
   * failure must not cost the user the run: logging, analytics). Wrappers always stop.
   */
  readonly onError?: 'stop' | 'skip' | undefined;
  /**
   * A bound on what the run spends, declared (a `BudgetCap` declares its own): the runs the run's tools start
   * (sub-agents) spend from it too, and are cancelled (reason `budget`) as soon as the run's total — its own model calls
   * and theirs, counted as each ends — reaches it. Stopping the run itself is the middleware's hooks' job. With several,
   * the tightest bound of each kind applies.
   */
  readonly budget?: SpendBound | undefined;
  /**
   * What this middleware's hooks may write to the run state. Each entry is a key, exact (`'prefs'`) or a prefix ending
   * in `.*` (`'memory.*'`: every key that starts with `memory.`, not `memory` itself). A patch names what it touches
   * as keys: the keys it sets or deletes (`set`, `delete`), `cubepi:fragment.<id>` for each context fragment it adds or
   * removes, `cubepi:events` when it appends events. A patch touching any key outside `writes` is refused whole with a
   * `StatePatchPermissionError` (naming the offending keys) and the run fails — even with `onError: 'skip'`. Without
   * `writes` a middleware may write anything. Checked when a hook answers with the patch, before it is applied.
   */
  readonly writes?: readonly string[] | undefined;
  /**
   * `true`: this middleware only observes (logging, tracing, metrics). Its hooks may not patch the state (any
   * non-empty patch is a `StatePatchPermissionError`, the run fails) nor change what the run does: a transform that
   * returns another value than it was given, a `beforeToolCall` that blocks, replaces, pauses or stops, an
   * `afterToolCall` that rewrites a result field, a `shouldStopAfterTurn` that answers `true`, an
   * `afterModelResponse` that replaces the response, injects messages or decides, an `onRunStart` that stops — each
   * is a `HookError` naming it (dropped with a `hook_error` event under `onError: 'skip'`). Answering nothing is the
   * way. Cannot be combined with a non-empty `writes`.
   */
  readonly observeOnly?: true | undefined;
  /**
   * Calls this middleware's hooks again when they fail transiently (not its wrappers; model calls have their own
   * retries). See {@link HookRetryPolicy}.
   */
  readonly retry?: HookRetryPolicy | undefined;
}

/**
 * How a middleware's failing hook is called again. A call that throws, rejects or errors with an error `transient`
 * accepts is made again, after `backoffMs`, up to `attempts` calls in all; every failed attempt emits a `hook_error`
 * event with its `attempt` (1-based), the `invocationId` its attempts share, and whether it `willRetry`. When the
 * attempts are spent (or the error is not transient) the last failure does what it does without `retry`: it ends the
 * run with a `HookError`, or is dropped under `onError: 'skip'`. A wrong-shaped answer and a refused patch are not
 * retried (they are bugs, not transient), and neither is cancellation: an abort error, or any failure once the run's
 * `signal` fired; a cancellation during a backoff ends the wait at once and goes on as a cancellation.
 */
export interface HookRetryPolicy {
  /** How many calls in all, the first included: an integer of at least 1 (1 means no retry). */
  readonly attempts: number;
  /**
   * The wait before each retry, in ms: a number, or a function of the attempt about to be made's predecessor
   * (`1` before the second call, `2` before the third). Default 0 (retry at once).
   */
  readonly backoffMs?: number | ((attempt: number) => number) | undefined;
  /**
   * Whether a failure is worth another call. Default: the error has `retryable: true` (as errors of clients that
   * classify their failures do); anything else is a bug and is not retried.
   */
  readonly transient?: ((error: unknown) => boolean) | undefined;
  /** Where backoff waits are scheduled (default `asyncScheduler`, virtual inside `TestScheduler.run()`). */
  readonly scheduler?: SchedulerLike | undefined;
}

export { HOOK_PHASES, type HookPhase } from '../types/middleware-chain.js';

/** The name of each hook, in the order they fire: the run's start, the seven of a turn, the run's end. */
export const HOOK_NAMES = [
  'onRunStart',
  'transformContext',
  'convertToLlm',
  'transformSystemPrompt',
  'afterModelResponse',
  'beforeToolCall',
  'afterToolCall',
  'shouldStopAfterTurn',
  'onRunEnd',
] as const satisfies readonly (keyof AgentHooks)[];
