// `cubepi serve` as a person uses it: the built command started as a process, its chat page driven in a headless
// Chromium. A prompt streams an answer and a tool call with progress; Stop cancels mid-stream (the stored thread ends
// with an aborted message); a reload mid-run resumes the stream with nothing doubled; a guarded call is approved from
// the page. A screenshot of each is saved under test-output/.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launchChromium, requireChromium } from './chromium.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const output = join(root, 'test-output');

requireChromium('the cubepi serve browser test');

/** The token each started server printed, by its origin. */
const tokens = new Map<string, string>();

/** Starts `cubepi serve --port 0 …args` (the environment without provider variables, plus `env`); resolves with its URL. */
async function startServe(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ serve: ChildProcess; origin: string }> {
  const clean = { ...process.env };
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL'])
    delete clean[name];
  const serve = spawn(process.execPath, ['dist/src/cli/main.js', 'serve', '--port', '0', ...args], {
    cwd: root,
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const origin = await new Promise<string>((resolve, reject) => {
    let text = '';
    serve.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      // serve prints the page's URL with the token it made at start.
      const match = /(http:\/\/127\.0\.0\.1:\d+)\/#token=([\w-]+) /.exec(text);
      if (match !== null) {
        tokens.set(match[1]!, match[2]!);
        resolve(match[1]!);
      }
    });
    serve.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    serve.once('exit', (code) => reject(new Error(`cubepi serve exited (${code}): ${text}`)));
  });
  return { serve, origin };
}

