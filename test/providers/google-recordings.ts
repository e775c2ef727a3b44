// The vendored Gemini recordings (test/fixtures/providers/google), as the SSE bodies the Gemini API and Vertex AI sent,
// and a fake Google auth client so Vertex AI can be pointed at the local server.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('../fixtures/providers/google/', import.meta.url));

/** Every streamed Gemini recording, by file name (the `.json` capture holds error bodies, read with `googleJson`). */
export const GOOGLE_RECORDINGS = [
  'text-usage-signature-empty-part.vercel-ai.jsonl',
  'tool-call-whole-args-signature.vercel-ai.jsonl',
  'reasoning-signature-only.vercel-ai.jsonl',
  'empty-text-thought-signature.vercel-ai.jsonl',
  'vertex-thought-no-args-and-parallel-calls.vercel-ai.jsonl',
  'vertex-parallel-calls-streamed-args.vercel-ai.jsonl',
  'vertex-nested-array-args-streamed.vercel-ai.jsonl',
  'vertex-array-args-no-terminal-call.vercel-ai.jsonl',
  'prompt-blocked.vercel-ai.jsonl',
  'thought-summaries.pydantic-ai.cassette.yaml',
  'tool-call-empty-args-signature.pydantic-ai.cassette.yaml',
] as const;

/**
 * The HTTP response bodies of one recording, in order. A `.jsonl` line is the JSON of one SSE `data:` event (the
 * README: Gemini streams have no `event:` lines and no `[DONE]`), framed here as `data: <line>\n\n`; a cassette's
 * `response.body.string` is the body as sent (`\r\n\r\n` between events).
 */
export function googleBodies(file: string): string[] {
  const text = readFileSync(`${root}${file}`, 'utf8');
  if (file.endsWith('.cassette.yaml')) {
    const cassette = parse(text) as { interactions: { response: { body: { string?: string } } }[] };
    return cassette.interactions.map(({ response }) => response.body.string ?? '');
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return [lines.map((line) => `data: ${line}\n\n`).join('')];
}

/** A recorded cassette's request bodies, parsed (what the recording client sent). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- recorded requests are inspected field by field
export function googleRequests(file: string): any[] {
  const cassette = parse(readFileSync(`${root}${file}`, 'utf8')) as {
    interactions: { request: { body?: unknown; parsed_body?: unknown } }[];
  };
  return cassette.interactions.map(({ request }) =>
    typeof request.body === 'string' ? (JSON.parse(request.body) as unknown) : request.parsed_body,
  );
}

/** A `.json` capture document, parsed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- capture documents are read field by field
export function googleJson(file: string): any {
  return JSON.parse(readFileSync(`${root}${file}`, 'utf8')) as unknown;
}

/** The `GenerateContentResponse` chunks of one body, parsed independently of the SDK: the replay tests' oracle. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- recorded chunks are inspected field by field
export function googleChunks(body: string): any[] {
  return body
    .split(/\r?\n\r?\n/)
    .map((event) => event.trim())
    .filter((event) => event.startsWith('data:'))
    .map((event) => JSON.parse(event.slice(5).trim()) as unknown);
}

/** Every part of every candidate of a body's chunks, in order. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- recorded parts are inspected field by field
export function recordedParts(body: string): any[] {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
  return googleChunks(body).flatMap((chunk: any) => chunk.candidates?.[0]?.content?.parts ?? []);
}

/** Every `thoughtSignature` of a body, in order. */
export function recordedSignatures(body: string): string[] {
  return recordedParts(body)
    .map((part: { thoughtSignature?: string }) => part.thoughtSignature)
    .filter((signature): signature is string => signature !== undefined);
}

/**
 * A google-auth-library client stand-in: Vertex AI asks its auth client for request headers; this one answers with a
 * fixed bearer token, so a test needs no Google credentials (and the server can check the header arrived).
 */
export const fakeVertexAuth = {
  authClient: { getRequestHeaders: async () => new Headers({ authorization: 'Bearer vertex-test-token' }) },
} as never;
