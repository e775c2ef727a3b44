// The `cubepi` command with a real provider, against the local server speaking the Anthropic wire format.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingBodies } from './recordings.js';
import { ReplayServer, sse } from './replay-server.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
  if (!existsSync(`${root}/dist/src/cli/main.js`)) await run('npm', ['run', 'build'], { cwd: root });
}, 120_000);
afterAll(() => server.close());

describe('cubepi run --provider anthropic', () => {
  it('runs the agent through the SDK: the tool call, its result sent back, the streamed answer', async () => {
    server.reply(
      sse(recordingBodies('anthropic', 'text-then-tool-use.anthropic-sdk-ts.sse')[0]!),
      sse(recordingBodies('anthropic', 'text-basic.vercel-ai.jsonl')[0]!),
    );
    const { stdout, stderr } = await run(
      process.execPath,
      ['dist/src/cli/main.js', 'run', '--provider', 'anthropic', '--db', 'memory', 'Weather in Paris?'],
      {
        cwd: root,
        env: { ...process.env, ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: server.url },
      },
    );
    expect(stdout).toContain("I'll check the current weather in Paris for you.");
    // The recording calls get_weather, which the CLI does not have: the model is told so, as an error result.
    expect(stderr).toContain('⚙ get_weather({"location":"Paris"})');
    expect(stderr).toContain('✗ get_weather → Tool get_weather not found');
    expect(stdout).toMatch(/Hello! I'm doing well/);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.body.model).toBe('claude-sonnet-5-5'); // the model table's current Sonnet
    expect(server.requests[1]!.body.messages.at(-1).content[0]).toMatchObject({ type: 'tool_result' });
  });
});
