/**
 * Wrappers: middleware around the model call and around each tool call, composed as an onion.
 * @module
 */
import type { Observable } from 'rxjs';
import type { ToolCall } from '../types/content.js';
import type { PauseDecision, ReplaceDecision, StopDecision } from '../types/decision.js';
import type { AssistantMessage, Message, ToolCallOutcome } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamOptions, ToolChoice, ToolDefinition } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import type { AgentToolResult, AnyAgentTool } from '../types/tool.js';
import type { HookContext } from './hook-context.js';

/**
 * Where a wrapper sits in the onion, outermost first: `observe` (tracing, metrics) → `guard` (policies, budgets) →
 * `context` (request shaping) → `cache` → `retry` → `adapter` (model routing, fallback) → the call itself.
 */
export type WrapperPhase = 'observe' | 'guard' | 'context' | 'cache' | 'retry' | 'adapter';

/** The phases, outermost first. */
export const WRAPPER_PHASES: readonly WrapperPhase[] = ['observe', 'guard', 'context', 'cache', 'retry', 'adapter'];

/**
 * How many times a wrapper calls `next` per call it wraps — part of its declaration, checked at run time:
 * `once` (exactly once: observe, transform), `at-most-once` (0 or 1: a cache that replaces the call on a hit), `many`
 * (0 or more: retry, fallback; only allowed in the `retry` and `adapter` phases, inside tracing).
 */
export type NextCalls = 'once' | 'at-most-once' | 'many';

/** What a model call sends: everything `provider.stream()` receives, and the provider itself (a fallback changes it). */
export interface ModelRequest {
  readonly provider: Provider;
  readonly model: Model;
  readonly messages: readonly Message[];
  readonly systemPrompt: string;
  readonly tools: readonly ToolDefinition[];
  readonly toolChoice?: ToolChoice | undefined;
  /** Request options (the run's signal is added to every attempt). */
  readonly options?: Omit<StreamOptions, 'signal'> | undefined;
}

/** The context of `wrapModelCall`: the turn's context and the invocation's id (every attempt shares it). */
export interface ModelCallContext extends HookContext {
  readonly invocationId: string;
  /**
   * Why the call is made, when it is not the turn's own call: `compaction` for a `Compaction` middleware's summary.
   * Absent for the turn's call. A wrapper that shapes the turn's request (or recovers it) lets other calls through.
   */
  readonly purpose?: string | undefined;
}

/** Calls the next layer (eventually the provider): a cold Observable of stream events; each subscription is an attempt. */
export type ModelCallNext = (request: ModelRequest) => Observable<StreamEvent>;

/** A tool call on its way to execution, after validation and `beforeToolCall`. */
export interface ToolCallRequest {
  readonly toolCall: ToolCall;
  readonly tool: AnyAgentTool;
  /** The validated arguments `execute` receives. */
  readonly args: Readonly<Record<string, unknown>>;
}

/**
 * What executing a tool call produced. `error` is set when the tool threw (or its Promise or Observable failed):
 * `result` then carries the error's message for the model.
 */
export interface ToolOutcome {
  readonly result: AgentToolResult;
  readonly isError: boolean;
  readonly error?: unknown;
  /** How the call ended (set by the innermost layer; a wrapper's own outcome without it counts as `ok`/`error`). */
  readonly outcome?: ToolCallOutcome | undefined;
}

/** The context of `wrapToolCall`. */
export interface ToolCallContext extends HookContext {
  readonly invocationId: string;
  readonly assistantMessage: AssistantMessage;
}

/** Executes the call through the next layer (eventually the tool): a cold Observable of its outcome. */
export type ToolCallNext = (call: ToolCallRequest) => Observable<ToolOutcome>;

/** What a `wrapModelCall` layer may emit instead of stream events: its answer in the model's place, or a stop. */
export type ModelCallDecision = ReplaceDecision<AssistantMessage> | StopDecision;

/** What a `wrapToolCall` layer may emit instead of an outcome: a result in the tool's place, a pause, or a stop. */
export type ToolCallDecision = ReplaceDecision<AgentToolResult> | PauseDecision | StopDecision;

/** The wrapper hooks of a middleware (see {@link Middleware}). */
export interface Wrappers {
  /** Where the middleware's wrappers sit in the onion (default `context`). */
  readonly phase?: WrapperPhase | undefined;
  /** Position within the phase, lower outer (default 0); ties keep registration order. */
  readonly order?: number | undefined;
  /** How many times the wrappers call `next` (default `once`); one value for both, or per wrapper. */
  readonly nextCalls?: NextCalls | { readonly model?: NextCalls; readonly tool?: NextCalls } | undefined;
  /**
   * Wraps every model call: return a cold Observable of stream events, usually built on `next(request)`. Call `next`
   * as your declaration says; every subscription to what it returns is a new attempt (a new `attemptId`). Failures of
   * the call are `error` events, not Observable errors: an Observable error (or a throw) is a bug of the wrapper and
   * ends the run with a `HookError`.
   *
   * Instead of events it may emit a {@link ModelCallDecision}: `Decision.replace(message, reason)` answers the call
   * with `message` (the layers outside see it as `start` then `done`, or `error` for a message that failed), and
   * `Decision.stop(outcome, reason)` ends the run. A model call cannot be paused: approvals are per tool call.
   */
  wrapModelCall?(
    request: ModelRequest,
    ctx: ModelCallContext,
    next: ModelCallNext,
  ): Observable<StreamEvent | ModelCallDecision>;
  /**
   * Wraps every tool execution (after validation and `beforeToolCall`, before `afterToolCall`): return a cold
   * Observable of the outcome, usually `next(call)`.
   *
   * Instead of an outcome it may emit a {@link ToolCallDecision}: `Decision.replace(result, reason)` is the call's
   * result (checked like a tool's; the layers outside see it as an outcome), `Decision.pause({ reason })` holds the
   * call for approval like a `beforeToolCall` pause, and `Decision.stop(outcome, reason)` ends the run. A pause or a
   * stop reaches the layers outside as an error of their `next` Observable: a layer that catches errors must rethrow
   * what it does not own.
   */
  wrapToolCall?(
    call: ToolCallRequest,
    ctx: ToolCallContext,
    next: ToolCallNext,
  ): Observable<ToolOutcome | ToolCallDecision>;
}
