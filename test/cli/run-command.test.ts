// `cubepi run`, spawned with pipes as a user (or a script) runs it: offline with the demo model, and through the real
// SDKs against local servers speaking the OpenAI and Anthropic wire formats.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ReplayServer, sse } from '../providers/replay-server.js';
import { cleanEnv, ensureBuilt, runCli, startCli, workdir } from './cli-harness.js';
import { anthropicText, openaiText, openaiToolCalls } from './wire.js';

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
  await ensureBuilt();
}, 120_000);
afterAll(() => server.close());
beforeEach(() => {
  server.reset();
  server.models = ['gpt-test']; // a server of its own lists its models (test/cli/local-server.test.ts)
});

const openai = () => cleanEnv({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${server.url}/v1` });
const anthropic = () => cleanEnv({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: server.url });

/** The text of the tool results the model was sent in request `i`. */
function toolResultsSent(i: number): string[] {
  const messages = server.requests[i]!.body.messages as { role: string; content: unknown }[];
  return messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
}

describe('cubepi run, offline', () => {
  it('says no key was found and runs the demo model, labelled, through the built-in tools', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'README.md'), '# My project\n');
    const { code, stdout, stderr } = await runCli(['run', 'Write me a poem', '--delay', '0'], { cwd });
    expect(code).toBe(0);
    expect(stderr).toContain('No ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL set: running the offline demo');
    expect(stdout).toContain(`This is cubepi's offline demo model: it does not understand "Write me a poem"`);
    expect(stdout).toContain('calculator: 6 * 7 = 42');
    expect(stdout).toContain('read_file README.md: "# My project"');
    expect(stderr).toContain('⚙ list_files({"path":"."})');
    expect(stderr).toMatch(/\[\d+ in · \d+ out · 3 model calls\]/); // the demo model has no price
    // Stored by default in .cubepi/threads.db, which keeps itself out of git.
    expect(existsSync(join(cwd, '.cubepi/threads.db'))).toBe(true);
    expect(readFileSync(join(cwd, '.cubepi/.gitignore'), 'utf8')).toBe('*\n');
  });

  it('--json: every event is one JSON line on stdout, the result the last; nothing else on stdout', async () => {
    const { code, stdout, stderr } = await runCli(['run', '--json', 'hello', '--delay', '0', '--thread', 'j1'], {
      cwd: workdir(),
    });
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    const parsed = lines.map((line) => JSON.parse(line) as { type: string; runId?: string });
    expect(parsed[0]).toMatchObject({ type: 'agent_start' });
    expect(parsed.at(-2)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(parsed.at(-1)).toMatchObject({ type: 'result', outcome: 'completed', threadId: 'j1' });
    // message_update keeps its stream event (the delta text) and the run id, not the snapshots (linear output).
    const delta = parsed.find((e) => e.type === 'message_update') as unknown as {
      streamEvent: { type: string; partial?: unknown };
      runId: string;
      message?: unknown;
    };
    expect(delta.runId).toBe(parsed[0]!.runId);
    expect(delta.streamEvent.type).toBeTypeOf('string');
    expect(delta.message).toBeUndefined();
    expect(delta.streamEvent.partial).toBeUndefined();
    expect(parsed.some((e) => JSON.stringify(e).includes('"delta":"(off'))).toBe(true);
    expect(stderr).toContain('offline demo model');
  });

  it('bad usage exits 2 with one line: unknown option, unknown command, empty prompt, bad --delay', async () => {
    const cwd = workdir();
    const cases: [string[], RegExp][] = [
      [['run', 'hi', '--frobnicate'], /^cubepi: run: Unknown option '--frobnicate' \(see cubepi run --help\)\n$/],
      [['poem'], /^cubepi: unknown command "poem" \(to run a prompt: cubepi run "poem"; /],
      [['run', '  '], /^cubepi: run: the prompt is empty\n$/],
      [['run', 'hi', '--delay', 'soon'], /^cubepi: --delay must be a number of milliseconds, got "soon"\n$/],
      [['run', 'hi', '--provider', 'gemini'], /^cubepi: unknown provider "gemini": use one of anthropic, openai, /],
    ];
    for (const [args, line] of cases) {
      const result = await runCli(args, { cwd });
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(line);
    }
    expect(existsSync(join(cwd, '.cubepi'))).toBe(false); // a bad option fails before anything is created
  });

  it('an unwritable .cubepi/ and an unreachable database: one line each, exit code 1', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, '.cubepi'), 'a file where the directory should be');
    const blocked = await runCli(['run', 'hi'], { cwd });
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toMatch(/^cubepi: cannot create \.cubepi\/ for the thread store \(.+\): run cubepi in a /m);
    expect(blocked.stderr.trim().split('\n').at(-1)).toMatch(/^cubepi: cannot create/);
    const down = await runCli(['run', 'hi', '--db', 'postgres://root@127.0.0.1:1/none'], { cwd: workdir() });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cubepi: cannot use the PostgreSQL database at 127\.0\.0\.1:1\/none \(.+\): start the/);
  });
});

