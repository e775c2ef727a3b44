/**
 * Messages: the transcript of a conversation. Plain JSON values, treated as immutable; serialising the same message
 * always gives the same bytes ({@link serializeMessage}).
 * @module
 */
import type { AssistantContent, ToolCall, ToolResultContent, UserContent } from './content.js';
import type { Usage } from './usage.js';

/** Free-form data a host attaches to a message; stored and restored with it, never sent to a model. */
export type MessageMetadata = Readonly<Record<string, unknown>>;

/** A message from the user. `timestamp` is milliseconds since the epoch. */
export interface UserMessage {
  readonly role: 'user';
  readonly content: string | readonly UserContent[];
  readonly timestamp: number;
  readonly metadata?: MessageMetadata;
}

/**
 * Why an assistant message ended: `stop` (a natural end), `length` (the output token limit), `toolUse` (it asks for
 * tools), `blocked` (the vendor's safety system or guardrail stopped the answer, or the model refused: `blockReason`
 * holds the vendor's words), `error` (the call failed: `errorMessage` and `errorKind` say why) or `aborted` (the run
 * was cancelled).
 */
export type StopReason = 'stop' | 'length' | 'toolUse' | 'blocked' | 'error' | 'aborted';

/**
 * The classification of a failed model call, so a host can react without parsing messages: `rate_limited` (429),
 * `context_overflow` (the prompt is too long), `auth` (401/403), `unavailable` (5xx, overloaded, connection lost),
 * `bad_request` (4xx the caller must fix), `timeout` (the stream stalled: no event within `firstEventTimeoutMs` or
 * `idleTimeoutMs`), `aborted` (cancelled), `model_incapable` (not sent: the model cannot take the request, by its
 * capabilities — an input kind, tools, thinking; see `ModelIncapability`), `unknown`.
 */
export type ProviderErrorKind =
  | 'rate_limited'
  | 'context_overflow'
  | 'auth'
  | 'unavailable'
  | 'bad_request'
  | 'timeout'
  | 'aborted'
  | 'model_incapable'
  | 'unknown';

/**
 * A model's answer. A message with `stopReason` `error`, `aborted` or `blocked` records a failed, cancelled or blocked
 * call: it is kept in the transcript for the record, is never replayed to a model, and its tool calls are never
 * executed ({@link isRecordOnly}).
 */
export interface AssistantMessage {
  readonly role: 'assistant';
  readonly content: readonly AssistantContent[];
  readonly stopReason: StopReason;
  readonly errorMessage?: string;
  readonly errorKind?: ProviderErrorKind;
  /** For a failed call: when the provider said to retry, in milliseconds. */
  readonly retryAfterMs?: number;
  /**
   * With `stopReason` `blocked`: why, in the vendor's words (Gemini's `SAFETY` or prompt-feedback `blockReason`,
   * Bedrock's `guardrail_intervened`, Anthropic's `refusal`, OpenAI's `content_filter`), with any detail it gave.
   */
  readonly blockReason?: string;
  readonly usage: Usage;
  /** The id of the provider that answered. */
  readonly provider: string;
  /** The id of the model that answered. */
  readonly model: string;
  /** The provider's id for this response, when it gave one. */
  readonly responseId?: string;
  readonly timestamp: number;
  readonly metadata?: MessageMetadata;
}

/**
 * How a tool call ended: `ok` (it ran and succeeded, or a hook answered in its place), `error` (it failed, or could
 * not run: unknown tool, invalid arguments, an invalid result), `denied` (a policy refused it: a `beforeToolCall`
 * block or a denied approval; the text for the model is the policy's reason), `aborted` (the run was cancelled or
 * stopped before it finished), `interrupted` (the process stopped while it was running, or after its approval was
 * stored: it may or may not have run) or `expired` (it was approved after its approval's `expiresAt`: it did not run,
 * and the model is told the approval expired).
 */
export type ToolCallOutcome = 'ok' | 'error' | 'denied' | 'aborted' | 'interrupted' | 'expired';

/** The answer to one tool call. `details` is data for the host (UI, logs); only `content` is sent to the model. */
export interface ToolResultMessage<TDetails = unknown> {
  readonly role: 'toolResult';
  readonly toolCallId: string;
  readonly toolName: string;
  readonly content: readonly ToolResultContent[];
  readonly details?: TDetails;
  readonly isError: boolean;
  /**
   * How the call ended (see {@link ToolCallOutcome}). Always set by cubepi; absent only in threads stored by cubepi
   * before 0.2.0, where `isError` tells `ok` from `error`.
   */
  readonly outcome?: ToolCallOutcome;
  /**
   * What the tool spent on model calls of its own (a sub-agent's run, see `agentTool`), when it says so: counted in
   * the run's `agent_end.usage` and by `BudgetCap`. Absent for ordinary tools.
   */
  readonly usage?: Usage;
  readonly timestamp: number;
  readonly metadata?: MessageMetadata;
}

/** Any message of a transcript. */
export type Message = UserMessage | AssistantMessage | ToolResultMessage;

/** Builds a user message stamped now. */
export function userMessage(content: string | readonly UserContent[], metadata?: MessageMetadata): UserMessage {
  return metadata === undefined
    ? { role: 'user', content, timestamp: Date.now() }
    : { role: 'user', content, timestamp: Date.now(), metadata };
}

/** The tool calls of an assistant message, in the model's order. */
export function toolCallsOf(message: AssistantMessage): ToolCall[] {
  // Counted first, so the array is made at its length (called once per model call; pushing to [] makes 17 slots).
  const { content } = message;
  let count = 0;
  for (let i = 0; i < content.length; i++) if (content[i]!.type === 'toolCall') count++;
  const calls = new Array<ToolCall>(count);
  for (let i = 0, n = 0; i < content.length; i++) {
    const block = content[i]!;
    if (block.type === 'toolCall') calls[n++] = block;
  }
  return calls;
}

/** The text of a message's text blocks, joined (a user message's string content as it is). */
export function textOf(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  let text = '';
  for (const block of message.content) if (block.type === 'text') text += block.text;
  return text;
}

/**
 * Serialises a message (or any JSON value) to canonical JSON: object keys sorted, no whitespace, `undefined` fields
 * left out. The same message gives the same bytes wherever it came from (a JSONB column reorders keys), which keeps
 * provider prompt caches warm after a resume.
 */
export function serializeMessage(message: Message): string {
  return canonicalJson(message);
}

/** Canonical JSON of any JSON value: keys sorted at every level, no whitespace, `undefined` fields dropped. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    // JSON.stringify(undefined) is undefined; in an array it must become null, like JSON.stringify does.
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + canonicalJson(value[i]);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  if (typeof (record as { toJSON?: unknown }).toJSON === 'function') {
    return canonicalJson((record as { toJSON(): unknown }).toJSON());
  }
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const field = record[key];
    if (field === undefined || typeof field === 'function' || typeof field === 'symbol') continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(field);
    first = false;
  }
  return out + '}';
}

/**
 * True for an assistant message kept only for the record: a failed (`error`), cancelled (`aborted`) or blocked
 * (`blocked`) call. Such a message is never replayed to a model and its tool calls are never executed, so they have
 * no results.
 */
export function isRecordOnly(message: AssistantMessage): boolean {
  const reason = message.stopReason;
  return reason === 'error' || reason === 'aborted' || reason === 'blocked';
}
