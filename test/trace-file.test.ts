// A local trace file: JsonlSpanExporter behind the real SDK's span processors, read back by parseJsonlSpans and by the
// `cubepi trace list | show` command (the built one, as users run it).
import { execFile } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, retry } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { traceAgent } from 'cubepi/tracing';
import { JsonlSpanExporter, parseJsonlSpans } from 'cubepi/tracing/jsonl';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

beforeAll(async () => {
  // `npm test` builds first; a lone `vitest run` builds here.
  if (!existsSync(join(root, 'dist/src/cli/main.js'))) await run('npm', ['run', 'build'], { cwd: root });
}, 180_000);

const echo = defineTool({
  name: 'echo',
  description: 'Echoes',
  parameters: z.object({ text: z.string() }),
  execute: (_id, { text }) => text,
});

/** Two runs of a traced agent (the first retried once, with a tool call) written to a fresh file. */
async function writeTraces(processor: 'simple' | 'batch') {
  const file = join(mkdtempSync(join(tmpdir(), 'cubepi-traces-')), 'traces.jsonl');
  const exporter = new JsonlSpanExporter(file);
  const provider = new BasicTracerProvider({
    spanProcessors: [processor === 'simple' ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  const agent = new Agent({
    provider: new FauxProvider({
      responses: [
        fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited', errorMessage: 'slow down' }),
        fauxMessage([fauxToolCall('echo', { text: 'x' })]),
        fauxMessage('done'),
        fauxMessage('again'),
      ],
    }),
    model: 'faux',
    tools: [echo],
    middleware: [retry({ backoff: { initialMs: 1, jitter: 0 } })],
  });
  traceAgent(agent, { tracer: provider.getTracer('test'), agentName: 'helper' });
  await agent.prompt('go');
  await agent.prompt('once more');
  await provider.forceFlush();
  return file;
}

const cli = (...args: string[]) =>
  run(process.execPath, ['dist/src/cli/main.js', 'trace', ...args], { cwd: root }).catch(
    (error: { code: number; stdout: string; stderr: string }) => error,
  );

describe('JsonlSpanExporter', () => {
  it.each(['simple', 'batch'] as const)('writes one line per span, in order (%s processor)', async (processor) => {
    const spans = parseJsonlSpans(readFileSync(await writeTraces(processor), 'utf8'));
    expect(spans).toHaveLength(7 + 3); // run, 2 turns, 3 chats, 1 tool; then run, turn, chat
    const traces = new Set(spans.map((s) => s.traceId));
    expect(traces.size).toBe(2);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const chats = spans.filter((s) => s.name === 'chat faux');
    expect(chats.every((s) => byId.get(s.parentSpanId!)?.name.startsWith('turn '))).toBe(true);
    const failed = chats.find((s) => s.status.code === 2)!;
    expect(failed).toMatchObject({
      kind: 2,
      scope: 'test',
      status: { code: 2, message: 'slow down' },
      attributes: { 'error.type': 'rate_limited', 'cubepi.attempt': 1 },
    });
    expect(failed.durationMs).toBeGreaterThanOrEqual(0);
    expect(failed.startMs).toBeGreaterThan(Date.parse('2020-01-01'));
  });

  it('reports a failed write as a failed export, and refuses exports after shutdown', async () => {
    const exporter = new JsonlSpanExporter(join(tmpdir(), 'no-such-dir-cubepi', 'x', 'traces.jsonl'));
    const provider = new BasicTracerProvider();
    const span = provider.getTracer('t').startSpan('s') as unknown as Parameters<typeof exporter.export>[0][number];
    const results: { code: number; error?: Error }[] = [];
    exporter.export([span], (result) => results.push(result));
    await exporter.forceFlush();
    expect(results).toEqual([{ code: 1, error: expect.objectContaining({ code: 'ENOENT' }) }]);
    await exporter.shutdown();
    exporter.export([span], (result) => results.push(result));
    expect(results[1]).toMatchObject({ code: 1, error: { message: 'JsonlSpanExporter: export after shutdown' } });
  });

  it('parseJsonlSpans skips a last line cut off mid-write and names any other bad line', () => {
    const good = JSON.stringify({
      traceId: 't',
      spanId: 's',
      name: 'n',
      kind: 0,
      startMs: 1,
      durationMs: 2,
      status: { code: 0 },
      attributes: {},
      events: [],
      scope: 'cubepi',
    });
    expect(parseJsonlSpans(`${good}\n\n${good}\n{"traceId":"t","sp`)).toHaveLength(2);
    expect(() => parseJsonlSpans(`${good}\nnot json\n${good}\n`)).toThrow('line 2: not JSON');
    expect(() => parseJsonlSpans(`{"traceId":"t"}\n`)).toThrow(/^line 1: not a span/);
  });
});

describe('cubepi trace', () => {
  it('list: one line per trace with its start, duration, span and error counts, and its root', async () => {
    const file = await writeTraces('simple');
    const { stdout } = await cli('list', '--file', file);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TRACE\s+START\s+DURATION\s+SPANS\s+ERRORS\s+ROOT$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(
      /^[0-9a-f]{32}\s+\d{4}-\d\d-\d\dT[\d:.]+Z\s+[\d.]+ m?s\s+7\s+1\s+invoke_agent helper \(completed\)$/,
    );
    expect(lines[2]).toMatch(/\s3\s+0\s+invoke_agent helper \(completed\)$/);
  });

  it('show: the trace as a tree, each span with its start and duration and what it did', async () => {
    const file = await writeTraces('simple');
    const spans = parseJsonlSpans(readFileSync(file, 'utf8'));
    const first = spans.find(
      (s) => s.name === 'invoke_agent helper' && s.attributes['gen_ai.usage.input_tokens'] !== 0,
    )!;
    const { stdout } = await cli('show', first.traceId.slice(0, 8), '--file', file);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^trace ${first.traceId}: 7 spans, [\\d.]+ m?s, from \\d{4}-`));
    // The tree, the columns stripped to the names.
    expect(lines.slice(2).map((l) => l.replace(/\s+\+.*$/, ''))).toEqual([
      'invoke_agent helper',
      '├─ turn 0',
      '│  ├─ chat faux',
      '│  ├─ chat faux',
      '│  └─ execute_tool echo',
      '└─ turn 1',
      '   └─ chat faux',
    ]);
    expect(lines[2]).toMatch(/^invoke_agent helper\s+\+0\.0 ms\s+[\d.]+ m?s\s+completed · \d+ → \d+ tokens$/);
    expect(lines[4]).toMatch(/ERROR rate_limited: slow down$/);
    expect(lines[6]).toMatch(/execute_tool echo\s+\+[\d.]+ m?s\s+[\d.]+ m?s\s+ok$/);
  });

  it('fails clearly: an unknown trace, a missing file, bad usage', async () => {
    const file = await writeTraces('simple');
    const unknown = await cli('show', 'ffff', '--file', file);
    expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining('no trace in') });
    const missing = await cli('list', '--file', join(tmpdir(), 'missing-cubepi-traces.jsonl'));
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('ENOENT') });
    const usage = await cli('show');
    expect(usage).toMatchObject({ code: 2, stderr: expect.stringContaining('Usage: cubepi trace list') });
    appendFileSync(file, 'garbage\n');
    expect(await cli('list', '--file', file)).toMatchObject({ code: 1, stderr: expect.stringContaining('not JSON') });
  });
});
