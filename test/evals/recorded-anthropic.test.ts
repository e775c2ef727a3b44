// A live eval through the real Anthropic SDK against a local server replaying two streams recorded from the real API
// (test/fixtures/providers/anthropic: a tool call, then a text answer), recorded with recordProvider, then
// replayed in virtual time: the replay's scores (tool calls, arguments, tokens from the API's usage) are the live run's.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool } from 'cubepi';
import {
  evaluate,
  exact,
  parseRecordings,
  recordProvider,
  reportToJSONL,
  tokens,
  trajectory,
  turns,
  type EvalAgentContext,
} from 'cubepi/evals';
import { AnthropicProvider } from 'cubepi/providers/anthropic';

const FIXTURES = fileURLToPath(new URL('../fixtures/providers/anthropic', import.meta.url));
// The vercel/ai JSONL files hold one event a line; Anthropic's SSE has an `event:` line before each `data:` line.
const sse = (file: string) =>
  readFileSync(`${FIXTURES}/${file}`, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`)
    .join('');
const bodies = [sse('tool-use-input-json-delta.vercel-ai.jsonl'), sse('text-basic.vercel-ai.jsonl')];

let server: Server;
let url: string;
let requests = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = bodies[requests++ % bodies.length]!;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const json = defineTool({
  name: 'json',
  description: 'Records weather elements',
  parameters: z.object({
    elements: z.array(z.object({ location: z.string(), temperature: z.number(), condition: z.string() })),
  }),
  execute: () => 'recorded',
});

const dataset = [
  {
    id: 'sf',
    input: 'Weather in San Francisco as JSON, then say hello.',
    expected: {
      output:
        "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
      toolCalls: [
        { name: 'json', arguments: { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] } },
      ],
    },
  },
];
const scorers = () => [exact(), trajectory({ args: 'exact' }), turns(), tokens()];

describe('an eval recorded from real provider streams', () => {
  it('records the SDK run live, and the replay scores it the same, twice', async () => {
    const recorder = recordProvider(new AnthropicProvider({ apiKey: 'k', baseURL: url }));
    const createLive = ({ provider, middleware }: EvalAgentContext) =>
      new Agent({ provider: provider!, model: 'claude-haiku-4-5', tools: [json], middleware: [...middleware] });
    const live = await evaluate({ mode: 'live', recorder, createAgent: createLive, dataset, scorers: scorers() });
    expect(requests).toBe(2);
    expect(live.cases[0]!.pass).toBe(true);
    // The API's usage: 849 + 47 for the tool call, then the text answer's.
    const liveTokens = live.cases[0]!.scores.find((s) => s.scorer === 'tokens')!.value!;
    expect(liveTokens).toBeGreaterThanOrEqual(849 + 47);

    const recordings = parseRecordings(recorder.toJSONL());
    const createReplay = ({ provider, middleware }: EvalAgentContext) =>
      new Agent({ provider: provider!, model: 'claude-haiku-4-5', tools: [json], middleware: [...middleware] });
    const replay = () =>
      evaluate({ mode: 'replay', recordings, createAgent: createReplay, dataset, scorers: scorers() });
    const [a, b] = [await replay(), await replay()];
    expect(requests).toBe(2); // the replay sent nothing
    const scoresOf = (r: typeof live) => r.cases[0]!.scores.map((s) => [s.scorer, s.score, s.pass, s.value]);
    expect(scoresOf(a)).toEqual(scoresOf(live));
    expect(reportToJSONL(b)).toBe(reportToJSONL(a));
  });
});
