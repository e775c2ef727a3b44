/**
 * The provider contract: one method that returns a cold Observable of stream events.
 * @module
 */
import type { Observable } from 'rxjs';
import type { Message } from './messages.js';
import type { Model, ResolvedReasoning } from './model.js';
import type { NativeOutputRequest } from './output.js';
import type { StreamEvent } from './stream-events.js';

/** A JSON Schema object (the shape the model is told to fill in). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** What a model is told about a tool: its name, what it does, and the JSON Schema of its arguments. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
}

/** Whether and which tool the model must call: `auto` (its choice), `none`, `required` (some tool), or one tool. */
export type ToolChoice = 'auto' | 'none' | 'required' | { readonly type: 'tool'; readonly name: string };

/** Per-request options every provider understands; providers document the extras they read. */
export interface StreamOptions {
  /**
   * Aborting this signal while subscribed ends the stream with an `error` event whose `stopReason` is `aborted`.
   * (Unsubscribing also aborts the request, but then nothing more is emitted.)
   */
  readonly signal?: AbortSignal | undefined;
  readonly temperature?: number | undefined;
  readonly maxTokens?: number | undefined;
  /** A thinking budget in tokens for models that think; 0 or absent leaves thinking off. */
  readonly thinkingBudget?: number | undefined;
  /**
   * How long to wait, from sending the request, for the stream's first event (the response headers included). A call
   * that gets nothing in time ends with an `error` event of kind `timeout` (retried by `retry()` by default) and its
   * connection is closed. Default 120 s for a model known not to reason, else 600 s (see `docs/reliability.md`);
   * `Infinity` turns it off.
   */
  readonly firstEventTimeoutMs?: number | undefined;
  /**
   * How long the stream may go without an event once it started (a keep-alive ping counts). A stream silent for
   * longer ends with an `error` event of kind `timeout`, keeping what it received, and its connection is closed.
   * Default 120 s for a model known not to reason, else 600 s (a reasoning model may think silently for minutes);
   * `Infinity` turns it off.
   */
  readonly idleTimeoutMs?: number | undefined;
  /** Extra fields for the provider; each provider documents the ones it reads. */
  readonly [key: string]: unknown;
}

/** The request part of {@link Provider.stream} besides the model and the messages. */
export interface StreamRequest {
  readonly systemPrompt?: string | undefined;
  readonly tools?: readonly ToolDefinition[] | undefined;
  readonly toolChoice?: ToolChoice | undefined;
  readonly options?: StreamOptions | undefined;
  /**
   * How hard the model thinks, resolved for this model from the run's `reasoning` (see {@link ResolvedReasoning}).
   * Each provider maps it onto its own fields; a provider-specific option in `options` (`thinkingBudget`,
   * `reasoningEffort`, `thinkingLevel`) wins over it when both are given.
   */
  readonly reasoning?: ResolvedReasoning | undefined;
  /**
   * Native structured output: the final answer's text must be JSON matching `output.schema`. Sent only to a model whose
   * `structuredOutput` is `json_schema`; a provider serving such a model maps it onto the vendor's field.
   */
  readonly output?: NativeOutputRequest | undefined;
}

/**
 * A model API. `stream()` is **cold**: nothing is sent before subscription; subscribing sends the request;
 * unsubscribing aborts it (the HTTP connection closes). The stream emits `start`, block events, then exactly one
 * terminal `done` or `error`, then completes. Failures of the call (HTTP errors, rate limits, malformed or truncated
 * streams) are the terminal `error` event, never an Observable error: the error channel is for bugs.
 *
 * `messages` is the transcript as of the call: it does not change while the call is in flight, but it may be the
 * caller's own array, which grows once the call is over. Convert it when the request is built; copy it to keep it.
 *
 * @example
 * const provider: Provider = {
 *   id: 'echo',
 *   stream: (model, messages) => new Observable((subscriber) => { ... }),
 * };
 */
export interface Provider {
  /**
   * The provider id stamped as `provider` on every message it produces (`anthropic`, `openai`, `openai-responses`
   * for the built-ins). Cross-provider handoff compares it with the `provider` of each assistant message in the
   * transcript: only a message of the same id (and model) has its thinking, signatures and reasoning items replayed
   * as they are; a message of another provider is handed off (its thinking sent as text, its replay data dropped).
   * Give providers that are not the same API, such as two OpenAI-compatible servers, different ids.
   */
  readonly id: string;
  /**
   * One model call as a **cold** Observable of stream events.
   *
   * - Nothing happens before subscription; each subscription sends its own request.
   * - It emits `start` (left out when the call fails before any response), the block events, then exactly **one
   *   terminal** `done` or `error`, then completes. Failures of the call (HTTP errors, rate limits, dropped
   *   connections, malformed or truncated streams) are that terminal `error` event, classified by `errorKind`, with
   *   the content received so far; the Observable error channel is for bugs.
   * - Aborting `request.options.signal` while subscribed ends the stream with an `error` event whose `stopReason` and
   *   `errorKind` are `aborted` (an already aborted signal sends no request).
   * - Unsubscribing tears the request down (the HTTP connection closes, also while waiting for the first byte) and
   *   nothing more is emitted.
   * - `messages` does not change while the call is in flight, but it may be the caller's own array, which grows once
   *   the call is over: read it when the request is built, and copy it to keep it.
   */
  stream(model: Model, messages: readonly Message[], request?: StreamRequest): Observable<StreamEvent>;
}
