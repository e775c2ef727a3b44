// The studio's main-thread cost in Chromium (issue 34): a 2,000-span run shown in the timeline, and a live run whose
// events stream at ~1,000 deltas/s into the timeline (spansFromEvents) while the page keeps the answer's text.
// Measured with a PerformanceObserver for `longtask` and CDP Performance.getMetrics (TaskDuration, ScriptDuration
// deltas), from navigation until the view's content is present. Not a test: numbers go to bench/results/studio.md.
//
// Now: the views through the timeline's harness page (test/studio/timeline-harness.mjs, bundled from source by
// esbuild), the run read from a generated JSONL file by the built createTraceReader (../dist). Once createStudio is
// built (the shell's branch), `--studio` is meant to open its hash routes (#/threads/<id> over a 10,000-message SQLite
// thread, #/runs/<runId>, a live run on a createAgentServer): not wired yet, see bench/README.md.
//
//   npm run build && node bench/studio.mjs [--reps 5] [--no-write]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import { measureMainThread } from './common.mjs';
import { writeTrace } from './studio-trace.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const reps = Number(args[args.indexOf('--reps') + 1] ?? 5) || 5;
const write = !args.includes('--no-write');
const { createTraceReader } = await import(join(root, 'dist/src/studio/index.js')).catch(() => {
  console.error('bench/studio.mjs needs the built package: npm run build');
  process.exit(1);
});

const dir = mkdtempSync(join(tmpdir(), 'cubepi-bench-studio-'));
const traceFile = join(dir, 'traces.jsonl');
writeTrace(traceFile, 2_000);
const reader = createTraceReader(traceFile);
const indexStart = performance.now();
const trace = await reader.run('run_bench');
const indexMs = performance.now() - indexStart;
const eventSpans = trace.spans.length - 2_000;

