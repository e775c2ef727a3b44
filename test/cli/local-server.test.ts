// `cubepi` against a local OpenAI-compatible server (OPENAI_BASE_URL: Ollama, vLLM, llama.cpp) without --model: the
// model is the one the server lists (GET /v1/models), never the model table's default; a model the table does not know
// is not priced; a server with several models, or none listed, gets a one-line hint to pass --model; a server without
// the Responses API says so.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ReplayServer, sse } from '../providers/replay-server.js';
import { cleanEnv, ensureBuilt, runCli, startCli, workdir } from './cli-harness.js';
import { openaiText } from './wire.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
  await ensureBuilt();
}, 120_000);
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
  server.models = undefined;
});

/** A local server: a base URL and no key. */
const local = () => cleanEnv({ OPENAI_BASE_URL: `${server.url}/v1` });

describe('a local server without --model', () => {
  it('runs the model the server lists, and prices nothing the model table does not know', async () => {
    server.models = ['llama-local'];
    server.reply(sse(openaiText('Hello there.')));
    const result = await runCli(['run', 'Hello', '--db', 'memory'], { cwd: workdir(), env: local() });
    expect(result).toMatchObject({ code: 0, stdout: 'Hello there.\n' });
    expect(server.modelListings).toBe(1);
    expect(server.requests[0]!.body.model).toBe('llama-local');
    expect(result.stderr).toContain('model llama-local: the one OPENAI_BASE_URL serves (--model picks another)');
    expect(result.stderr).toMatch(/\[12 in · 7 out · 1 model call\]/); // no price: the table does not know it
    expect(result.stderr).not.toContain('$');
  });

  it('a server listing several models: exit 2 and one line naming them', async () => {
    server.models = ['llama-3', 'qwen-2', 'mistral'];
    const result = await runCli(['run', 'Hello', '--db', 'memory'], { cwd: workdir(), env: local() });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `cubepi: OPENAI_BASE_URL (${server.url}/v1) serves 3 models (llama-3, qwen-2, mistral): pass --model <id>\n`,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('a server that does not list its models: exit 2 and one line asking for --model', async () => {
    server.reply({ kind: 'status', status: 404, body: undefined });
    const result = await runCli(['run', 'Hello', '--db', 'memory'], { cwd: workdir(), env: local() });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `cubepi: OPENAI_BASE_URL (${server.url}/v1) does not list its models (GET /models: 404): ` +
        'pass --model with a model it serves\n',
    );
  });

  // The default is the table's newest GPT: gpt-5.6 since the table is generated from the catalog snapshot (issue 29).
  it('a server that lists the model table default runs it, priced as before', async () => {
    server.models = ['gpt-4o', 'gpt-5.6'];
    server.reply(sse(openaiText('Priced.')));
    const result = await runCli(['run', 'Hello', '--db', 'memory'], {
      cwd: workdir(),
      env: cleanEnv({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: `${server.url}/v1` }),
    });
    expect(result.code).toBe(0);
    expect(server.requests[0]!.body.model).toBe('gpt-5.6');
    expect(result.stderr).toMatch(/\[12 in · 7 out · \$0\.\d{4} · 1 model call\]/);
  });

  it('cubepi serve names the served model in its banner', { timeout: 60_000 }, async () => {
    server.models = ['llama-local'];
    const serve = startCli(['serve', '--port', '0', '--db', 'memory'], { cwd: workdir(), env: local() });
    try {
      await serve.waitFor(/cubepi serve: http:\/\/127\.0\.0\.1:\d+\/#token=[\w-]{32} \(.*\)\n/);
      expect(serve.output.stdout).toContain('(model: openai llama-local; threads: memory (nothing is kept))');
    } finally {
      serve.child.kill('SIGTERM');
      await serve.done;
    }
  });
});

describe('a server without the Responses API', () => {
  it('a 404 without a body from /v1/responses says so, and names the provider that works', async () => {
    server.reply({ kind: 'status', status: 404, body: undefined });
    const result = await runCli(['run', 'Hello', '--provider', 'openai-responses', '--model', 'm', '--db', 'memory'], {
      cwd: workdir(),
      env: local(),
    });
    expect(server.requests[0]!.path).toBe('/v1/responses');
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `cubepi: OPENAI_BASE_URL (${server.url}/v1) has no Responses API (HTTP 404: 404 status code (no body)): ` +
        'use --provider openai\n',
    );
  });

  it('a 404 that names the model is still an unknown model', async () => {
    server.reply({
      kind: 'status',
      status: 404,
      body: {
        error: { message: 'The model `m` does not exist', type: 'invalid_request_error', code: 'model_not_found' },
      },
    });
    const result = await runCli(['run', 'Hello', '--provider', 'openai-responses', '--model', 'm', '--db', 'memory'], {
      cwd: workdir(),
      env: local(),
    });
    expect(result.stderr).toMatch(/^cubepi: model "m" was not found at OPENAI_BASE_URL/);
  });
});
