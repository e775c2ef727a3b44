/**
 * The Gemini API and Vertex AI (`streamGenerateContent?alt=sse`) for the provider conformance kit.
 * @module
 */
import { sseEvent, type ConformanceWire, type WireUsage } from './conformance-wire.js';

const RESPONSE = { modelVersion: 'conformance-model', responseId: 'conformance-response' };

const usageMetadata = (usage: WireUsage) => ({
  promptTokenCount: usage.input,
  candidatesTokenCount: usage.output,
  totalTokenCount: usage.input + usage.output,
});

/** One `GenerateContentResponse` chunk: a candidate with these parts, maybe its finish reason and the usage. */
const chunk = (parts: readonly unknown[], end?: { finishReason: string; usage: WireUsage }) =>
  sseEvent({
    candidates: [
      {
        content: { role: 'model', parts },
        ...(end !== undefined ? { finishReason: end.finishReason } : {}),
        index: 0,
      },
    ],
    ...(end !== undefined ? { usageMetadata: usageMetadata(end.usage) } : {}),
    ...RESPONSE,
  });

/** Each string value of `value` at its JSON path, in document order: Vertex's `partialArgs`. */
function partialArgs(value: unknown, path = '$'): { jsonPath: string; [key: string]: unknown }[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => partialArgs(item, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => partialArgs(item, `${path}.${key}`));
  }
  if (typeof value === 'string') return [{ jsonPath: path, stringValue: value }];
  if (typeof value === 'number') return [{ jsonPath: path, numberValue: value }];
  if (typeof value === 'boolean') return [{ jsonPath: path, boolValue: value }];
  return [{ jsonPath: path, nullValue: null }];
}

/**
 * Gemini's stream as Google documents it and the recordings show it: every `data:` event a whole
 * `GenerateContentResponse` (text parts, `finishReason` on the last candidate, `usageMetadata`), no `[DONE]`; a tool
 * call as Vertex AI streams its arguments (`functionCall` with `name`, `id` and `willContinue`, then one `partialArgs`
 * value per event, then an empty `functionCall` closing it), since Gemini's calls come as values, not JSON text: the
 * argument pieces the kit hands are joined and re-sent by JSON path. Errors are `{ error: { code, message, status } }`
 * bodies. Gemini always reports usage, so there is no `withoutUsage`.
 */
export const geminiWire: ConformanceWire = {
  name: 'Gemini',
  text: (parts, usage) => ({
    chunks: parts.map((text, i) =>
      chunk([{ text }], i === parts.length - 1 ? { finishReason: 'STOP', usage } : undefined),
    ),
  }),
  toolCall: (call, usage) => {
    const args = JSON.parse(call.argumentParts.join('')) as unknown;
    return {
      chunks: [
        chunk([
          { functionCall: { id: call.id, name: call.name, willContinue: true }, thoughtSignature: 'c2lnbmF0dXJl' },
        ]),
        ...partialArgs(args).map((arg) => chunk([{ functionCall: { partialArgs: [arg], willContinue: true } }])),
        chunk([{ functionCall: {} }], { finishReason: 'STOP', usage }),
      ],
    };
  },
  unknownEvents: (parts, usage) => ({
    chunks: [
      ': keep-alive comment\n\n',
      sseEvent({ futureTopLevelField: { x: 1 }, ...RESPONSE }),
      ...parts.flatMap((text, i) => [
        chunk([{ text, futurePartField: 1 }], i === parts.length - 1 ? { finishReason: 'STOP', usage } : undefined),
        ...(i < parts.length - 1 ? [chunk([{ futurePartKind: { x: 1 } }])] : []),
      ]),
    ],
  }),
  error: (status, message) => ({
    status,
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    chunks: [JSON.stringify({ error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN' } })],
  }),
};

const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};
