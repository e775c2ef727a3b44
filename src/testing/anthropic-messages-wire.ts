/**
 * The Anthropic Messages API for the provider conformance kit.
 * @module
 */
import { sseEvent, type ConformanceWire, type WireUsage } from './conformance-wire.js';

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const event = (data: { readonly type: string; readonly [field: string]: unknown }) => sseEvent(data, data.type);

const messageStart = (usage: WireUsage) =>
  event({
    type: 'message_start',
    message: {
      id: 'msg_conformance',
      type: 'message',
      role: 'assistant',
      model: 'conformance-model',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: 1 },
    },
  });

const messageEnd = (stopReason: string, usage: WireUsage) => [
  event({
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output },
  }),
  event({ type: 'message_stop' }),
];

const textBlock = (parts: readonly string[], between: readonly string[] = []) => [
  event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  ...parts.flatMap((text) => [
    event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    ...between,
  ]),
  event({ type: 'content_block_stop', index: 0 }),
];

/**
 * The Anthropic Messages stream as the API documents it (`message_start`, `content_block_*`, `message_delta`,
 * `message_stop`, each with its `event:` line), and its error bodies (`{ type: 'error', error: { type, message } }`).
 */
export const anthropicMessagesWire: ConformanceWire = {
  name: 'Anthropic Messages',
  text: (parts, usage) => ({ chunks: [messageStart(usage), ...textBlock(parts), ...messageEnd('end_turn', usage)] }),
  toolCall: (call, usage) => ({
    chunks: [
      messageStart(usage),
      event({
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      }),
      ...call.argumentParts.map((partial_json) =>
        event({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json } }),
      ),
      event({ type: 'content_block_stop', index: 0 }),
      ...messageEnd('tool_use', usage),
    ],
  }),
  unknownEvents: (parts, usage) => ({
    chunks: [
      messageStart(usage),
      event({ type: 'ping' }),
      ...textBlock(parts, [
        sseEvent({ type: 'future_event', detail: { x: 1 } }, 'future_event'),
        event({ type: 'content_block_delta', index: 0, delta: { type: 'future_delta', x: 1 } }),
      ]),
      ...messageEnd('end_turn', usage),
    ],
  }),
  error: (status, message) => ({
    status,
    headers: { 'content-type': 'application/json' },
    chunks: [JSON.stringify({ type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } })],
  }),
};
