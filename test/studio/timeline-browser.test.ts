// The studio's run views in a headless Chromium: test/studio/timeline-harness.mjs bundled by esbuild with
// page/studio/timeline.css, showing the spans of the real trace of test/studio/trace-fixture.ts read by
// createTraceReader. The waterfall's rows, order and bar geometry, the growth of an open span, the tokens chart's
// bars and totals, the chain's rows; screenshots in test-output/studio/.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTraceReader, type StudioRunTrace, type StudioSpan } from 'cubepi/studio';
import type { AgentStartEvent } from 'cubepi';
import { haveChromium, launchChromium, requireChromium } from '../chromium.js';
import { writeFixtureTrace, type TraceFixture } from './trace-fixture.js';

// The page functions below run in Chromium; the project's tsconfig has no DOM library (Node code), so the little of
// the DOM they touch is declared here, loosely.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const window: any;
declare const requestAnimationFrame: (callback: (time: number) => void) => number;
type HTMLElement = any;

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '../..');
const shots = join(root, 'test-output/studio');

requireChromium('the studio timeline browser test');

const HTML =
  '<!doctype html><meta charset="utf-8"><link rel="stylesheet" href="/timeline.css">' +
  '<style>body{margin:16px;font-family:system-ui;width:1100px}section{margin-bottom:16px}</style>' +
  '<section id="timeline"></section><section id="usage" style="width:480px"></section>' +
  '<section id="chain" style="width:560px"></section><script type="module" src="/harness.js"></script>';

interface Box {
  readonly id: string;
  readonly label: string;
  readonly left: number;
  readonly right: number;
  readonly depth: number;
}

