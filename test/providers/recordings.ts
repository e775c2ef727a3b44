// The vendored provider recordings (test/fixtures/providers), turned into the SSE bodies the real APIs sent.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export type RecordedApi = 'anthropic' | 'openai-chat' | 'openai-responses';

const root = fileURLToPath(new URL('../fixtures/providers/', import.meta.url));

/**
 * The HTTP response bodies of one recording, in order (multi-step recordings hold several responses).
 *
 * - `.sse`: the file as it is.
 * - `.cassette.yaml`: each interaction's `response.body.string` (or `.content`), as it is.
 * - `.jsonl`: one JSON chunk a line, framed here as the wire has it. Anthropic and Responses events get an
 *   `event: <type>` line before their `data:` line (the Anthropic SDK skips data without an event name); Chat
 *   Completions chunks are `data:` lines closed by `data: [DONE]`. A file joining several responses is split where a
 *   new response starts (`message_start`, `response.created`).
 */
export function recordingBodies(api: RecordedApi, file: string): string[] {
  const text = readFileSync(`${root}${api}/${file}`, 'utf8');
  if (file.endsWith('.sse')) return [text];
  if (file.endsWith('.cassette.yaml')) {
    const cassette = parse(text) as { interactions: { response: { body: { string?: string; content?: string } } }[] };
    return cassette.interactions.map(({ response }) => response.body.string ?? response.body.content ?? '');
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  if (api === 'openai-chat') return [lines.map((line) => `data: ${line}\n\n`).join('') + 'data: [DONE]\n\n'];
  const bodies: string[] = [];
  const responseStart = api === 'anthropic' ? 'message_start' : 'response.created';
  for (const line of lines) {
    const type = (JSON.parse(line) as { type: string }).type;
    if (type === responseStart || bodies.length === 0) bodies.push('');
    bodies[bodies.length - 1] += `event: ${type}\ndata: ${line}\n\n`;
  }
  return bodies;
}

/** Every recording of an API, by file name. */
export const RECORDINGS: Record<RecordedApi, readonly string[]> = {
  anthropic: [
    'text-basic.vercel-ai.jsonl',
    'thinking-signature-then-text.vercel-ai.jsonl',
    'tool-use-input-json-delta.vercel-ai.jsonl',
    'text-then-tool-use-empty-input.vercel-ai.jsonl',
    'tool-use-plus-server-tool-multi-step.vercel-ai.jsonl',
    'prompt-cache-usage-server-tools.vercel-ai.jsonl',
    'web-search-server-tool.vercel-ai.jsonl',
    'text-then-tool-use.anthropic-sdk-ts.sse',
    'redacted-thinking.pydantic-ai.cassette.yaml',
    'thinking-signature-padded-sse.pydantic-ai.cassette.yaml',
  ],
  'openai-chat': [
    'text-with-usage.openai-python.sse',
    'parallel-tool-calls.openai-python.sse',
    'single-tool-call.openai-python.sse',
    'refusal.openai-python.sse',
    'finish-length.openai-python.sse',
    'n3-multiple-choices.openai-python.sse',
    'text-obfuscation-usage.vercel-ai.jsonl',
  ],
  'openai-responses': [
    'text-short.vercel-ai.jsonl',
    'function-call.vercel-ai.jsonl',
    'reasoning-summary-function-calls-multi-step.vercel-ai.jsonl',
    'web-search-tool.vercel-ai.jsonl',
    'error-response-failed.vercel-ai.jsonl',
    'reasoning-item-function-call-usage.pydantic-ai.cassette.yaml',
  ],
};

/**
 * The JSON payloads of one response body, parsed here independently of the SDKs (split on blank lines, `data:` lines
 * only, `[DONE]` skipped): the oracle the replay tests compare the providers' output with.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- recorded events are inspected field by field
export function recordedPayloads(body: string): any[] {
  const payloads: unknown[] = [];
  for (const block of body.split(/\r?\n\r?\n/)) {
    for (const line of block.split(/\r?\n/)) {
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data !== '[DONE]') payloads.push(JSON.parse(data));
    }
  }
  return payloads;
}
