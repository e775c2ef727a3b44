// A multi-turn Gemini 3 conversation (Vertex AI) with thought summaries and two rounds of parallel tool calls, stored
// in SQLite, restored in a new process: the next request sends every thoughtSignature back byte for byte. The model
// answers are the real recordings in test/fixtures/providers/google, served by a local server through the real SDK.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Agent, type Message, type Model, type ToolResultMessage } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { GoogleProvider } from 'cubepi/providers/google';
import { fakeVertexAuth, googleBodies, recordedSignatures } from './google-recordings.js';
import { GEMINI_TOOLS, readScreen } from './fixtures/google-tools.js';
import { ReplayServer, sse } from './replay-server.js';
import { bundledScript } from '../bundled-script.js';

const FLASH: Model = { id: 'gemini-3-flash-preview', provider: 'google', reasoning: true };
const ROUND_1 = googleBodies('vertex-thought-no-args-and-parallel-calls.vercel-ai.jsonl')[0]!; // thought + 4 calls
const ROUND_2 = googleBodies('vertex-parallel-calls-streamed-args.vercel-ai.jsonl')[0]!; // 2 parallel calls
const ANSWER = googleBodies('empty-text-thought-signature.vercel-ai.jsonl')[0]!; // text, signature-only part
const NEXT_ANSWER = googleBodies('text-usage-signature-empty-part.vercel-ai.jsonl')[0]!;

const fixture = fileURLToPath(new URL('./fixtures/google-next-turn.ts', import.meta.url));
/** `fixture` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let fixtureBundle: string;
beforeAll(async () => {
  fixtureBundle = await bundledScript(fixture);
});
const root = fileURLToPath(new URL('../..', import.meta.url));

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const vertex = () =>
  new GoogleProvider({
    vertexai: true,
    project: 'test-project',
    location: 'us-central1',
    googleAuthOptions: fakeVertexAuth,
    baseURL: server.url,
  });

interface SentPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { name: string; args: unknown };
  functionResponse?: { name: string; response: { output?: string; error?: string } };
}
interface SentContent {
  role: string;
  parts: SentPart[];
}
const contentsOf = (i: number) => server.requests[i]!.body.contents as SentContent[];
/** Every thoughtSignature of a request's model contents, in order. */
const sentSignatures = (contents: SentContent[]) =>
  contents
    .filter((c) => c.role === 'model')
    .flatMap((c) => c.parts)
    .map((p) => p.thoughtSignature)
    .filter((s): s is string => s !== undefined);

/** Runs the child process to its end; resolves with what it printed. */
function nextTurnInNewProcess(file: string, threadId: string, prompt: string): Promise<Message[]> {
  const child = spawn(process.execPath, [fixtureBundle, file, threadId, server.url, FLASH.id, prompt], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(stdout) as Message[]) : reject(new Error(`exit ${code}:\n${stderr}`)),
    ),
  );
}

describe('GoogleProvider: a Gemini 3 conversation restored from SQLite in a new process', () => {
  it('sends every thoughtSignature back byte for byte, in the parts Gemini put them in', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cubepi-gemini-')), 'threads.db');
    server.reply(sse(ROUND_1), sse(ROUND_2), sse(ANSWER));
    const checkpointer = new SQLiteCheckpointer(file);
    const agent = new Agent({
      provider: vertex(),
      model: FLASH,
      tools: GEMINI_TOOLS,
      checkpointer,
      threadId: 'gemini-1',
    });
    await agent.prompt('Read the theme and screens A, B and C, then the weather in Boston and San Francisco.');
    await checkpointer.close();

    // Three model calls in the first process: thought + four calls, two parallel calls, the answer.
    expect(server.requests).toHaveLength(3);
    const expected = [...recordedSignatures(ROUND_1), ...recordedSignatures(ROUND_2), ...recordedSignatures(ANSWER)];
    expect(expected).toHaveLength(3);
    expect(sentSignatures(contentsOf(1))).toEqual(recordedSignatures(ROUND_1));
    expect(sentSignatures(contentsOf(2))).toEqual([...recordedSignatures(ROUND_1), ...recordedSignatures(ROUND_2)]);

    server.reply(sse(NEXT_ANSWER));
    const added = await nextTurnInNewProcess(file, 'gemini-1', 'Thanks. And tomorrow?');
    expect(added.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(server.requests).toHaveLength(4);

    const restored = contentsOf(3);
    // Every signature, byte for byte, in order, in the request body the new process sent.
    expect(sentSignatures(restored)).toEqual(expected);
    for (const signature of expected)
      expect(server.requests[3]!.rawBody).toContain(`"thoughtSignature":"${signature}"`);
    // The restored transcript is sent exactly as the first process sent it: same contents, same bytes.
    expect(restored.slice(0, contentsOf(2).length)).toEqual(contentsOf(2));
    // Where each signature sits: on read_theme (round 1), on the first getWeather (round 2), on the answer's text.
    expect(restored.map((c) => c.role)).toEqual(['user', 'model', 'user', 'model', 'user', 'model', 'user']);
    const round1 = restored[1]!.parts;
    expect(round1[0]).toMatchObject({ thought: true });
    expect(round1[0]!.text).toMatch(/^\*\*Processing User Requests\*\*/);
    expect(round1.slice(1).map((p) => [p.functionCall?.name, p.thoughtSignature])).toEqual([
      ['read_theme', expected[0]],
      ['read_screen', undefined],
      ['read_screen', undefined],
      ['read_screen', undefined],
    ]);
    expect(restored[3]!.parts.map((p) => [p.functionCall?.args, p.thoughtSignature])).toEqual([
      [{ location: 'Boston' }, expected[1]],
      [{ location: 'San Francisco' }, undefined],
    ]);
    expect(restored[5]!.parts).toEqual([{ text: '4', thoughtSignature: expected[2] }]);
    // Each round's results in one user content, in the calls' order.
    expect(restored[2]!.parts.map((p) => p.functionResponse?.response.output)).toEqual([
      'theme: dark',
      'screen A: ok',
      'screen B: ok',
      'screen C: ok',
    ]);
    expect(restored[6]!.parts).toEqual([{ text: 'Thanks. And tomorrow?' }]);
  });

  it("a call to an unknown tool gets the loop's error result, sent to Gemini as { error }; every call one result", async () => {
    server.reply(sse(ROUND_1), sse(ANSWER));
    const agent = new Agent({ provider: vertex(), model: FLASH, tools: [readScreen] });
    const added = await agent.prompt('Read the theme and the screens.');
    const results = added.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((r) => [r.toolName, r.isError])).toEqual([
      ['read_theme', true],
      ['read_screen', false],
      ['read_screen', false],
      ['read_screen', false],
    ]);
    expect(contentsOf(1)[2]!.parts[0]).toEqual({
      functionResponse: { name: 'read_theme', response: { error: 'Tool read_theme not found' } },
    });
  });
});
