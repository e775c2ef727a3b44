// `cubepi chat` in a pseudo-terminal, typed at as a person does: against the demo model and, through the SDKs, against
// local servers speaking the Anthropic and OpenAI wire formats.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ReplayServer, sse } from '../providers/replay-server.js';
import { cleanEnv, ensureBuilt, runCli, startInPty, workdir, type RunningCli } from './cli-harness.js';
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

/** Types `text` and Enter at the terminal. */
const type = (chat: RunningCli, text: string) => chat.child.stdin.write(`${text}\r`);
/** The terminal's output without colours and cursor moves. */
const ANSI = new RegExp(String.raw`\u001b\[[0-9;]*[A-Za-z]`, 'g');
const plain = (chat: RunningCli) => chat.output.stdout.replace(ANSI, '');
/** The terminal's output after `marker`'s last occurrence (raw: escapes kept). */
const after = (chat: RunningCli, marker: string) => chat.output.stdout.slice(chat.output.stdout.lastIndexOf(marker));
/** Resolves when the prompt has been shown `n` times. */
const prompts = (chat: RunningCli, n: number) => chat.waitFor(new RegExp(`(› [^]*){${n}}`));

describe('cubepi chat in a terminal', () => {
  it('streams the answer with tools and usage, lists threads, switches model, exits with /exit', async () => {
    const cwd = workdir();
    writeFileSync(join(cwd, 'README.md'), '# Here\n');
    const chat = startInPty(['chat', '--provider', 'faux', '--delay', '0', '--thread', 'c1'], {
      cwd,
      env: cleanEnv({ NO_COLOR: '' }),
    });
    await chat.waitFor('› ');
    expect(plain(chat)).toContain('cubepi chat · cubepi-demo (faux) · thread c1 · SQLite at .cubepi/threads.db');
    type(chat, 'What is here?');
    await chat.waitFor(/\[\d+ in · \d+ out · 3 model calls\]/); // the demo model has no price
    const turn = after(chat, 'What is here?');
    expect(plain(chat)).toContain('⚙ list_files({"path":"."})');
    expect(plain(chat)).toContain(`This is cubepi's offline demo model: it does not understand "What is here?"`);
    expect(turn).toContain('\u001b[2m'); // a TTY without NO_COLOR: thinking and usage dimmed
    await prompts(chat, 2);
    type(chat, '/threads');
    await chat.waitFor('* c1  8 messages');
    type(chat, '/model other-model');
    await chat.waitFor('(model other-model from the next message on)');
    type(chat, '/exit');
    expect((await chat.done).code).toBe(0);
  });

  it('NO_COLOR: no colours even on a terminal; --no-thinking hides thinking', async () => {
    const chat = startInPty(['chat', '--provider', 'faux', '--delay', '0', '--no-thinking', '--db', 'memory'], {
      cwd: workdir(),
      env: cleanEnv({ NO_COLOR: '1' }),
    });
    await chat.waitFor('› ');
    type(chat, 'hi');
    await chat.waitFor(/model calls?\]/);
    const turn = after(chat, 'hi');
    expect(turn).not.toMatch(new RegExp(String.raw`\u001b\[[0-9;]*m`)); // no colour (cursor moves are readline's)
    expect(turn).not.toContain('The demo script');
    chat.child.stdin.write('\u0004'); // Ctrl-D
    expect((await chat.done).code).toBe(0);
  });

  it('Ctrl-C mid-stream (Anthropic) cancels the run, the server sees the socket close, the prompt comes back', async () => {
    const cwd = workdir();
    const env = cleanEnv({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: server.url });
    server.reply({ kind: 'stall', body: anthropicText('Once upon a time, in a land', { partial: true }) });
    server.reply(sse(anthropicText('Where were we?')));
    const chat = startInPty(['chat', '--thread', 'story'], { cwd, env });
    await chat.waitFor('› ');
    type(chat, 'Tell me a story');
    await chat.waitFor('Once upon a time');
    chat.child.stdin.write('\u0003');
    expect(await server.requests[0]!.closed).toEqual({ finished: false });
    await chat.waitFor('(cancelled: what was said so far is kept)');
    await prompts(chat, 2);
    type(chat, 'Go on');
    await chat.waitFor('Where were we?');
    // The second request carries the first prompt: the thread went on.
    expect(server.requests[1]!.rawBody).toContain('Tell me a story');
    await prompts(chat, 3);
    chat.child.stdin.write('\u0003'); // Ctrl-C on an empty prompt leaves
    expect((await chat.done).code).toBe(130);
    const shown = await runCli(['threads', 'show', 'story'], { cwd });
    expect(shown.stdout).toContain('> Tell me a story\nOnce upon a time, in a land\n  [aborted');
    expect(shown.stdout).toContain('> Go on\nWhere were we?');
  });

  it('a line typed during a run is a steering message, injected after the tool batch; risky tools ask first', async () => {
    const cwd = workdir();
    const env = cleanEnv({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${server.url}/v1` });
    server.reply(
      sse(openaiToolCalls(['run_command', { command: 'sleep 1; echo slept' }])),
      sse(openaiText('Slept, and noted Oslo.')),
    );
    const chat = startInPty(['chat', '--allow-shell', '--db', 'memory'], { cwd, env });
    await chat.waitFor('› ');
    type(chat, 'Sleep a bit');
    await chat.waitFor('Allow run_command to run the shell command: sleep 1; echo slept? [y/N] ');
    expect(server.requests).toHaveLength(1);
    type(chat, 'y');
    await chat.waitFor('⚙ run_command');
    type(chat, 'Also check Oslo');
    await chat.waitFor('(queued: it goes in after the current tool batch)');
    await chat.waitFor('Slept, and noted Oslo.');
    const sent = server.requests[1]!.body.messages as { role: string; content: unknown }[];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(sent[3]!.content).toBe('exit code 0\nslept\n');
    expect(sent[4]!.content).toBe('Also check Oslo');
    expect(chat.output.stdout).toContain('↳ steering: Also check Oslo');
    type(chat, '/exit');
    expect((await chat.done).code).toBe(0);
  });
});
