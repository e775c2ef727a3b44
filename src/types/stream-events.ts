/**
 * Stream events: what a {@link Provider} emits while a model answers.
 * @module
 */
import type { ToolCall } from './content.js';
import type { AssistantMessage, ProviderErrorKind } from './messages.js';

/**
 * Every non-terminal event carries `partial`: an immutable snapshot of the message so far, safe to keep (a later
 * event never changes it). Building one costs O(number of blocks), not O(message length).
 */
interface PartialEvent<TType extends string> {
  readonly type: TType;
  readonly partial: AssistantMessage;
}

/** An event about the block at `contentIndex` of the message. */
interface BlockEvent<TType extends string> extends PartialEvent<TType> {
  readonly contentIndex: number;
}

/** The response started (the provider accepted the request). */
export type StartEvent = PartialEvent<'start'>;
/** A text block opened at `contentIndex`. */
export type TextStartEvent = BlockEvent<'text_start'>;
/** More text for the block at `contentIndex`. */
export interface TextDeltaEvent extends BlockEvent<'text_delta'> {
  readonly delta: string;
}
/** The text block at `contentIndex` is complete; `content` is its whole text. */
export interface TextEndEvent extends BlockEvent<'text_end'> {
  readonly content: string;
}
/** A thinking block opened at `contentIndex`. */
export type ThinkingStartEvent = BlockEvent<'thinking_start'>;
/** More thinking for the block at `contentIndex`. */
export interface ThinkingDeltaEvent extends BlockEvent<'thinking_delta'> {
  readonly delta: string;
}
/** The thinking block at `contentIndex` is complete (with its signature, when the provider sent one). */
export interface ThinkingEndEvent extends BlockEvent<'thinking_end'> {
  readonly content: string;
}
/** A tool call opened at `contentIndex`; its id and name are in `partial.content[contentIndex]`. */
export type ToolCallStartEvent = BlockEvent<'toolcall_start'>;
/**
 * More argument text (a JSON fragment) for the tool call at `contentIndex`. The call in `partial` carries the
 * arguments parsed tolerantly so far: a preview, not a promise.
 */
export interface ToolCallDeltaEvent extends BlockEvent<'toolcall_delta'> {
  readonly delta: string;
}
/** The tool call at `contentIndex` is complete; its arguments were parsed strictly. */
export interface ToolCallEndEvent extends BlockEvent<'toolcall_end'> {
  readonly toolCall: ToolCall;
}

/** The terminal event of a successful call: the final message (`stopReason` `stop`, `length` or `toolUse`). */
export interface DoneEvent {
  readonly type: 'done';
  readonly message: AssistantMessage;
}

/**
 * The terminal event of a failed or cancelled call. Provider failures are values, never Observable errors: the
 * message keeps the content received so far, its `stopReason` is `error` or `aborted`, `errorMessage` says why, and
 * `errorKind` classifies it. `retryAfterMs` is set when the provider said when to retry.
 */
export interface ErrorEvent {
  readonly type: 'error';
  readonly message: AssistantMessage;
  readonly errorKind: ProviderErrorKind;
  readonly retryAfterMs?: number;
}

/**
 * Everything a provider stream emits: `start`, then block events (`text_*`, `thinking_*`, `toolcall_*`), then exactly
 * one terminal `done` or `error`, then completion.
 */
export type StreamEvent =
  | StartEvent
  | TextStartEvent
  | TextDeltaEvent
  | TextEndEvent
  | ThinkingStartEvent
  | ThinkingDeltaEvent
  | ThinkingEndEvent
  | ToolCallStartEvent
  | ToolCallDeltaEvent
  | ToolCallEndEvent
  | DoneEvent
  | ErrorEvent;

/** The terminal events. */
export type TerminalStreamEvent = DoneEvent | ErrorEvent;

/** Whether a stream event is the terminal `done` or `error`. */
export function isTerminalStreamEvent(event: StreamEvent): event is TerminalStreamEvent {
  return event.type === 'done' || event.type === 'error';
}
