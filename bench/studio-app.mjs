// The studio itself in Chromium (issue 34's goal): `createStudio` over a real SQLite thread store, a JSONL trace file
// and a `createAgentServer`, the built page (dist/page/studio) opened at its hash routes:
//   - `#/threads/big`: a 10,000-message thread, from the route change until its last message is in the DOM;
//   - `#/runs/run_big`: a 2,000-span run, from the route change until the timeline has rows;
//   - a live run: a prompt whose answer streams at ~1,000 deltas/s for ~4 s, until the page shows the whole answer.
// Main-thread time is CDP Performance.getMetrics' TaskDuration (and ScriptDuration) delta over the window; long
// tasks come from a PerformanceObserver('longtask') installed before the window. For the live run, "nothing dropped"
// is checked: the text the page shows equals the answer the checkpointer stored. Not a test (no assertion): numbers
// go to bench/results/studio-app.md and the console. Goal: < 1,000 ms for each view, no task over 50 ms while streaming.
//
//   npm run build && node bench/studio-app.mjs [--reps 5] [--no-write]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { asyncScheduler, Subscription } from 'rxjs';
import { measureMainThread } from './common.mjs';
import { writeTrace } from './studio-trace.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const reps = Number(args[args.indexOf('--reps') + 1] ?? 5) || 5;
const write = !args.includes('--no-write');
const load = (path) =>
  import(join(root, 'dist/src', path)).catch(() => {
    console.error('bench/studio-app.mjs needs the built package: npm run build');
    process.exit(1);
  });
const { Agent } = await load('index.js');
const { SQLiteCheckpointer } = await load('checkpoint/sqlite.js');
const { createAgentServer } = await load('server/index.js');
const { createStudio, studioNodeListener } = await load('studio/index.js');
const { FauxProvider, fauxMessage } = await load('testing/index.js');

const dir = mkdtempSync(join(tmpdir(), 'cubepi-bench-studio-app-'));
const checkpointer = new SQLiteCheckpointer(join(dir, 'threads.db'));
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const big = [];
for (let i = 0; i < 10_000; i++) {
  big.push(
    i % 2 === 0
      ? { role: 'user', content: `question ${i}: ${'what about this? '.repeat(4)}`, timestamp: 1_700_000_000_000 + i }
      : {
          role: 'assistant',
          content: [{ type: 'text', text: `answer ${i}: ${'here is a sentence of the answer. '.repeat(6)}` }],
          stopReason: 'stop',
          usage,
          provider: 'faux',
          model: 'faux',
          timestamp: 1_700_000_000_000 + i,
        },
  );
}
await checkpointer.append('big', big);
const traceFile = join(dir, 'traces.jsonl');
writeTrace(traceFile, 2_000, { runId: 'run_big', threadId: 'big' });

