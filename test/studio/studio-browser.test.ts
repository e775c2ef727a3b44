// The studio page in a headless Chromium against a real createAgentServer + createStudio (SQLite checkpointer,
// FauxProvider agents) served on 127.0.0.1:0: the threads list (a fork nested under its parent, search), a
// conversation (tool call and result, thinking, approval, state patch, compaction, fork marker), a live run streaming
// then Stop, an approval answered from the studio, Edit & retry opening the fork, the compare view, and a
// 10,000-message thread (its last rows first; its main-thread time is bench/studio-app.mjs's). Each view writes
// test-output/studio/<view>.png.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, ToolGuard, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { createAgentServer, type AgentServer } from 'cubepi/server';
import { createStudio, createTraceReader, studioNodeListener } from 'cubepi/studio';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { traceAgent } from 'cubepi/tracing';
import { JsonlSpanExporter } from 'cubepi/tracing/jsonl';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { haveChromium, launchChromium, requireChromium } from '../chromium.js';

requireChromium('the studio browser test');

const root = fileURLToPath(new URL('../..', import.meta.url));
const shots = join(root, 'test-output', 'studio');
const TOKEN = 'studio-test-token-0123456789';
const usage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  reasoning: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

const deleteNotes = defineTool({
  name: 'delete_notes',
  description: 'Deletes notes',
  parameters: z.object({ topic: z.string() }),
  execute: async (_id, { topic }) => ({ content: [{ type: 'text', text: `deleted ${topic}` }] }),
});

const lastUserText = (messages: readonly Message[]) => {
  const user = messages.findLast((message) => message.role === 'user');
  if (user === undefined) return '';
  return typeof user.content === 'string'
    ? user.content
    : user.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
};

/** `delete …` asks for the guarded tool; `slow-…` threads stream a long answer; anything else is echoed. */
function provider(threadId: string): FauxProvider {
  const script = (messages: readonly Message[]) => {
    const last = messages.at(-1);
    const prompt = lastUserText(messages);
    if (last?.role === 'toolResult') return fauxMessage(`done: ${lastUserText([last]) || 'tool ran'}`);
    if (prompt.includes('delete')) return fauxMessage([fauxToolCall('delete_notes', { topic: 'old' })]);
    if (threadId.startsWith('slow-')) return fauxMessage(Array.from({ length: 4000 }, (_, i) => `w${i} `).join(''));
    return fauxMessage(`echo: ${prompt}`);
  };
  return new FauxProvider({
    delayMs: threadId.startsWith('slow-') ? 1 : 0,
    chunkSize: 2,
    responses: Array.from({ length: 20 }, () => script),
  });
}

const at = (i: number) => 1_700_000_000_000 + i * 1000;
const RICH: Message[] = [
  { role: 'user', content: 'Plan my trip to Oslo', timestamp: at(0) },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'The user wants a plan; look up the weather first.' },
      { type: 'text', text: 'Let me check the weather.' },
      { type: 'toolCall', id: 'call-1', name: 'weather', arguments: { city: 'Oslo' } },
    ],
    stopReason: 'toolUse',
    usage,
    provider: 'faux',
    model: 'faux',
    timestamp: at(1),
  },
  {
    role: 'toolResult',
    toolCallId: 'call-1',
    toolName: 'weather',
    content: [{ type: 'text', text: 'Oslo: 4°C, light rain' }],
    isError: false,
    timestamp: at(2),
  },
  {
    role: 'assistant',
    content: [{ type: 'text', text: 'Pack a raincoat: 4°C and light rain.' }],
    stopReason: 'stop',
    usage,
    provider: 'faux',
    model: 'faux',
    timestamp: at(3),
  },
];
const RICH_EXTRA = {
  'cubepi:state': {
    version: 3,
    values: {
      plan: 'Oslo, 3 days',
      'cubepi:compaction': { summary: 'The user asked for an Oslo plan.', throughSeq: 2, model: 'faux', fromSeq: 0 },
    },
    events: [],
    contextFragments: [],
    changedBy: { plan: { producer: 'planner', version: 3, eventId: 'e3' } },
  },
};

