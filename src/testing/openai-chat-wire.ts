/**
 * The OpenAI Chat Completions API (and OpenAI-compatible servers) for the provider conformance kit.
 * @module
 */
import { sseEvent, type ConformanceWire, type WireUsage } from './conformance-wire.js';

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
  sseEvent({
    id: 'chatcmpl-conformance',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'conformance-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  });

const usageChunk = (usage: WireUsage) =>
  sseEvent({
    id: 'chatcmpl-conformance',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'conformance-model',
    choices: [],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  });

const DONE = 'data: [DONE]\n\n';

const textChunks = (parts: readonly string[]) => [
  chunk({ role: 'assistant', content: '' }),
  ...parts.map((content) => chunk({ content })),
  chunk({}, 'stop'),
];

/**
 * The Chat Completions stream as OpenAI documents it (`data:` chunks, the finish reason, a last usage chunk with
 * `stream_options.include_usage`, `data: [DONE]`), and its error bodies (`{ error: { message, type, code } }`).
 * `withoutUsage` is the same stream without the usage chunk, as some compatible servers send it.
 */
export const openAIChatWire: ConformanceWire = {
  name: 'OpenAI Chat Completions',
  text: (parts, usage) => ({ chunks: [...textChunks(parts), usageChunk(usage), DONE] }),
  toolCall: (call, usage) => ({
    chunks: [
      chunk({
        role: 'assistant',
        content: null,
        tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
      ...call.argumentParts.map((args) => chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] })),
      chunk({}, 'tool_calls'),
      usageChunk(usage),
      DONE,
    ],
  }),
  unknownEvents: (parts, usage) => ({
    chunks: [
      ': keep-alive comment\n\n',
      chunk({ role: 'assistant', content: '' }, null, { future_field: { x: 1 } }),
      ...parts.flatMap((content) => [chunk({ content, future_delta: { x: 1 } }), chunk({ future_only: true })]),
      chunk({}, 'stop'),
      usageChunk(usage),
      DONE,
    ],
  }),
  error: (status, message) => ({
    status,
    headers: { 'content-type': 'application/json' },
    chunks: [
      JSON.stringify({ error: { message, type: status === 429 ? 'requests' : 'invalid_request_error', code: null } }),
    ],
  }),
  withoutUsage: (parts) => ({ chunks: [...textChunks(parts), DONE] }),
};
