// Hand-built Gemini streams in the documented `GenerateContentResponse` shape, for requests no recording covers.
import { sse, type Reply } from './replay-server.js';

/** One SSE body whose text parts are `pieces`, in order, then `finishReason: STOP` with usage. */
export function geminiText(pieces: readonly string[], responseId = 'hand-built'): Reply {
  const chunk = (text: string, last: boolean) => ({
    candidates: [
      { content: { role: 'model', parts: [{ text }] }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 },
    ],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: pieces.length, totalTokenCount: 12 + pieces.length },
    modelVersion: 'gemini-3-flash-preview',
    responseId,
  });
  return sse(pieces.map((text, i) => `data: ${JSON.stringify(chunk(text, i === pieces.length - 1))}\n\n`).join(''));
}