describe.skipIf(!haveChromium)('the studio in a headless Chromium', () => {
  let dir = '';
  let checkpointer: SQLiteCheckpointer;
  let server: AgentServer;
  let http: Server;
  let origin = '';
  let context: BrowserContext;
  let traceFile = '';
  let tracing: BasicTracerProvider | undefined;

  beforeAll(async () => {
    await promisify(execFile)(process.execPath, ['scripts/build-page.mjs'], { cwd: root });
    mkdirSync(shots, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'cubepi-studio-browser-'));
    checkpointer = new SQLiteCheckpointer(join(dir, 'threads.db'));
    await checkpointer.append('rich', RICH);
    await checkpointer.saveExtra('rich', RICH_EXTRA);
    await checkpointer.fork('rich', { atSeq: 3, newThreadId: 'rich-fork' });
    await checkpointer.append('rich-fork', [
      { ...RICH[3]!, content: [{ type: 'text', text: 'Bring an umbrella instead.' }], timestamp: at(9) },
    ]);
    const big: Message[] = [];
    for (let i = 0; i < 10_000; i++) {
      big.push(
        i % 2 === 0
          ? { role: 'user', content: `question ${i}`, timestamp: at(i) }
          : { ...RICH[3]!, content: [{ type: 'text', text: `answer ${i} `.repeat(8) }], timestamp: at(i) },
      );
    }
    await checkpointer.append('big', big);
    // The server's runs traced into a JSONL file, as `cubepi studio` does: the run view reads them back.
    traceFile = join(dir, 'traces.jsonl');
    tracing = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new JsonlSpanExporter(traceFile))] });
    const tracer = tracing.getTracer('cubepi');
    server = createAgentServer({
      flushMs: 0,
      checkpointer,
      authToken: TOKEN,
      basePath: '/api',
      agent: (threadId) => {
        const agent = new Agent({
          provider: provider(threadId),
          model: 'faux',
          tools: [deleteNotes],
          middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['delete_notes'] }) })],
          checkpointer,
          threadId,
        });
        traceAgent(agent, { tracer, threadId });
        return agent;
      },
    });
    http = createServer(studioNodeListener(createStudio({ checkpointer, server, traceFile })));
    await new Promise<void>((ready) => http.listen(0, '127.0.0.1', ready));
    origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    context = await launchChromium(join(dir, 'profile'));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    server?.close();
    http?.closeAllConnections();
    await new Promise<void>((closed) => (http === undefined ? closed() : http.close(() => closed())));
    await tracing?.shutdown();
    await checkpointer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(hash: string): Promise<Page> {
    const page = await context.newPage();
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(`${origin}/#${hash}&token=${TOKEN}`);
    return page;
  }

  it('lists threads with the fork nested under its parent, and searches', { timeout: 60_000 }, async () => {
    const page = await open('/threads');
    await page.waitForSelector('[data-view=threads] li[data-thread=rich] ul.forks li[data-thread=rich-fork]');
    expect(await page.locator('li[data-thread=big]').count()).toBe(1);
    await page.screenshot({ path: join(shots, 'threads.png') });
    await page.fill('input.search', 'oslo');
    await page.waitForFunction("document.querySelector('li[data-thread=big]') === null");
    expect(await page.locator('li[data-thread=rich]').count()).toBe(1);
    await page.close();
  });

  it(
    'shows a conversation: tool call and result, thinking, state patch, compaction, fork marker',
    { timeout: 60_000 },
    async () => {
      const page = await open('/threads/rich');
      await page.waitForSelector('.msg[data-seq="3"]');
      expect(await page.locator('.msg[data-seq="1"] .tool-call .tool-name').textContent()).toContain('weather');
      expect(await page.locator('.msg[data-seq="1"] .tool-call pre.args').textContent()).toContain('"city": "Oslo"');
      expect(await page.locator('.msg[data-role=toolResult]').textContent()).toContain('4°C, light rain');
      const thinking = page.locator('.msg[data-seq="1"] details.thinking');
      expect(await thinking.getAttribute('open')).toBeNull(); // collapsed
      expect(await thinking.textContent()).toContain('look up the weather');
      expect(await page.locator('.patch[data-key=plan]').textContent()).toMatch(/planner.*v3/);
      // The compaction marker stands before message 2 (messages 0–1 summarised), the fork before message 3.
      const order = await page.evaluate<string[]>(
        `[...document.querySelectorAll('.messages[data-part=stored] > :not(button)')].map((n) => n.dataset.marker ?? n.dataset.seq)`,
      );
      expect(order).toEqual(['0', '1', 'compaction', '2', 'fork', '3']);
      expect(await page.locator('.marker.fork a').first().getAttribute('href')).toBe('#/threads/rich-fork');
      await page.screenshot({ path: join(shots, 'conversation.png'), fullPage: true });
      await page.close();
    },
  );

  it('answers an approval from the studio: the resumed run streams in', { timeout: 60_000 }, async () => {
    const page = await open('/threads/ask-1');
    await page.waitForSelector('form.prompt textarea');
    await page.fill('form.prompt textarea', 'please delete the old notes');
    await page.click('form.prompt button[type=submit]');
    await page.waitForSelector('.approval button[data-action=approve]', { timeout: 30_000 });
    expect(await page.locator('.approval').textContent()).toContain('delete_notes');
    await page.screenshot({ path: join(shots, 'approval.png'), fullPage: true });
    await page.click('.approval button[data-action=approve]');
    await page.waitForFunction("document.body.textContent.includes('deleted old')", null, {
      timeout: 30_000,
    });
    await expect.poll(async () => (await checkpointer.load('ask-1'))!.messages.at(-1)?.role).toBe('assistant');
    const stored = (await checkpointer.load('ask-1'))!.messages;
    expect(stored.some((m) => m.role === 'toolResult' && !m.isError)).toBe(true);
    await page.close();
  });

  // The trace reader is the timeline helper's (src/studio/traces.ts): this runs once it reads the file.
  it("lists the thread's runs from the trace file and opens one as a run view", { timeout: 60_000 }, async () => {
    await tracing!.forceFlush();
    const { runs } = await createTraceReader(traceFile).runs('ask-1');
    expect(runs.length).toBeGreaterThan(0);
    const page = await open('/threads/ask-1');
    await page.waitForSelector('.runs li[data-run] a');
    expect(await page.locator('.runs li[data-run]').count()).toBe(runs.length);
    await page.click(`.runs li[data-run="${runs.at(-1)!.runId}"] a`);
    await page.waitForSelector('[data-view=run] .run-summary a');
    expect(await page.locator('.run-summary').textContent()).toContain('ask-1');
    expect(
      await page.evaluate<number>("document.querySelector('[data-part=timeline]').childNodes.length"),
    ).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, 'run.png'), fullPage: true });
    await page.close();
  });

  it(
    // Its main-thread cost at ~1,000 deltas/s (no task over 50 ms) is measured in bench/studio.mjs, not timed here.
    'streams a live run at ~1,000 deltas/s, then Stop cancels it on the server',
    { timeout: 90_000 },
    async () => {
      const page = await open('/threads/slow-1');
      await page.waitForSelector('form.prompt textarea');
      await page.fill('form.prompt textarea', 'tell me a long story');
      await page.click('form.prompt button[type=submit]');
      await page.waitForFunction(
        "(document.querySelector('.messages.live .msg[data-role=assistant]')?.textContent?.length ?? 0) > 8000",
        null,
        { timeout: 30_000 },
      );
      await page.screenshot({ path: join(shots, 'live.png') });
      await page.click('button[data-action=stop]');
      await expect
        .poll(
          async () => {
            const last = (await checkpointer.load('slow-1'))?.messages.at(-1);
            return last?.role === 'assistant' ? last.stopReason : undefined;
          },
          { timeout: 30_000 },
        )
        .toBe('aborted');
      await page.close();
    },
  );

  it('Edit & retry forks the thread and opens the fork, the original untouched', { timeout: 60_000 }, async () => {
    const page = await open('/threads/rich');
    await page.waitForSelector('.msg[data-seq="0"] button[data-action=edit]');
    await page.click('.msg[data-seq="0"] button[data-action=edit]');
    await page.fill('.msg[data-seq="0"] .editor textarea', 'Plan my trip to Bergen');
    await page.click('.msg[data-seq="0"] button[data-action=edit-send]');
    await page.waitForFunction('/^#\\/threads\\/[0-9a-f-]{36}$/.test(location.hash)', null, { timeout: 30_000 });
    const fork = decodeURIComponent((await page.evaluate<string>('location.hash')).slice('#/threads/'.length));
    await page.waitForFunction("document.body.textContent.includes('echo: Plan my trip to Bergen')", null, {
      timeout: 30_000,
    });
    expect(await page.locator('.parent-line').textContent()).toContain('fork of rich');
    await page.screenshot({ path: join(shots, 'retry.png'), fullPage: true });
    expect((await checkpointer.load('rich'))!.messages).toEqual(RICH);
    expect((await checkpointer.listThreads()).find((t) => t.threadId === fork)?.parent).toEqual({
      threadId: 'rich',
      atSeq: 0,
    });
    await page.close();
  });

  it('compares a thread and its fork side by side, aligned at the fork point', { timeout: 60_000 }, async () => {
    const page = await open('/compare/rich/rich-fork');
    await page.waitForSelector('.compare-columns');
    expect(await page.locator('details.shared > summary').textContent()).toContain('3 shared messages');
    expect(await page.locator('.compare-column[data-thread=rich] .msg').count()).toBe(1);
    expect(await page.locator('.compare-column[data-thread=rich]').textContent()).toContain('raincoat');
    expect(await page.locator('.compare-column[data-thread=rich-fork]').textContent()).toContain('umbrella');
    await page.screenshot({ path: join(shots, 'compare.png'), fullPage: true });
    await page.close();
  });

  // How much main-thread time it takes (under a second is the goal) is measured in bench/studio.mjs, not timed here.
  it(
    'opens a 10,000-message thread drawing its last rows first, the earlier ones on demand',
    { timeout: 90_000 },
    async () => {
      const page = await open('/threads');
      await page.waitForSelector('li[data-thread=big]');
      await page.evaluate("location.hash = '#/threads/big'");
      await page.waitForSelector('.msg[data-seq="9999"]', { state: 'attached', timeout: 60_000 });
      await page.screenshot({ path: join(shots, 'big-thread.png') });
      // The earliest messages are a click away, drawn above, in order.
      const rows = page.locator('.messages[data-part=stored] .msg');
      const shown = await rows.count();
      expect(shown).toBeLessThan(10_000);
      while ((await page.locator('button[data-action=earlier]:not([hidden])').count()) > 0) {
        await page.click('button[data-action=earlier]');
      }
      expect(await rows.count()).toBe(10_000);
      expect(await rows.first().getAttribute('data-seq')).toBe('0');
      await page.close();
    },
  );
});