const bundle = await esbuild.build({
  entryPoints: [join(root, 'test/studio/timeline-harness.mjs')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  tsconfig: join(root, 'page/tsconfig.json'),
  logLevel: 'warning',
});
const js = bundle.outputFiles[0].text;
const { readFileSync } = await import('node:fs');
const css = readFileSync(join(root, 'page/studio/timeline.css'), 'utf8');
const traceJson = JSON.stringify(trace);
// The longtask observer is registered before anything else runs, so every task from navigation on is seen.
const HTML =
  '<!doctype html><meta charset="utf-8"><link rel="stylesheet" href="/timeline.css">' +
  '<script>window.longtasks=[];new PerformanceObserver((l)=>{for(const e of l.getEntries())window.longtasks.push(e.duration)}).observe({type:"longtask",buffered:true});</script>' +
  '<section id="timeline"></section><script type="module" src="/harness.js"></script>';
const http = createServer((request, response) => {
  const [type, body] =
    request.url === '/harness.js'
      ? ['text/javascript', js]
      : request.url === '/timeline.css'
        ? ['text/css', css]
        : request.url === '/trace.json'
          ? ['application/json', traceJson]
          : ['text/html', HTML];
  response.writeHead(200, { 'content-type': type });
  response.end(body);
});
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${http.address().port}`;

const context = await chromium.launchPersistentContext(join(dir, 'chromium'), {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

/** One page: navigation → `work` in the page done; main-thread task and script time (ms), the longest task. */
async function measure(work) {
  const page = await context.newPage();
  let wall = 0;
  const { taskMs, scriptMs, longtasks, result } = await measureMainThread(
    context,
    page,
    async () => {
      wall = performance.now();
      await page.goto(`${origin}/`);
      await page.waitForFunction('window.ready === true');
      return page.evaluate(work);
    },
    'window.longtasks',
  );
  await page.close();
  return {
    wallMs: performance.now() - wall,
    taskMs,
    scriptMs,
    longestTaskMs: Math.max(0, ...longtasks),
    longtasks: longtasks.length,
    ...result,
  };
}

const showRun = async () => {
  const trace = await (await fetch('/trace.json')).json();
  const t0 = performance.now();
  window.studio.mountTimeline(document.querySelector('#timeline')).show(trace.spans);
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  return { rows: document.querySelectorAll('.tl-row').length, showMs: performance.now() - t0 };
};

// ~1,000 deltas/s for 3 s (16 per 16 ms tick), a tool call every 100 deltas, into live() (spansFromEvents →
// timeline.show on every span change); the page keeps the text from the deltas and compares it with the answer.
const streamRun = async () => {
  const live = window.studio.live(document.querySelector('#timeline'));
  const runId = 'r';
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  const msg = (text) => ({ role: 'assistant', content: [{ type: 'text', text }], stopReason: 'stop', usage, provider: 'faux', model: 'faux', timestamp: 0 });
  live.push({ type: 'agent_start', runId });
  live.push({ type: 'turn_start', runId, turnIndex: 0 });
  live.push({ type: 'model_attempt', runId, turnIndex: 0, invocationId: 'r.0', attemptId: 'r.0.1', attempt: 1, provider: 'faux', model: 'faux' });
  let answer = '';
  let seen = '';
  const total = 3_000;
  let sent = 0;
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      for (let i = 0; i < 16 && sent < total; i++, sent++) {
        const delta = `w${sent} `;
        answer += delta;
        const event = { type: 'message_update', runId, message: msg(answer), streamEvent: { type: 'text_delta', contentIndex: 0, delta } };
        seen += event.streamEvent.delta;
        live.push(event);
        if (sent % 100 === 99) {
          live.push({ type: 'tool_execution_start', runId, toolCallId: `c${sent}`, toolName: 'echo', args: {} });
          live.push({ type: 'tool_execution_end', runId, toolCallId: `c${sent}`, toolName: 'echo', result: { content: [] }, isError: false, outcome: 'ok' });
        }
      }
      if (sent >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 16);
  });
  live.push({ type: 'message_end', runId, message: msg(answer) });
  live.push({ type: 'turn_end', runId, turnIndex: 0, message: msg(answer), toolResults: [] });
  live.push({ type: 'agent_end', runId, messages: [msg(answer)], outcome: 'completed', usage });
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  return { deltas: sent, textMatches: seen === answer, rows: document.querySelectorAll('.tl-row').length, changes: live.changes() };
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const shows = [];
const streams = [];
for (let i = 0; i < reps; i++) {
  shows.push(await measure(showRun));
  streams.push(await measure(streamRun));
}
await context.close();
http.close();
rmSync(dir, { recursive: true, force: true });

const row = (name, runs, key) => `| ${name} | ${median(runs.map((r) => r[key])).toFixed(1)} | ${Math.max(...runs.map((r) => r[key])).toFixed(1)} |`;
const report = [
  '# Studio: main-thread cost in Chromium (bench/studio.mjs)',
  '',
  `${new Date().toISOString()}, ${reps} repetitions, headless Chromium (/usr/bin/chromium), Node ${process.version}.`,
  `Run: 2,000 spans from a JSONL file (+${eventSpans} bars made of span events), indexed by createTraceReader in ${indexMs.toFixed(1)} ms (Node).`,
  'Views through the timeline harness page (test/studio/timeline-harness.mjs); the studio shell\'s routes are not measured yet.',
  '',
  '## A 2,000-span run: navigation → timeline rows present',
  '',
  '| ms | median | max |',
  '| --- | ---: | ---: |',
  row('main-thread task time (CDP TaskDuration)', shows, 'taskMs'),
  row('script time (CDP ScriptDuration)', shows, 'scriptMs'),
  row('show(spans) → next frame (in page)', shows, 'showMs'),
  row('longest task (longtask observer; 0: none over 50 ms)', shows, 'longestTaskMs'),
  '',
  `Rows shown: ${shows[0].rows}.`,
  '',
  '## A live run streaming ~1,000 deltas/s for 3 s into the timeline',
  '',
  '| ms | median | max |',
  '| --- | ---: | ---: |',
  row('main-thread task time (over ~3.2 s of streaming)', streams, 'taskMs'),
  row('script time', streams, 'scriptMs'),
  row('longest task (0: none over 50 ms)', streams, 'longestTaskMs'),
  '',
  `Deltas: ${streams[0].deltas}; the text kept from them equals the final answer in every repetition: ${streams.every((s) => s.textMatches)}; ` +
    `timeline updates (span changes): ${streams[0].changes}; rows at the end: ${streams[0].rows}.`,
  '',
];
console.log(report.join('\n'));
if (write) {
  mkdirSync(join(root, 'bench/results'), { recursive: true });
  writeFileSync(join(root, 'bench/results/studio.md'), report.join('\n'));
}
