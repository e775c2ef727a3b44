/**
 * `cubepi trace list | show ID`: reads a JSONL trace file (written by `JsonlSpanExporter`) as traces, and a trace as a
 * tree with timings.
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseJsonlSpans, type JsonlSpanRecord } from '../tracing/jsonl.js';
import type { Command } from './command.js';

export const TRACE_HELP = `Usage: cubepi trace list [--file <path>]
       cubepi trace show <trace id, or a unique prefix> [--file <path>]

Reads a trace file written by JsonlSpanExporter (cubepi/tracing/jsonl): list shows one line per trace (the newest
last), show prints one trace as a tree of spans with their start (from the trace's start) and duration.

Options:
  --file <path>  the JSONL file (default: traces.jsonl)
  -h, --help     show this help`;

/** Output streams, injected so the command is a plain function. */
interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** Runs `cubepi trace …` (`args` after `trace`); resolves with the exit code. */
export async function traceCommand(args: readonly string[], io: Io): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        file: { type: 'string', default: 'traces.jsonl' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    io.err(`cubepi trace: ${error instanceof Error ? error.message : String(error)}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [action, id, ...rest] = positionals;
  if (values.help) {
    io.out(`${TRACE_HELP}\n`);
    return 0;
  }
  if (!((action === 'list' && id === undefined) || (action === 'show' && id !== undefined)) || rest.length > 0) {
    io.err(`${TRACE_HELP}\n`);
    return 2;
  }
  let spans: JsonlSpanRecord[];
  try {
    spans = parseJsonlSpans(await readFile(values.file, 'utf8'));
  } catch (error) {
    io.err(`cubepi trace: ${values.file}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const traces = groupTraces(spans);
  if (action === 'list') {
    io.out(listTraces(traces));
    return 0;
  }
  const matches = [...traces.keys()].filter((traceId) => traceId.startsWith(id!));
  if (matches.length !== 1) {
    io.err(
      `cubepi trace: ${matches.length === 0 ? 'no trace' : `${matches.length} traces`} in ${values.file} ` +
        `with an id starting ${JSON.stringify(id)}\n`,
    );
    return 1;
  }
  io.out(showTrace(matches[0]!, traces.get(matches[0]!)!));
  return 0;
}

/** Spans by trace, traces in the order of their first span's start. */
function groupTraces(spans: readonly JsonlSpanRecord[]): Map<string, JsonlSpanRecord[]> {
  const traces = new Map<string, JsonlSpanRecord[]>();
  for (const span of [...spans].sort((a, b) => a.startMs - b.startMs)) {
    const list = traces.get(span.traceId);
    if (list === undefined) traces.set(span.traceId, [span]);
    else list.push(span);
  }
  return traces;
}

/** The spans of one trace whose parent is not in it (usually one: the run). */
function rootsOf(spans: readonly JsonlSpanRecord[]): JsonlSpanRecord[] {
  const ids = new Set(spans.map((s) => s.spanId));
  return spans.filter((s) => s.parentSpanId === undefined || !ids.has(s.parentSpanId));
}

/** The trace's start and end, over all its spans. */
function extent(spans: readonly JsonlSpanRecord[]): { start: number; end: number } {
  let start = Infinity;
  let end = -Infinity;
  for (const s of spans) {
    start = Math.min(start, s.startMs);
    end = Math.max(end, s.startMs + s.durationMs);
  }
  return { start, end };
}

function listTraces(traces: ReadonlyMap<string, readonly JsonlSpanRecord[]>): string {
  const rows = [['TRACE', 'START', 'DURATION', 'SPANS', 'ERRORS', 'ROOT']];
  for (const [traceId, spans] of traces) {
    const { start, end } = extent(spans);
    const root = rootsOf(spans)[0]!;
    const outcome = root.attributes['cubepi.run.outcome'];
    rows.push([
      traceId,
      new Date(start).toISOString(),
      formatMs(end - start),
      String(spans.length),
      String(spans.filter((s) => s.status.code === 2).length),
      `${root.name}${typeof outcome === 'string' ? ` (${outcome})` : ''}`,
    ]);
  }
  return table(rows, [false, false, true, true, true, false]);
}

function showTrace(traceId: string, spans: readonly JsonlSpanRecord[]): string {
  const { start, end } = extent(spans);
  const children = new Map<string, JsonlSpanRecord[]>();
  for (const span of spans) {
    if (span.parentSpanId === undefined) continue;
    const list = children.get(span.parentSpanId);
    if (list === undefined) children.set(span.parentSpanId, [span]);
    else list.push(span);
  }
  const rows: string[][] = [['SPAN', 'START', 'DURATION', '']];
  const visit = (span: JsonlSpanRecord, prefix: string, last: boolean, depth: number): void => {
    const branch = depth === 0 ? '' : last ? '└─ ' : '├─ ';
    rows.push([
      `${prefix}${branch}${span.name}`,
      `+${formatMs(span.startMs - start)}`,
      formatMs(span.durationMs),
      details(span),
    ]);
    const kids = children.get(span.spanId) ?? [];
    kids.forEach((kid, i) =>
      visit(kid, depth === 0 ? '' : `${prefix}${last ? '   ' : '│  '}`, i === kids.length - 1, depth + 1),
    );
  };
  for (const root of rootsOf(spans)) visit(root, '', true, 0);
  return `trace ${traceId}: ${spans.length} spans, ${formatMs(end - start)}, from ${new Date(start).toISOString()}\n${table(rows, [false, true, true, false])}`;
}

/** What tells a span's outcome at a glance: outcome, model, tokens, error. */
function details(span: JsonlSpanRecord): string {
  const a = span.attributes;
  const parts: string[] = [];
  const outcome = a['cubepi.run.outcome'] ?? a['cubepi.tool.outcome'];
  if (typeof outcome === 'string') parts.push(outcome);
  if (typeof a['gen_ai.response.model'] === 'string' && a['gen_ai.operation.name'] === 'chat') {
    parts.push(String(a['gen_ai.response.model']));
  }
  if (typeof a['gen_ai.usage.input_tokens'] === 'number' && typeof a['gen_ai.usage.output_tokens'] === 'number') {
    parts.push(`${a['gen_ai.usage.input_tokens']} → ${a['gen_ai.usage.output_tokens']} tokens`);
  }
  if (typeof a['cubepi.time_to_first_chunk_ms'] === 'number') {
    parts.push(`first chunk ${formatMs(a['cubepi.time_to_first_chunk_ms'])}`);
  }
  if (span.status.code === 2) {
    const type = a['error.type'];
    parts.push(
      `ERROR${typeof type === 'string' ? ` ${type}` : ''}${span.status.message ? `: ${span.status.message}` : ''}`,
    );
  }
  return parts.join(' · ');
}

function formatMs(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(1)} ms`;
}

/** Rows as aligned columns (`right[i]`: right-aligned), two spaces apart, trailing spaces trimmed. */
function table(rows: readonly (readonly string[])[], right: readonly boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => [...(row[i] ?? '')].length)));
  return rows
    .map(
      (row) =>
        row
          .map((cell, i) => {
            const pad = ' '.repeat(widths[i]! - [...cell].length);
            return right[i] ? pad + cell : cell + pad;
          })
          .join('  ')
          .trimEnd() + '\n',
    )
    .join('');
}

/** `cubepi trace …` as a dispatcher {@link Command}. */
export const traceCli: Command = (args, context) =>
  traceCommand(args, {
    out: (text) => void context.stdout.write(text),
    err: (text) => void context.stderr.write(text),
  });