describe('cubepi run, through the SDKs against local servers', () => {
  it('OpenAI: streams the answer to stdout, and a thread survives a restart of the process', async () => {
    const cwd = workdir();
    server.reply(sse(openaiText('Paris is the capital.')), sse(openaiText('You asked about France.')));
    const first = await runCli(['run', 'Capital of France?', '--thread', 'geo'], { cwd, env: openai() });
    expect(first).toMatchObject({ code: 0, stdout: 'Paris is the capital.\n' });
    expect(first.stderr).toContain('thread geo (SQLite at .cubepi/threads.db): continue with --thread geo');
    expect(server.requests[0]!.body.model).toBe('gpt-test'); // the one model the server lists
    const second = await runCli(['run', 'What did I ask?', '--thread', 'geo'], { cwd, env: openai() });
    expect(second.stdout).toBe('You asked about France.\n');
    const sent = (server.requests[1]!.body.messages as { role: string; content: unknown }[]).map((m) => m.role);
    expect(sent).toEqual(['system', 'user', 'assistant', 'user']);
    const shown = await runCli(['threads', 'show', 'geo'], { cwd });
    expect(shown.stdout).toContain('> Capital of France?\nParis is the capital.\n> What did I ask?');
  });

  it('Anthropic: the default model is the table current Sonnet; a prompt of 200 KB comes through a pipe', async () => {
    server.reply(sse(anthropicText('Read it all.')));
    const big = 'x'.repeat(200_000);
    const result = await runCli(['run', '-', '--db', 'memory'], { cwd: workdir(), env: anthropic(), input: big });
    expect(result).toMatchObject({ code: 0, stdout: 'Read it all.\n' });
    expect(server.requests[0]!.body.model).toBe('claude-sonnet-5-5');
    expect(server.requests[0]!.body.messages[0].content[0].text).toBe(big);
  });

  it('provider errors are one actionable line and exit 1: no key, refused key, unknown model, closed port', async () => {
    const cwd = workdir();
    const noKey = await runCli(['run', 'hi', '--provider', 'anthropic'], { cwd, env: cleanEnv() });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toBe(
      'cubepi: --provider anthropic needs an API key: export ANTHROPIC_API_KEY=…, or leave --provider out to run the demo\n',
    );
    server.reply({
      kind: 'status',
      status: 401,
      body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
    });
    const refused = await runCli(['run', 'hi', '--db', 'memory'], { cwd, env: anthropic() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^cubepi: ANTHROPIC_BASE_URL \(.+\) refused the credentials \(.*invalid x-api-key.*\): check ANTHROPIC_API_KEY\n$/,
    );
    server.reply({
      kind: 'status',
      status: 404,
      body: {
        error: { message: 'The model `gpt-9` does not exist', type: 'invalid_request_error', code: 'model_not_found' },
      },
    });
    const unknown = await runCli(['run', 'hi', '--model', 'gpt-9', '--db', 'memory'], { cwd, env: openai() });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /^cubepi: model "gpt-9" was not found at OPENAI_BASE_URL .*: pass --model with a model it serves/,
    );
    const closed = await runCli(['run', 'hi', '--db', 'memory', '--model', 'gpt-test'], {
      cwd,
      env: cleanEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }),
    });
    expect(closed.code).toBe(1);
    expect(closed.stderr).toMatch(
      /^cubepi: cannot reach OPENAI_BASE_URL \(http:\/\/127\.0\.0\.1:9\/v1\) \(.+\): check your network/,
    );
    expect(closed.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    const debug = await runCli(['run', 'hi', '--db', 'memory', '--model', 'gpt-test', '--debug'], {
      cwd,
      env: cleanEnv({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }),
    });
    expect(debug.stderr).toMatch(/provider error \(\w+\): /);
    expect(debug.stderr).toMatch(/\n\s+at /); // the stack
  });

  it('Ctrl-C mid-stream cancels the run: the server sees the socket close, exit 130, the thread keeps it', async () => {
    const cwd = workdir();
    server.reply({ kind: 'stall', body: openaiText('Once upon a time, far away', { partial: true }) });
    const running = startCli(['run', 'Tell me a long story', '--thread', 'story'], { cwd, env: openai() });
    await running.waitFor('Once upon a time');
    running.child.kill('SIGINT');
    const result = await running.done;
    expect(result.code).toBe(130);
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
    expect(result.stderr).toContain('cubepi: cancelled (Ctrl-C); thread story keeps the conversation so far');
    const shown = await runCli(['threads', 'show', 'story'], { cwd });
    expect(shown.stdout).toContain('> Tell me a long story');
    expect(shown.stdout).toMatch(/\[aborted/);
  });

  it('refuses paths outside the working directory, through .. and through symlinks', async () => {
    const cwd = workdir();
    const outside = workdir();
    writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET');
    symlinkSync(join(outside, 'secret.txt'), join(cwd, 'link.txt'));
    symlinkSync(outside, join(cwd, 'linkdir'));
    mkdirSync(join(cwd, 'sub'));
    writeFileSync(join(cwd, 'sub/ok.txt'), 'fine');
    server.reply(
      sse(
        openaiToolCalls(
          ['read_file', { path: '../' + outside.split('/').at(-1) + '/secret.txt' }],
          ['read_file', { path: 'link.txt' }],
          ['list_files', { path: 'linkdir' }],
          ['read_file', { path: outside + '/secret.txt' }],
          ['read_file', { path: 'sub/../sub/ok.txt' }],
        ),
      ),
      sse(openaiText('Done.')),
    );
    const result = await runCli(['run', 'Read the secret', '--db', 'memory'], { cwd, env: openai() });
    expect(result.code).toBe(0);
    const results = toolResultsSent(1);
    expect(results).toHaveLength(5);
    for (const text of results.slice(0, 4)) expect(text).toMatch(/is outside the working directory/);
    expect(results[4]).toBe('fine');
    expect(results.join('\n')).not.toContain('TOP SECRET');
    expect(result.stderr).toContain('✗ read_file → "link.txt" is outside the working directory');
  });

  it('a shell command waits for confirmation: nothing runs until the user answers y', async () => {
    const cwd = workdir();
    server.reply(
      sse(openaiToolCalls(['run_command', { command: 'echo ran > marker.txt' }])),
      sse(openaiText('Ran it.')),
    );
    const running = startCli(['run', 'Make a marker', '--allow-shell', '--db', 'memory'], { cwd, env: openai() });
    await running.waitFor('Allow run_command to run the shell command: echo ran > marker.txt? [y/N] ');
    expect(existsSync(join(cwd, 'marker.txt'))).toBe(false);
    expect(server.requests).toHaveLength(1);
    running.child.stdin.write('y\n');
    const result = await running.done;
    expect(result.code).toBe(0);
    expect(readFileSync(join(cwd, 'marker.txt'), 'utf8')).toBe('ran\n');
    expect(toolResultsSent(1)[0]).toBe('exit code 0\n');
    expect(result.stdout).toBe('Ran it.\n');
    // The usage line counts the whole conversation (the call before the question, 20 in 5 out, and the resumed run's,
    // 12 in 7 out), with the resumed run's own beside it.
    expect(result.stderr).toMatch(/\[thread: 32 in · 12 out · 2 model calls; this run: 12 in · 7 out · 1 model call\]/);
  });

  it('--json after an approval: the result carries the run usage and the thread total', async () => {
    server.reply(sse(openaiToolCalls(['run_command', { command: 'true' }])), sse(openaiText('Ran it.')));
    const running = startCli(['run', '--json', 'Go', '--allow-shell', '--db', 'memory'], {
      cwd: workdir(),
      env: openai(),
    });
    await running.waitFor('? [y/N] ');
    running.child.stdin.end('y\n');
    const result = await running.done;
    const last = JSON.parse(result.stdout.trimEnd().split('\n').at(-1)!) as Record<string, { input: number }>;
    expect(last).toMatchObject({
      type: 'result',
      usage: { input: 12, output: 7 },
      threadUsage: { input: 32, output: 12 },
    });
  });

  it('Ctrl-C at the question leaves it stored with the thread; the next run asks it again first', async () => {
    const cwd = workdir();
    server.reply(sse(openaiToolCalls(['run_command', { command: 'echo later > later.txt' }])));
    const first = startCli(['run', 'Do it', '--allow-shell', '--thread', 'held'], { cwd, env: openai() });
    await first.waitFor('? [y/N] ');
    first.child.kill('SIGINT');
    expect((await first.done).code).toBe(130);
    expect(existsSync(join(cwd, 'later.txt'))).toBe(false);
    server.reply(sse(openaiText('Done it.')), sse(openaiText('And the next.')));
    const second = startCli(['run', 'Next', '--allow-shell', '--thread', 'held'], { cwd, env: openai() });
    await second.waitFor('Allow run_command to run the shell command: echo later > later.txt? [y/N] ');
    second.child.stdin.write('y\n');
    const result = await second.done;
    expect(result.code).toBe(0);
    expect(readFileSync(join(cwd, 'later.txt'), 'utf8')).toBe('later\n');
    expect(result.stdout).toBe('Done it.\nAnd the next.\n');
    expect(server.requests).toHaveLength(3);
  });

  it('a declined write is denied and the model is told; --yes runs it without asking', async () => {
    const cwd = workdir();
    server.reply(sse(openaiToolCalls(['write_file', { path: 'a.txt', content: 'A' }])), sse(openaiText('OK.')));
    const declined = startCli(['run', 'Write a', '--allow-write', '--db', 'memory'], { cwd, env: openai() });
    await declined.waitFor('Allow write_file to write 1 bytes to a.txt? [y/N] ');
    declined.child.stdin.end('n\n');
    expect((await declined.done).code).toBe(0);
    expect(existsSync(join(cwd, 'a.txt'))).toBe(false);
    expect(toolResultsSent(1)[0]).toBe('The user declined this call');

    server.reset();
    server.reply(sse(openaiToolCalls(['write_file', { path: 'b/b.txt', content: 'B' }])), sse(openaiText('OK.')));
    const yes = await runCli(['run', 'Write b', '--allow-write', '--yes', '--db', 'memory'], { cwd, env: openai() });
    expect(yes.code).toBe(0);
    expect(yes.stderr).not.toContain('[y/N]');
    expect(readFileSync(join(cwd, 'b/b.txt'), 'utf8')).toBe('B');
  });

  it('without --allow-shell the model has no run_command tool', async () => {
    server.reply(sse(openaiText('No shell here.')));
    await runCli(['run', 'hi', '--db', 'memory'], { cwd: workdir(), env: openai() });
    const names = (server.requests[0]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(names).toEqual(['read_file', 'list_files', 'search_files', 'calculator', 'current_time']);
  });
});
