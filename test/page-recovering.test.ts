// The chat page (page/, what `cubepi serve` serves) in a headless Chromium, on a server of this test that streams a
// run scripted frame by frame: the worker running the answer is lost mid-message and another takes over
// (`run_recovering`). The page says so, keeps the text it showed until the new attempt's first delta replaces it, then
// streams on.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMPTY_USAGE, type AgentEvent, type AssistantMessage, type UserMessage } from 'cubepi';
import { haveChromium, launchChromium, requireChromium } from './chromium.js';

const root = fileURLToPath(new URL('..', import.meta.url));

requireChromium('the page recovery test');

const prompt: UserMessage = { role: 'user', content: 'hi', timestamp: 1 };
const answer = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason: 'stop',
  usage: EMPTY_USAGE,
  provider: 'faux',
  model: 'faux',
  timestamp: 2,
});
const empty: AssistantMessage = { ...answer(''), content: [] };
const delta = (text: string, soFar: string): AgentEvent => ({
  type: 'message_update',
  runId: 'run-1',
  message: answer(soFar),
  streamEvent: { type: 'text_delta', contentIndex: 0, delta: text, partial: answer(soFar) },
});

describe.skipIf(!haveChromium)('the chat page when a run is taken over after its worker was lost', () => {
  let server: Server;
  let context: BrowserContext;
  let dir = '';
  let stream: ServerResponse | undefined;
  let streamOpened!: () => void;
  const opened = new Promise<void>((resolve) => (streamOpened = resolve));
  let ended = false;
  let seq = 0;
  const send = (event: AgentEvent) => stream!.write(`id: ${++seq}\ndata: ${JSON.stringify({ ...event, seq })}\n\n`);

  beforeAll(async () => {
    if (!existsSync(join(root, 'dist/page/app.js'))) await promisify(execFile)('npm', ['run', 'build'], { cwd: root });
    const files: Record<string, [string, string]> = {
      '/': ['index.html', 'text/html'],
      '/app.js': ['app.js', 'text/javascript'],
      '/app.css': ['app.css', 'text/css'],
    };
    server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const file = files[path];
      const json = (value: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (file !== undefined) {
        res.writeHead(200, { 'content-type': file[1] }).end(readFileSync(join(root, 'dist/page', file[0])));
      } else if (path === '/api/threads') json({ threads: [{ threadId: 't1' }] });
      else if (path === '/api/threads/t1') {
        json(
          ended
            ? { threadId: 't1', messages: [prompt, answer('Fresh answer')], pending: [], activeRunId: null }
            : { threadId: 't1', messages: [prompt], pending: [], activeRunId: 'run-1' },
        );
      } else if (path === '/api/runs/run-1/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        stream = res;
        streamOpened();
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    dir = mkdtempSync(join(tmpdir(), 'cubepi-page-'));
    context = await launchChromium(join(dir, 'chromium'));
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('shows that another worker is taking over, keeps the text until the new attempt streams, then replaces it', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/#thread=t1`);
    await opened;
    const transcriptHas = (text: string) =>
      page.waitForFunction(`document.querySelector('#transcript').textContent.includes(${JSON.stringify(text)})`);

    // The first attempt streams part of its answer; its worker is lost.
    send({ type: 'agent_start', runId: 'run-1' });
    send({ type: 'message_start', runId: 'run-1', message: empty });
    send(delta('Hello, half an', 'Hello, half an'));
    await transcriptHas('Hello, half an');
    expect(await page.locator('#status').isHidden()).toBe(true);

    // Another worker takes the run over: it starts again, a new message opens, no delta yet.
    send({ type: 'run_recovering', runId: 'run-1', attempt: 2 });
    send({ type: 'agent_start', runId: 'run-1' });
    send({ type: 'message_start', runId: 'run-1', message: empty });
    send({
      type: 'message_update',
      runId: 'run-1',
      message: answer(''),
      streamEvent: { type: 'text_start', contentIndex: 0, partial: answer('') },
    });
    // A marker: a message of another run on the same stream (assembleMessages keeps runs apart). Once it shows, every
    // frame before it has been handled.
    const marker: UserMessage = { role: 'user', content: 'marker', timestamp: 3 };
    send({ type: 'message_start', runId: 'side', message: marker });
    send({ type: 'message_end', runId: 'side', message: marker });
    await transcriptHas('marker');
    expect(await page.locator('#status').isVisible()).toBe(true);
    expect(await page.locator('#status').innerText()).toContain('another one is taking over (attempt 2)');
    // The old text still shows, in the answer's place.
    expect(await page.locator('#transcript').innerText()).toContain('Hello, half an');
    expect(await page.locator('.message.assistant').count()).toBe(1);

    // The new attempt's first delta replaces it, and the notice goes.
    send(delta('Fresh', 'Fresh'));
    await transcriptHas('Fresh');
    expect(await page.locator('#transcript').innerText()).not.toContain('Hello, half an');
    expect(await page.locator('.message.assistant').count()).toBe(1);
    await page.waitForSelector('#status', { state: 'hidden' });

    send(delta(' answer', 'Fresh answer'));
    send({ type: 'message_end', runId: 'run-1', message: answer('Fresh answer') });
    ended = true;
    send({
      type: 'agent_end',
      runId: 'run-1',
      messages: [answer('Fresh answer')],
      outcome: 'completed',
      usage: EMPTY_USAGE,
    });
    stream!.end(`id: ${++seq}\nevent: end\ndata: ${JSON.stringify({ type: 'run_end', runId: 'run-1', seq })}\n\n`);
    await page.waitForSelector('body[data-running="false"]');
    expect(await page.locator('#transcript').innerText()).toContain('Fresh answer');
    expect(problems).toEqual([]);
  }, 60_000);
});
