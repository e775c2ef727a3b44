/**
 * The wire adapter of the provider conformance kit: how one API's responses look on the wire, scenario by scenario.
 * @module
 */

/**
 * One scripted HTTP response of the conformance server. `chunks` are written one at a time (each its own write, so
 * the client's parser reassembles events from pieces); a reply the kit holds open (a stall) sends only the first ones.
 */
export interface WireReply {
  /** HTTP status; 200 by default. */
  readonly status?: number | undefined;
  /** Response headers; `content-type: text/event-stream` by default. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** The body, in the pieces to write: SSE event strings, JSON, or binary frames (an AWS event stream). */
  readonly chunks: readonly (string | Uint8Array)[];
}

/** Token counts a scripted response reports. */
export interface WireUsage {
  readonly input: number;
  readonly output: number;
}

/** One tool call a scripted response makes, its arguments' JSON split into pieces. */
export interface WireToolCall {
  readonly id: string;
  readonly name: string;
  /** The JSON text of the arguments, cut in pieces (a piece may end inside a key or a string). */
  readonly argumentParts: readonly string[];
}

/**
 * How to say each scenario of the conformance kit on one wire (Anthropic Messages, OpenAI Chat Completions, …): the
 * only part of the kit a provider author writes, besides building the provider. Each method returns a complete,
 * valid response of that API, built from the API's documented format (or a recording of it).
 *
 * The built-in wires: `anthropicMessagesWire`, `openAIChatWire`, `openAIResponsesWire` (from `cubepi/testing`).
 * A provider for another API writes its own (docs/provider-kit.md, "Conformance kit").
 *
 * @example
 * const acmeWire: ConformanceWire = {
 *   name: 'Acme',
 *   text: (parts, usage) => ({ chunks: [...parts.map((t) => sseData({ type: 'delta', text: t })), sseData({ type: 'end', usage })] }),
 *   // … toolCall, unknownEvents, error
 * };
 */
export interface ConformanceWire {
  /** The API's name, in test titles. */
  readonly name: string;
  /**
   * A successful answer: one text block streamed as `parts` (one wire event each, in order), ending normally (the
   * API's "stop"), reporting `usage`.
   */
  text(parts: readonly string[], usage: WireUsage): WireReply;
  /** A successful answer that is one tool call (the API's "tool use" end), reporting `usage`. */
  toolCall(call: WireToolCall, usage: WireUsage): WireReply;
  /**
   * {@link text}, with events or fields the API might add later mixed in between the text events (a new event type,
   * an unknown field, a keep-alive comment): a provider must ignore them.
   */
  unknownEvents(parts: readonly string[], usage: WireUsage): WireReply;
  /**
   * The API's error response for an HTTP `status` (400, 401, 429, 500), its body carrying `message` as the API
   * carries an error's message. The kit adds `retry-after` to the 429.
   */
  error(status: number, message: string): WireReply;
  /**
   * Optional: {@link text} without any usage report, for APIs whose servers may omit it (OpenAI-compatible servers
   * without a usage chunk). When given, the kit checks the message's usage is marked `unreported`.
   */
  withoutUsage?(parts: readonly string[]): WireReply;
}

/** One server-sent event: `event: <name>` (when given) and a `data:` line with `data` as JSON, then a blank line. */
export function sseEvent(data: unknown, event?: string): string {
  return `${event !== undefined ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}
