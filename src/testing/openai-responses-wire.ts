/**
 * The OpenAI Responses API for the provider conformance kit.
 * @module
 */
import { sseEvent, type ConformanceWire, type WireUsage } from './conformance-wire.js';

const RESPONSE = { id: 'resp_conformance', object: 'response', model: 'conformance-model' };

const events = (list: readonly Record<string, unknown>[]) =>
  list.map((data, i) => sseEvent({ ...data, sequence_number: i }, String(data.type)));

const usageOf = (usage: WireUsage) => ({
  input_tokens: usage.input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: usage.output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: usage.input + usage.output,
});

const created = { type: 'response.created', response: { ...RESPONSE, status: 'in_progress', output: [] } };
const completed = (usage: WireUsage) => ({
  type: 'response.completed',
  response: { ...RESPONSE, status: 'completed', output: [], usage: usageOf(usage) },
});

const textEvents = (parts: readonly string[], between: readonly Record<string, unknown>[] = []) => {
  const item = { id: 'msg_conformance', type: 'message', role: 'assistant' };
  const text = parts.join('');
  const at = { item_id: item.id, output_index: 0, content_index: 0 };
  return [
    { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [] } },
    ...parts.flatMap((delta) => [{ type: 'response.output_text.delta', ...at, delta }, ...between]),
    { type: 'response.output_text.done', ...at, text },
    { type: 'response.content_part.done', ...at, part: { type: 'output_text', text, annotations: [] } },
    {
      type: 'response.output_item.done',
      output_index: 0,
      item: { ...item, status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] },
    },
  ];
};

/**
 * The Responses stream as OpenAI documents it (`response.created`, output items and their deltas,
 * `response.completed` with the usage, each with its `event:` line and `sequence_number`), and its error bodies
 * (`{ error: { message, type, code } }`).
 */
export const openAIResponsesWire: ConformanceWire = {
  name: 'OpenAI Responses',
  text: (parts, usage) => ({ chunks: events([created, ...textEvents(parts), completed(usage)]) }),
  toolCall: (call, usage) => {
    const item = { id: 'fc_conformance', type: 'function_call', call_id: call.id, name: call.name };
    const args = call.argumentParts.join('');
    return {
      chunks: events([
        created,
        {
          type: 'response.output_item.added',
          output_index: 0,
          item: { ...item, arguments: '', status: 'in_progress' },
        },
        ...call.argumentParts.map((delta) => ({
          type: 'response.function_call_arguments.delta',
          item_id: item.id,
          output_index: 0,
          delta,
        })),
        { type: 'response.function_call_arguments.done', item_id: item.id, output_index: 0, arguments: args },
        { type: 'response.output_item.done', output_index: 0, item: { ...item, arguments: args, status: 'completed' } },
        completed(usage),
      ]),
    };
  },
  unknownEvents: (parts, usage) => ({
    chunks: events([
      created,
      { type: 'response.in_progress', response: { ...RESPONSE, status: 'in_progress', output: [] } },
      ...textEvents(parts, [{ type: 'response.future_event', detail: { x: 1 } }]),
      completed(usage),
    ]),
  }),
  error: (status, message) => ({
    status,
    headers: { 'content-type': 'application/json' },
    chunks: [
      JSON.stringify({ error: { message, type: status === 429 ? 'requests' : 'invalid_request_error', code: null } }),
    ],
  }),
};