describe.skipIf(!haveChromium)('cubepi serve in a headless Chromium', () => {
  let serve: ChildProcess;
  let origin = '';
  let failing: ChildProcess | undefined;
  let failingOrigin = '';
  let context: BrowserContext;
  let dir = '';

  beforeAll(async () => {
    if (!existsSync(join(root, 'dist/page/app.js'))) {
      await promisify(execFile)('npm', ['run', 'build'], { cwd: root });
    }
    dir = mkdtempSync(join(tmpdir(), 'cubepi-serve-'));
    mkdirSync(output, { recursive: true });
    ({ serve, origin } = await startServe(['--db', join(dir, 'threads.db')]));
    // A second server whose model is unreachable (a closed port): its failures as the page shows them.
    ({ serve: failing, origin: failingOrigin } = await startServe(['--db', 'memory', '--model', 'gpt-test'], {
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    }));
    context = await launchChromium(join(dir, 'chromium'));
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    for (const child of [serve, failing]) {
      if (child === undefined || child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  /** A page on a new thread; `problems` collects page errors and every response of 400 or more. */
  async function open(thread: string, at = origin): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(`${at}/#token=${tokens.get(at)}&thread=${thread}`);
    await page.waitForSelector('body[data-running="false"]');
    return { page, problems };
  }

  const transcript = (page: Page) => page.locator('#transcript').innerText();
  const stored = async (thread: string) =>
    (
      (await (
        await fetch(`${origin}/api/threads/${thread}`, { headers: { authorization: `Bearer ${tokens.get(origin)}` } })
      ).json()) as { messages: { role: string }[] }
    ).messages;

  /** Waits until the transcript shows `text` (a string evaluated in the page: tests have no DOM types). */
  const waitForText = (page: Page, text: string) =>
    page.waitForFunction(`document.querySelector('#transcript').textContent.includes(${JSON.stringify(text)})`);

  async function send(page: Page, prompt: string): Promise<void> {
    await page.fill('#prompt', prompt);
    await page.click('#send');
  }

  it('streams the answer token by token, with the tool call and its progress', { timeout: 90_000 }, async () => {
    const { page, problems } = await open('stream-1');
    // Every state a tool card shows, recorded in the page as it changes: "running" is transient (a loaded machine may
    // pass it before a wait for it begins), so the test reads what the page showed instead of racing it.
    await page.evaluate(`(() => {
      const seen = (window.__toolStates = []);
      const record = () => {
        for (const card of document.querySelectorAll('.tool')) seen.push(card.dataset.status + ' ' + card.innerText);
      };
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    })()`);
    await send(page, 'Tell me about cubes');
    await waitForText(page, 'Point 1');
    const toolStates = await page.evaluate<string[]>('window.__toolStates');
    expect(
      toolStates.some((state) => /^running .*research\(\{"topic":"Tell me about cubes"\}\) … \w+ing/.test(state)),
    ).toBe(true);
    const partial = await transcript(page);
    expect(partial).not.toContain('Done.'); // still streaming
    await page.waitForSelector('body[data-running="false"]', { timeout: 30_000 });
    const text = await transcript(page);
    expect(text).toContain('Notes on Tell me about cubes: three entries found.');
    expect(text.match(/Point 6/g)).toHaveLength(1);
    expect(text).toContain('Done.');
    expect(await page.locator('.message').count()).toBe((await stored('stream-1')).length);
    await page.screenshot({ path: join(output, 'serve-stream.png') });
    expect(problems).toEqual([]);
  });

  it(
    'Stop cancels the run mid-stream: the stored thread ends with the aborted answer, which Continue asks for again',
    { timeout: 90_000 },
    async () => {
      const { page, problems } = await open('stop-1');
      await send(page, 'Write at length');
      await waitForText(page, 'Point 2');
      await page.click('#stop');
      await page.waitForSelector('body[data-running="false"]');
      const messages = (await stored('stop-1')) as { role: string; stopReason?: string }[];
      expect(messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
      expect(await transcript(page)).not.toContain('Done.');
      await page.screenshot({ path: join(output, 'serve-stopped.png') });
      // Continue asks again for the answer that was stopped: it streams to its end after the aborted one.
      await page.click('#continue');
      await page.waitForSelector('body[data-running="false"]', { timeout: 30_000 });
      await waitForText(page, 'Done.');
      const after = (await stored('stop-1')) as { role: string; stopReason?: string }[];
      // The stopped answer stays stored (record-only); the new one follows it, with no new user message.
      expect(after.slice(0, messages.length)).toEqual(messages);
      expect(after.length).toBeGreaterThan(messages.length);
      expect(after.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
      expect(after.filter((m) => m.role === 'user')).toHaveLength(1);
      expect(await page.locator('#continue').isHidden()).toBe(true);
      expect(problems).toEqual([]);
    },
  );

  it('a reload mid-run resumes the stream, nothing doubled', { timeout: 90_000 }, async () => {
    const { page, problems } = await open('reload-1');
    await send(page, 'Explain reloading');
    await waitForText(page, 'Point 1');
    await page.reload();
    await page.waitForSelector('body[data-running="true"]');
    await page.waitForSelector('body[data-running="false"]', { timeout: 30_000 });
    const text = await transcript(page);
    expect(await page.locator('.message.user').count()).toBe(1);
    expect(text.match(/Point 1:/g)).toHaveLength(1);
    expect(text.match(/Done\./g)).toHaveLength(1);
    expect(await page.locator('.message').count()).toBe((await stored('reload-1')).length);
    await page.screenshot({ path: join(output, 'serve-reloaded.png') });
    expect(problems).toEqual([]);
  });

  it('a provider failure reads as the CLI says it, and the page asks for no favicon', { timeout: 90_000 }, async () => {
    const { page, problems } = await open('fail-1', failingOrigin);
    await send(page, 'Hello?');
    await page.waitForSelector('.failure');
    await page.waitForSelector('body[data-running="false"]', { timeout: 30_000 });
    const failure = page.locator('.failure');
    expect(await failure.innerText()).toMatch(
      /^cannot reach the OpenAI server cubepi serve uses \(Connection error.*\): check your network and OPENAI_BASE_URL$/,
    );
    expect(await failure.getAttribute('title')).toMatch(/^Connection error/); // the raw error, on hover
    // The page declares no icon, so a browser asks for no /favicon.ico (which the server does not have).
    expect(await page.locator('link[rel="icon"]').getAttribute('href', { timeout: 1000 })).toBe('data:,');
    expect(problems).toEqual([]);
  });

  it('a guarded call waits for the Approve button, then runs', { timeout: 90_000 }, async () => {
    const { page, problems } = await open('approve-1');
    await send(page, 'delete the old notes');
    await page.waitForSelector('.tool[data-status="awaiting_approval"]');
    await page.screenshot({ path: join(output, 'serve-approval.png') });
    await page.click('.tool button:text("Approve")');
    await waitForText(page, 'Deleted the notes on delete the old notes.');
    await page.waitForSelector('body[data-running="false"]', { timeout: 30_000 });
    expect(await transcript(page)).toContain('Done.');
    expect(await page.locator('.tool').count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