// ~1,000 deltas/s or more: 4,000 two-character chunks, two per 1 ms timer (a timer alone fires every ~1.5 ms here,
// ~660 deltas/s): the FauxProvider's pacing scheduler runs every other chunk at once, in a microtask.
const DELTAS = 4_000;
let paced = 0;
const twoPerTick = {
  now: () => Date.now(),
  schedule(work, delay, state) {
    if (++paced % 2 === 0) return asyncScheduler.schedule(work, delay, state);
    let cancelled = false;
    queueMicrotask(() => {
      if (!cancelled) work.call(undefined, state);
    });
    return new Subscription(() => (cancelled = true));
  },
};
const ANSWER = Array.from({ length: DELTAS }, (_, i) => `w${i % 10}`).join('');
const server = createAgentServer({
  checkpointer,
  basePath: '/api',
  agent: (threadId) =>
    new Agent({
      provider: new FauxProvider({ delayMs: 1, chunkSize: 2, scheduler: twoPerTick, responses: Array.from({ length: 50 }, () => fauxMessage(ANSWER)) }),
      model: 'faux',
      checkpointer,
      threadId,
    }),
});
const http = createServer(studioNodeListener(createStudio({ checkpointer, server, traceFile })));
await new Promise((ready) => http.listen(0, '127.0.0.1', ready));
const origin = `http://127.0.0.1:${http.address().port}`;
const context = await chromium.launchPersistentContext(join(dir, 'chromium'), {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

/** Main-thread time and long tasks while `work` runs on `page` (already on the studio). */
async function measure(page, work) {
  await page.evaluate(`window.__long = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); })
      .observe({ type: 'longtask' });`);
  const { taskMs, scriptMs, longtasks } = await measureMainThread(
    context,
    page,
    async () => {
      await work();
      // One more frame, so what the last change scheduled is counted.
      await page.evaluate('new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)))');
    },
    'window.__long',
  );
  return { taskMs, scriptMs, longestMs: Math.max(0, ...longtasks), over50: longtasks.filter((ms) => ms > 50).length };
}

async function studioPage() {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.goto(`${origin}/#/threads`);
  await page.waitForSelector('li[data-thread=big]');
  return page;
}

async function openThread() {
  const page = await studioPage();
  const result = await measure(page, async () => {
    await page.evaluate("location.hash = '#/threads/big'");
    await page.waitForSelector('.msg[data-seq="9999"]', { state: 'attached', timeout: 60_000 });
  });
  await page.close();
  return result;
}

async function openRun() {
  const page = await studioPage();
  const result = await measure(page, async () => {
    await page.evaluate("location.hash = '#/runs/run_big'");
    await page.waitForSelector('[data-part=timeline] .tl-row', { state: 'attached', timeout: 60_000 });
  });
  await page.close();
  return result;
}

let liveRun = 0;
async function streamLive() {
  const thread = `live-${++liveRun}`;
  const page = await studioPage();
  await page.evaluate(`location.hash = '#/threads/${thread}'`);
  await page.waitForSelector('form.prompt textarea');
  await page.fill('form.prompt textarea', 'stream please');
  const started = Date.now();
  const result = await measure(page, async () => {
    await page.click('form.prompt button[type=submit]');
    // The run ended and the page shows the stored thread's answer.
    await page.waitForFunction(
      `[...document.querySelectorAll('.msg[data-role=assistant]')].some((m) => m.textContent.includes(${JSON.stringify(ANSWER.slice(-40))}))`,
      null,
      { timeout: 120_000 },
    );
    for (;;) {
      const last = (await checkpointer.load(thread))?.messages.at(-1);
      if (last?.role === 'assistant') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  const seconds = (Date.now() - started) / 1000;
  const shown = await page.evaluate(
    `[...document.querySelectorAll('.msg[data-role=assistant]')].map((m) => m.textContent).find((t) => t.includes(${JSON.stringify(ANSWER.slice(0, 20))})) ?? ''`,
  );
  const stored = (await checkpointer.load(thread)).messages.at(-1).content.map((b) => b.text ?? '').join('');
  await page.close();
  return { ...result, deltasPerSec: DELTAS / seconds, intact: stored === ANSWER && shown.includes(ANSWER) };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const views = { thread: [], run: [], live: [] };
// Warm-up: the first page load compiles the bundle.
await openThread();
for (let rep = 0; rep < reps; rep++) {
  views.thread.push(await openThread());
  views.run.push(await openRun());
  views.live.push(await streamLive());
  console.log(`rep ${rep + 1}/${reps}:`, JSON.stringify({ thread: views.thread.at(-1), run: views.run.at(-1), live: views.live.at(-1) }));
}
const cell = (runs, key) => `${median(runs.map((r) => r[key])).toFixed(0)} (${Math.max(...runs.map((r) => r[key])).toFixed(0)})`;
const report = [
  `# Studio in Chromium (bench/studio-app.mjs, ${reps} reps; median (max))`,
  '',
  `Measured ${new Date().toISOString()}; createStudio + createAgentServer + SQLite, the built page.`,
  '',
  '| view | main-thread task ms | script ms | longest task ms | tasks > 50 ms |',
  '| --- | ---: | ---: | ---: | ---: |',
  `| open a 10,000-message thread | ${cell(views.thread, 'taskMs')} | ${cell(views.thread, 'scriptMs')} | ${cell(views.thread, 'longestMs')} | ${cell(views.thread, 'over50')} |`,
  `| open a 2,000-span run | ${cell(views.run, 'taskMs')} | ${cell(views.run, 'scriptMs')} | ${cell(views.run, 'longestMs')} | ${cell(views.run, 'over50')} |`,
  `| a live run streaming (${median(views.live.map((r) => r.deltasPerSec)).toFixed(0)} deltas/s) | ${cell(views.live, 'taskMs')} | ${cell(views.live, 'scriptMs')} | ${cell(views.live, 'longestMs')} | ${cell(views.live, 'over50')} |`,
  '',
  `Live answer intact (shown = stored = sent) in ${views.live.filter((r) => r.intact).length} of ${reps} runs.`,
  '',
];
console.log(report.join('\n'));
if (write) {
  mkdirSync(join(root, 'bench/results'), { recursive: true });
  writeFileSync(join(root, 'bench/results/studio-app.md'), report.join('\n'));
}
await context.close();
server.close();
http.closeAllConnections();
http.close();
await checkpointer.close();
rmSync(dir, { recursive: true, force: true });