describe.skipIf(!haveChromium)('the studio run views in a headless Chromium', () => {
  let http: Server;
  let origin = '';
  let context: BrowserContext;
  let dir = '';
  let fixture: TraceFixture;
  let first: StudioRunTrace;
  let second: StudioRunTrace;

  beforeAll(async () => {
    fixture = await writeFixtureTrace();
    const reader = createTraceReader(fixture.file);
    first = (await reader.run(fixture.first))!;
    second = (await reader.run(fixture.second))!;
    const bundle = await esbuild.build({
      entryPoints: [join(here, 'timeline-harness.mjs')],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      tsconfig: join(root, 'page/tsconfig.json'),
      logLevel: 'warning',
    });
    const js = bundle.outputFiles[0]!.text;
    const css = readFileSync(join(root, 'page/studio/timeline.css'), 'utf8');
    http = createServer((request, response) => {
      const [type, body] =
        request.url === '/harness.js'
          ? ['text/javascript', js]
          : request.url === '/timeline.css'
            ? ['text/css', css]
            : ['text/html', HTML];
      response.writeHead(200, { 'content-type': type });
      response.end(body);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'cubepi-studio-browser-'));
    mkdirSync(shots, { recursive: true });
    context = await launchChromium(join(dir, 'chromium'));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    http?.closeAllConnections();
    await new Promise<void>((resolve) => (http ? http.close(() => resolve()) : resolve()));
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  async function open(): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    await page.setViewportSize({ width: 1140, height: 900 });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.goto(`${origin}/`);
    await page.waitForFunction('window.ready === true');
    return { page, problems };
  }

  /** Each row's bar, as laid out: its span id, label text, left and right edges (px), depth. */
  const boxes = (page: Page): Promise<Box[]> =>
    page.evaluate(() =>
      [...document.querySelectorAll('#timeline .tl-row')].map((row: HTMLElement) => {
        const bar = row.querySelector('.tl-bar')!.getBoundingClientRect();
        return {
          id: row.dataset.id!,
          label: row.querySelector('.tl-name')!.textContent!,
          left: bar.left,
          right: bar.right,
          depth: Number(row.style.getPropertyValue('--depth')),
        };
      }),
    );

  it('draws the run as a waterfall: rows in tree order, children inside their parents, errors and retries marked', async () => {
    const { page, problems } = await open();
    await page.evaluate((spans) => {
      const w = window as unknown as {
        studio: { mountTimeline(el: HTMLElement): { show(s: unknown): void } };
        tl: unknown;
      };
      w.tl = w.studio.mountTimeline(document.querySelector('#timeline'));
      (w.tl as { show(s: unknown): void }).show(spans);
    }, first.spans as StudioSpan[]);
    const rows = await boxes(page);
    const lines = rows.map((r) => `${'  '.repeat(r.depth)}${r.label}`);
    // The SDK stamps span starts to the millisecond and events finer, so a hook event can sort either side of a call
    // that started within the same millisecond: the hooks are checked to be in their turn, the rest in exact order.
    expect(lines.filter((l) => !l.includes('Analytics'))).toEqual([
      'invoke_agent',
      '  turn 0',
      '    chat fauxrate_limited',
      '    chat faux · attempt 2retry',
      '    echo',
      '    echo',
      '  turn 1',
      '    chat faux',
    ]);
    const turnOne = lines.indexOf('  turn 1');
    expect(lines.map((l, i) => [l, i < turnOne]).filter(([l]) => String(l).includes('Analytics'))).toEqual([
      ['    transformSystemPrompt · Analyticserror', true],
      ['    transformSystemPrompt · Analyticserror', false],
    ]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const runSpan = first.spans[0]!;
    const px = (rows[0]!.right - rows[0]!.left) / runSpan.durationMs!;
    for (const span of first.spans) {
      if (span.parentSpanId === null || span.durationMs === 0) continue;
      const child = byId.get(span.spanId)!;
      const parent = byId.get(span.parentSpanId)!;
      // Inside the parent, to the millisecond the start times are recorded to.
      expect(child.left).toBeGreaterThanOrEqual(parent.left - px - 0.5);
      expect(child.right).toBeLessThanOrEqual(parent.right + px + 0.5);
    }
    // The run's bar spans the axis; the second turn starts after the first ends.
    const run = rows[0]!;
    const [turn0, turn1] = rows.filter((r) => r.label.startsWith('turn'));
    expect(run.right - run.left).toBeGreaterThan(500);
    expect(turn1!.left).toBeGreaterThanOrEqual(turn0!.right - px - 0.5);
    const classes = await page.$$eval('#timeline .tl-row', (els) => els.map((el) => el.className));
    const at = (label: string) => classes[lines.indexOf(label)]!;
    expect(at('    chat fauxrate_limited')).toContain('tl-error');
    expect(at('    chat fauxrate_limited')).toContain('tl-k-model');
    expect(at('    transformSystemPrompt · Analyticserror')).toContain('tl-instant');
    expect(at('    echo')).toContain('tl-k-tool');
    const durations = await page.$$eval('#timeline .tl-row .tl-dur', (els) => els.map((el) => el.textContent));
    expect(durations[0]).toMatch(/^\d+(\.\d)? ms$/);
    const ticks = await page.$$eval('#timeline .tl-tick', (els) => els.map((el) => el.textContent));
    expect(ticks.length).toBeGreaterThanOrEqual(4);
    expect(ticks[0]).toBe('0 ms');

    // Hover shows a span's attributes; a click pins them.
    await page.hover(`#timeline .tl-row:nth-child(${lines.indexOf('    chat faux · attempt 2retry') + 1}) .tl-label`);
    await page.waitForSelector('#timeline .tl-detail:not([hidden])');
    expect(await page.textContent('#timeline .tl-detail')).toContain('gen_ai.usage.cache_read.input_tokens');
    await page.click(`#timeline .tl-row:nth-child(${lines.indexOf('    echo') + 1}) .tl-label`);
    await page.mouse.move(1000, 880);
    expect(await page.textContent('#timeline .tl-detail')).toContain('gen_ai.tool.call.id');
    expect(await page.textContent('#timeline .tl-detail')).toContain('pinned');
    await page.locator('#timeline').screenshot({ path: join(shots, 'timeline.png') });
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('a fallback and a call waiting for approval; 2,000 spans shown', async () => {
    const { page, problems } = await open();
    const labels = await page.evaluate((spans) => {
      const w = window as unknown as { studio: { mountTimeline(el: HTMLElement): { show(s: unknown): void } } };
      w.studio.mountTimeline(document.querySelector('#timeline')).show(spans);
      return [...document.querySelectorAll('#timeline .tl-row')].map((row) => row.className + ' ' + row.textContent);
    }, second.spans as StudioSpan[]);
    expect(labels[3]).toMatch(/tl-k-model.* chat small · attempt 2 · fallback from faux\/fauxfallback/);
    expect(labels[5]).toMatch(/tl-k-approval.*approval echo \(run suspended\)/);
    await page.locator('#timeline').screenshot({ path: join(shots, 'timeline-approval.png') });
    const count = await page.evaluate(() => {
      const spans = [];
      const t0 = Date.now();
      spans.push({
        spanId: 'run',
        parentSpanId: null,
        kind: 'run',
        label: 'invoke_agent',
        startMs: t0,
        durationMs: 20_000,
        status: 'ok',
        attributes: {},
      });
      for (let i = 0; i < 1_999; i++) {
        spans.push({
          spanId: `s${i}`,
          parentSpanId: 'run',
          kind: i % 3 === 0 ? 'model' : 'tool',
          label: `span ${i}`,
          startMs: t0 + i * 10,
          durationMs: 9,
          status: 'ok',
          attributes: { i },
        });
      }
      const w = window as unknown as { studio: { mountTimeline(el: HTMLElement): { show(s: unknown): void } } };
      w.studio.mountTimeline(document.querySelector('#timeline')).show(spans);
      return {
        built: document.querySelectorAll('#timeline .tl-row').length,
        height: document.querySelector('#timeline .tl-rows').getBoundingClientRect().height,
      };
    });
    // Windowed: every row has its place (2,000 × 20 px), only those in view and a margin are built.
    expect(count.height).toBe(2_000 * 20);
    expect(count.built).toBeGreaterThan(20);
    expect(count.built).toBeLessThan(200);
    await page.evaluate(() => {
      const scroller = document.querySelector('#timeline .tl-scroll');
      scroller.scrollTop = scroller.scrollHeight;
    });
    await page.waitForFunction(() => document.querySelector('#timeline [data-id="s1998"]') !== null);
    expect(await page.textContent('#timeline [data-id="s1998"] .tl-name')).toBe('span 1998');
    expect(await page.$('#timeline [data-id="s5"]')).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('an open span grows with the clock, stops when it closes, and the loop ends on destroy', async () => {
    const { page, problems } = await open();
    await page.evaluate(() => {
      const t0 = Date.now();
      const w = window as unknown as {
        studio: { mountTimeline(el: HTMLElement): { show(s: unknown): void; destroy(): void } };
        tl: { show(s: unknown): void; destroy(): void };
        t0: number;
        frames: number;
      };
      w.t0 = t0;
      w.tl = w.studio.mountTimeline(document.querySelector('#timeline'));
      w.tl.show([
        {
          spanId: 'run',
          parentSpanId: null,
          kind: 'run',
          label: 'invoke_agent',
          startMs: t0 - 1_000,
          durationMs: null,
          status: 'running',
          attributes: {},
        },
        {
          spanId: 'a',
          parentSpanId: 'run',
          kind: 'model',
          label: 'chat faux',
          startMs: t0 - 1_000,
          durationMs: 500,
          status: 'ok',
          attributes: {},
        },
        {
          spanId: 'b',
          parentSpanId: 'run',
          kind: 'tool',
          label: 'echo',
          startMs: t0 - 400,
          durationMs: null,
          status: 'running',
          attributes: {},
        },
      ]);
    });
    const width = (id: string) =>
      page.evaluate((i) => document.querySelector(`[data-id="${i}"] .tl-bar`)!.getBoundingClientRect().width, id);
    const text = (id: string) => page.textContent(`[data-id="${id}"] .tl-dur`);
    const firstModel = await width('a');
    const firstLabel = await text('b');
    // The run grows, so the closed span's bar shrinks on the axis while the open tool's label counts up.
    await page.waitForFunction(
      ([w]) => document.querySelector('[data-id="a"] .tl-bar')!.getBoundingClientRect().width < w! * 0.8,
      [firstModel],
      { timeout: 30_000 },
    );
    expect(await text('b')).not.toBe(firstLabel);
    expect(await text('b')).toMatch(/…$/);
    // Closed: the bars stop moving.
    await page.evaluate(() => {
      const w = window as unknown as { tl: { show(s: unknown): void }; t0: number };
      const t0 = w.t0;
      w.tl.show([
        {
          spanId: 'run',
          parentSpanId: null,
          kind: 'run',
          label: 'invoke_agent',
          startMs: t0 - 1_000,
          durationMs: 3_000,
          status: 'ok',
          attributes: {},
        },
        {
          spanId: 'a',
          parentSpanId: 'run',
          kind: 'model',
          label: 'chat faux',
          startMs: t0 - 1_000,
          durationMs: 500,
          status: 'ok',
          attributes: {},
        },
        {
          spanId: 'b',
          parentSpanId: 'run',
          kind: 'tool',
          label: 'echo',
          startMs: t0 - 400,
          durationMs: 2_000,
          status: 'ok',
          attributes: {},
        },
      ]);
    });
    const closed = await width('a');
    const runWidth = await width('run');
    expect(closed / runWidth).toBeCloseTo(500 / 3_000, 2);
    expect(await text('b')).toBe('2 s');
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    expect(await width('a')).toBe(closed);
    await page.evaluate(() => (window as unknown as { tl: { destroy(): void } }).tl.destroy());
    expect(await page.$$('#timeline .tl-row')).toHaveLength(0);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('live events drive the timeline through spansFromEvents: the run grows as the events come', async () => {
    const { page, problems } = await open();
    const events = fixture.events.filter((e) => e.runId === fixture.first);
    const end = events.findIndex((e) => e.type === 'agent_end');
    await page.evaluate(
      (evs) => {
        const w = window as unknown as {
          studio: { live(el: HTMLElement): { push(e: unknown): void } };
          lv: { push(e: unknown): void };
        };
        w.lv = w.studio.live(document.querySelector('#timeline'));
        for (const e of evs) w.lv.push(e);
      },
      events.slice(0, end) as unknown[],
    );
    expect(await page.$$eval('#timeline .tl-row.tl-open', (els) => els.length)).toBe(1); // the run, not ended
    await page.evaluate(
      (e) => (window as unknown as { lv: { push(e: unknown): void } }).lv.push(e),
      events[end] as unknown,
    );
    expect(await page.$$eval('#timeline .tl-row.tl-open', (els) => els.length)).toBe(0);
    const rows = await boxes(page);
    expect(rows.map((r) => r.label).sort()).toEqual(boxesFromSpans(first.spans).sort());
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('charts the tokens per model call, stacked, with the totals and the cost', async () => {
    const { page, problems } = await open();
    await page.evaluate(
      ([a, b]) => {
        const w = window as unknown as { studio: { renderUsageChart(el: HTMLElement, s: unknown): void } };
        w.studio.renderUsageChart(document.querySelector('#usage'), a);
        const other = document.createElement('section');
        other.id = 'usage2';
        document.body.append(other);
        w.studio.renderUsageChart(other, b);
      },
      [first.spans, second.spans] as StudioSpan[][],
    );
    const bars = await page.$$eval('#usage .usage-bar', (groups) =>
      groups.map((g) =>
        [...g.querySelectorAll('rect')].map((r) => ({
          segment: r.dataset.segment,
          tokens: Number(r.dataset.tokens),
          height: r.getBoundingClientRect().height,
        })),
      ),
    );
    // Two calls recorded usage (the rate-limited attempt did not): 120 + 40 cached in, 20 + 10 reasoning out; 200 in, 12 out.
    expect(bars.map((g) => g.map((s) => `${s.segment}:${s.tokens}`))).toEqual([
      ['input:120', 'cached:40', 'output:20', 'reasoning:10'],
      ['input:200', 'output:12'],
    ]);
    const tall = bars[1]![0]!;
    expect(bars[0]![0]!.height / tall.height).toBeCloseTo(120 / 200, 1);
    const totals = await page.$$eval('#usage [data-total]', (els) =>
      Object.fromEntries(els.map((el) => [(el as HTMLElement).dataset.total, el.querySelector('dd')!.textContent])),
    );
    expect(totals).toEqual({
      calls: '2',
      input: '360',
      cached: '40',
      output: '42',
      reasoning: '10',
      cost: '$0.0034',
    });
    expect(await page.textContent('#usage2 [data-total="cost"] dd')).toBe('not recorded');
    await page.locator('#usage').screenshot({ path: join(shots, 'usage.png') });
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('shows the middleware chain per hook in firing order, with phase, order and version; null: not recorded', async () => {
    const { page, problems } = await open();
    const start = fixture.events.find(
      (e): e is AgentStartEvent => e.type === 'agent_start' && e.runId === fixture.first,
    )!;
    const rows = await page.evaluate(
      ([live, recorded]) => {
        const w = window as unknown as { studio: { renderChain(el: HTMLElement, c: unknown): void } };
        w.studio.renderChain(document.querySelector('#chain'), live);
        const read = [...document.querySelectorAll('#chain tr.chain-hook, #chain tr.chain-link')].map((tr) =>
          [...tr.children].map((c) => c.textContent).join('|'),
        );
        const other = document.createElement('section');
        document.body.append(other);
        w.studio.renderChain(other, recorded);
        const none = document.createElement('section');
        document.body.append(none);
        w.studio.renderChain(none, null);
        return { read, recorded: other.textContent, none: none.textContent };
      },
      [start.middleware, first.chain] as unknown[],
    );
    const phase = (hook: string) => start.middleware![hook]![0]!.phase;
    expect(rows.read).toEqual([
      'transformSystemPrompthook · 1',
      `1|Analytics|${phase('transformSystemPrompt')}|0|0.9.0`,
      'wrapModelCallwrapper · 1',
      `1|retry|${phase('wrapModelCall')}|0|—`,
      'wrapToolCallwrapper · 1',
      `1|retry|${phase('wrapToolCall')}|0|—`,
    ]);
    expect(phase('transformSystemPrompt')).toBe('context');
    // Read back from the trace: names and versions, no phase or order.
    expect(rows.recorded).toContain('1Analytics——0.9.0');
    expect(rows.none).toBe('middleware chain: not recorded');
    await page.locator('#chain').screenshot({ path: join(shots, 'chain.png') });
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});

/** The labels the timeline writes for these spans (label and badges), as the rows show them. */
function boxesFromSpans(spans: readonly StudioSpan[]): string[] {
  return spans.map((span) => {
    const a = span.attributes;
    let text = span.label;
    if (typeof a['cubepi.fallback_from'] === 'string') text += 'fallback';
    else if (typeof a['cubepi.attempt'] === 'number' && a['cubepi.attempt'] > 1) text += 'retry';
    if (span.status === 'error') text += typeof a['error.type'] === 'string' ? a['error.type'] : 'error';
    return text;
  });
}
