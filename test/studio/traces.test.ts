// The studio's trace reader over a real trace file (test/studio/trace-fixture.ts: FauxProvider agents traced through
// the OpenTelemetry SDK into JsonlSpanExporter): runs by thread, a run's spans as timeline bars (kinds, parents,
// labels, tokens, the middleware chain), a partly written last line, and a file that changed.
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filter, lastValueFrom, from as fromArray } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTraceReader, type StudioSpan } from 'cubepi/studio';
import { spansFromEvents } from '../../page/studio/live-spans.js';
import { writeFixtureTrace, type TraceFixture } from './trace-fixture.js';

let fixture: TraceFixture;
beforeAll(async () => {
  fixture = await writeFixtureTrace();
});

/** `label` rows indented by depth, in the order given (parents before children). */
function tree(spans: readonly StudioSpan[]): string[] {
  const depth = new Map<string, number>();
  return spans.map((span) => {
    const d = span.parentSpanId === null ? 0 : depth.get(span.parentSpanId)! + 1;
    depth.set(span.spanId, d);
    return `${'  '.repeat(d)}${span.kind} ${span.label}${span.status === 'error' ? ' !' : ''}`;
  });
}

describe('createTraceReader', () => {
  it("lists a thread's runs oldest first with outcome, tokens and cost; none for another thread or no file", async () => {
    const reader = createTraceReader(fixture.file);
    const { runs } = await reader.runs('t1');
    expect(runs.map((r) => [r.runId, r.threadId, r.outcome, r.inputTokens, r.outputTokens, r.costUsd])).toEqual([
      // input_tokens include the cached tokens: 120 + 40 + 200.
      [fixture.first, 't1', 'completed', 360, 42, 0.0034],
      [fixture.second, 't1', 'suspended', 50, 5, null],
    ]);
    expect(runs[0]!.startMs).toBeLessThan(runs[1]!.startMs);
    expect(runs[0]!.durationMs).toBeGreaterThan(0);
    expect((await reader.runs('t2')).runs).toEqual([]);
    const missing = createTraceReader(join(tmpdir(), 'cubepi-no-such-dir', 'traces.jsonl'));
    expect(await missing.runs('t1')).toEqual({ runs: [] });
    expect(await missing.run(fixture.first)).toBeUndefined();
  });

  it("a run's spans: parents first, kinds and labels, the retry and the failed hook marked, tools in parallel", async () => {
    const trace = (await createTraceReader(fixture.file).run(fixture.first))!;
    expect(trace.run.runId).toBe(fixture.first);
    expect(tree(trace.spans)).toEqual([
      'run invoke_agent',
      '  turn turn 0',
      '    hook transformSystemPrompt · Analytics !',
      '    model chat faux !',
      '    model chat faux · attempt 2',
      '    tool echo',
      '    tool echo',
      '  turn turn 1',
      '    hook transformSystemPrompt · Analytics !',
      '    model chat faux',
    ]);
    const ids = new Set(trace.spans.map((s) => s.spanId));
    expect(ids.size).toBe(trace.spans.length);
    for (const span of trace.spans.slice(1)) expect(ids.has(span.parentSpanId!)).toBe(true);
    const [run] = trace.spans;
    // The OpenTelemetry SDK anchors each span's start at `Date.now()` (whole milliseconds) and measures its duration
    // with `performance.now()`: two spans' clocks can differ by up to a millisecond, so containment holds within one.
    const clockSlackMs = 1;
    for (const span of trace.spans) {
      expect(span.startMs).toBeGreaterThanOrEqual(run!.startMs - clockSlackMs);
      expect(span.startMs + span.durationMs!).toBeLessThanOrEqual(run!.startMs + run!.durationMs! + clockSlackMs);
    }
    const models = trace.spans.filter((s) => s.kind === 'model');
    expect(models.map((s) => s.attributes['error.type'] ?? null)).toEqual(['rate_limited', null, null]);
    expect(models[1]!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 160,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.usage.cache_read.input_tokens': 40,
      'gen_ai.usage.reasoning.output_tokens': 10,
      'cubepi.usage.cost_usd': 0.0021,
    });
    const tools = trace.spans.filter((s) => s.kind === 'tool');
    expect(tools.map((s) => s.attributes['gen_ai.tool.call.id'])).toEqual(['c1', 'c2']);
    const hook = trace.spans.find((s) => s.kind === 'hook')!;
    expect(hook.durationMs).toBe(0);
    expect(hook.attributes).toMatchObject({ event: 'hook_error', 'cubepi.middleware.version': '0.9.0' });
    expect(trace.chain).toEqual({
      transformSystemPrompt: [{ name: 'Analytics', phase: '', order: 0, version: '0.9.0' }],
      wrapModelCall: [{ name: 'retry', phase: '', order: 0 }],
      wrapToolCall: [{ name: 'retry', phase: '', order: 0 }],
    });
  });

  it('a fallback and an approval: the attempt on the backup model, the wait until the run suspended', async () => {
    const trace = (await createTraceReader(fixture.file).run(fixture.second))!;
    expect(tree(trace.spans)).toEqual([
      'run invoke_agent',
      '  turn turn 0',
      '    model chat faux !',
      '    model chat small · attempt 2 · fallback from faux/faux',
      '    tool echo',
      '      approval approval echo (run suspended)',
    ]);
    const tool = trace.spans.find((s) => s.kind === 'tool')!;
    const approval = trace.spans.find((s) => s.kind === 'approval')!;
    expect(approval.parentSpanId).toBe(tool.spanId);
    expect(approval.startMs + approval.durationMs!).toBeCloseTo(tool.startMs + tool.durationMs!, 6);
    expect(approval.attributes['cubepi.approval.request_id']).toBe(`${fixture.second}:c3`);
    expect(trace.chain).toEqual({
      beforeToolCall: [{ name: 'ToolGuard', phase: '', order: 0 }],
      wrapModelCall: [{ name: 'fallback', phase: '', order: 0 }],
    });
    expect(await createTraceReader(fixture.file).run('run_nope')).toBeUndefined();
  });

  it('skips a partly written last line, then reads it once it is complete (only the new bytes)', async () => {
    const text = readFileSync(fixture.file, 'utf8');
    const lines = text.trimEnd().split('\n');
    const last = lines.at(-1)!;
    expect(JSON.parse(last).attributes['cubepi.run_id']).toBe(fixture.second); // the second run's span ends last
    const file = join(mkdtempSync(join(tmpdir(), 'cubepi-studio-partial-')), 'traces.jsonl');
    writeFileSync(file, `${lines.slice(0, -1).join('\n')}\n${last.slice(0, 40)}`);
    const reader = createTraceReader(file);
    expect((await reader.runs('t1')).runs.map((r) => r.runId)).toEqual([fixture.first]);
    expect(await reader.run(fixture.second)).toBeUndefined();
    appendFileSync(file, `${last.slice(40)}\n`);
    expect((await reader.runs('t1')).runs.map((r) => r.runId)).toEqual([fixture.first, fixture.second]);
    expect(tree((await reader.run(fixture.second))!.spans)).toHaveLength(6);
  });

  it('answers from its index while the file is unchanged, and reads it again when it changed', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cubepi-studio-change-')), 'traces.jsonl');
    const text = readFileSync(fixture.file, 'utf8');
    writeFileSync(file, text);
    const reader = createTraceReader(file);
    const before = await reader.run(fixture.first);
    expect(await reader.run(fixture.first)).toBe(before); // the same object: nothing was read again
    // The same file with the first run's thread renamed: a rewrite, shorter, read from the start.
    writeFileSync(file, text.replaceAll('"t1"', '"t9"').split('\n').slice(2).join('\n'));
    expect((await reader.runs('t1')).runs).toEqual([]);
    expect((await reader.runs('t9')).runs.length).toBeGreaterThan(0);
    expect(await reader.run(fixture.first)).not.toBe(before);
  });

  it('indexes a file of many runs and a 2,000-span run once per change', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cubepi-studio-big-')), 'traces.jsonl');
    const lines: string[] = [];
    const span = (
      traceId: string,
      spanId: string,
      parentSpanId: string | undefined,
      name: string,
      attributes: object,
    ) =>
      JSON.stringify({
        traceId,
        spanId,
        ...(parentSpanId === undefined ? {} : { parentSpanId }),
        name,
        kind: 0,
        startMs: 1_000 + lines.length,
        durationMs: 1,
        status: { code: 0 },
        attributes,
        events: [],
        scope: 'cubepi',
      });
    for (let r = 0; r < 300; r++) {
      const trace = `trace${r}`;
      for (let s = 0; s < 10; s++)
        lines.push(span(trace, `${trace}-s${s}`, `${trace}-root`, 'chat faux', { 'gen_ai.operation.name': 'chat' }));
      lines.push(
        span(trace, `${trace}-root`, undefined, 'invoke_agent', {
          'gen_ai.operation.name': 'invoke_agent',
          'cubepi.run_id': `r${r}`,
          'cubepi.thread_id': `th${r % 30}`,
        }),
      );
    }
    for (let s = 0; s < 2_000; s++)
      lines.push(
        span('big', `big-s${s}`, 'big-root', `execute_tool t${s}`, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': `t${s}`,
        }),
      );
    lines.push(
      span('big', 'big-root', undefined, 'invoke_agent', {
        'gen_ai.operation.name': 'invoke_agent',
        'cubepi.run_id': 'big',
        'cubepi.thread_id': 'th0',
      }),
    );
    writeFileSync(file, `${lines.join('\n')}\n`);
    const reader = createTraceReader(file);
    const started = performance.now();
    expect((await reader.runs('th0')).runs).toHaveLength(11);
    const big = (await reader.run('big'))!;
    expect(big.spans).toHaveLength(2_001);
    expect(big.spans[1]!.label).toBe('t0');
    // Not a timing assertion (bench/ measures): a sanity bound so an accidental O(n²) shows up.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('a live run (spansFromEvents over its events) has the bars its recorded trace has', async () => {
    const reader = createTraceReader(fixture.file);
    for (const runId of [fixture.first, fixture.second]) {
      const recorded = (await reader.run(runId))!.spans;
      const live = await lastValueFrom(
        fromArray(fixture.events).pipe(
          filter((e) => e.runId === runId),
          spansFromEvents(),
        ),
      );
      expect(tree(live).sort()).toEqual(tree(recorded).sort());
      const usage = (spans: readonly StudioSpan[]) =>
        spans
          .filter((s) => s.kind === 'model' || s.kind === 'run')
          .map((s) => [s.attributes['gen_ai.usage.input_tokens'], s.attributes['cubepi.usage.cost_usd']]);
      expect(usage(live).sort()).toEqual(usage(recorded).sort());
    }
  });
});
