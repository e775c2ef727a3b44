/**
 * Agent events: what a run emits, in order. Every event carries the `runId` of the run it belongs to.
 * @module
 */
import type { AssistantMessage, Message, ToolResultMessage } from './messages.js';
import type { StreamEvent } from './stream-events.js';
import type { AgentToolResult } from './tool.js';

/** A run started. */
export interface AgentStartEvent {
  readonly type: 'agent_start';
  readonly runId: string;
}

/** A run ended (normally, by error or by cancellation); `messages` are the messages it added, in order. */
export interface AgentEndEvent {
  readonly type: 'agent_end';
  readonly runId: string;
  readonly messages: readonly Message[];
}

/** A turn started: one model call and the tool batch it asks for. `turnIndex` counts from 0 within the run. */
export interface TurnStartEvent {
  readonly type: 'turn_start';
  readonly runId: string;
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
}

/**
 * A request is being sent to a model: one per attempt. Every attempt of one model call (retries, fallbacks) shares
 * the `invocationId` and has its own `attemptId`; `attempt` counts from 1.
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
 * Every event of a run. Order within a turn: `turn_start` → prompt/steering messages (`message_start`/`message_end`)
 * → `model_attempt` (and `model_fallback`) per request sent → the assistant message (`message_start`,
 * `message_update`×N, `message_end`) → tool events → `toolResult` messages → `turn_end`. A run is `agent_start` …
 * `agent_end`.
 */
export type AgentEvent =
  | AgentStartEvent
  | AgentEndEvent
  | TurnStartEvent
  | TurnEndEvent
  | MessageStartEvent
  | MessageUpdateEvent
  | MessageEndEvent
  | ToolExecutionStartEvent
  | ToolExecutionUpdateEvent
  | ToolExecutionEndEvent
  | ModelAttemptEvent
  | ModelFallbackEvent;

/** The `type` of any agent event. */
export type AgentEventType = AgentEvent['type'];
