/**
 * The studio's reading of a JSONL trace file: spans grouped into runs, as the timeline shows them.
 * @module
 */
import { open, stat } from 'node:fs/promises';
import { parseJsonlSpans, type JsonlSpanRecord } from '../tracing/jsonl.js';
import type { StudioRunList, StudioRunSummary, StudioRunTrace, StudioSpan } from './api.js';
import { eventSpans, parseChainText, spanKindOf, spanLabelOf } from './span-shapes.js';

/** Runs read from a trace file, read again when the file changed. */
export interface TraceReader {
  /** The thread's runs found in the file, oldest first (none for a missing file). */
  runs(threadId: string): Promise<StudioRunList>;
  /** One run's spans, parents before children; `undefined` when the file has no such run. */
  run(runId: string): Promise<StudioRunTrace | undefined>;
}

/** What is known of the file once read: its spans by trace, its runs, and how far it was read. */
interface FileIndex {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  /** Bytes read up to the last newline: a partly written last line is read again next time. */
  readonly offset: number;
  readonly byTrace: Map<string, JsonlSpanRecord[]>;
  /** The `invoke_agent` span of each run (the last one written, should a run id repeat). */
  readonly runSpans: Map<string, JsonlSpanRecord>;
  /** Computed on first use, for this state of the file. */
  threads: Map<string, StudioRunSummary[]> | undefined;
  readonly traces: Map<string, StudioRunTrace>;
  readonly children: Map<string, Map<string, JsonlSpanRecord[]>>;
}

const EMPTY: FileIndex = freshIndex(-1, 0, 0, 0);

function freshIndex(ino: number, size: number, mtimeMs: number, offset: number): FileIndex {
  return {
    ino,
    size,
    mtimeMs,
    offset,
    byTrace: new Map(),
    runSpans: new Map(),
    threads: undefined,
    traces: new Map(),
    children: new Map(),
  };
}

/**
 * A {@link TraceReader} over the JSONL file at `path` (written by `JsonlSpanExporter`). Each call looks at the file's
 * size and mtime: unchanged, the index made at the last change answers; grown, only the new bytes are read; shrunk
 * or replaced (another inode), it is read again from the start. A partly written last line is left for the next
 * read, and a line that is not a span is skipped. A run is an `invoke_agent` span (`cubepi.run_id`) with every span
 * under it (a child run started by a tool call included), its thread `cubepi.thread_id` (or
 * `gen_ai.conversation.id`); only finished spans are in the file, so a run shows up once its span ended.
 *
 * @example
 * const traces = createTraceReader('traces.jsonl');
 * const { runs } = await traces.runs('support-42');
 * const trace = await traces.run(runs.at(-1)!.runId); // trace.spans: the timeline's bars
 */
export function createTraceReader(path: string): TraceReader {
  let index: FileIndex = EMPTY;
  let refreshing: Promise<FileIndex> | undefined;

  const current = (): Promise<FileIndex> => {
    // One look at the file at a time: callers during a read share it.
    refreshing ??= refresh(path, index).then(
      (next) => {
        index = next;
        refreshing = undefined;
        return next;
      },
      (error: unknown) => {
        refreshing = undefined;
        throw error;
      },
    );
    return refreshing;
  };

  return {
    async runs(threadId) {
      const file = await current();
      return { runs: threadsOf(file).get(threadId) ?? [] };
    },
    async run(runId) {
      const file = await current();
      let trace = file.traces.get(runId);
      if (trace === undefined) {
        const span = file.runSpans.get(runId);
        if (span === undefined) return undefined;
        trace = runTrace(file, span);
        file.traces.set(runId, trace);
      }
      return trace;
    },
  };
}

async function refresh(path: string, index: FileIndex): Promise<FileIndex> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY;
    throw error;
  }
  if (info.ino === index.ino && info.size === index.size && info.mtimeMs === index.mtimeMs) return index;
  const appending = info.ino === index.ino && info.size >= index.offset && index.offset > 0;
  const from = appending ? index.offset : 0;
  const bytes = await readFrom(path, from, info.size);
  const end = bytes.lastIndexOf(10);
  const complete = end < 0 ? '' : bytes.subarray(0, end + 1).toString('utf8');
  // A new index object per change: what a caller holds stays a consistent view of one state of the file.
  const next = freshIndex(info.ino, info.size, info.mtimeMs, from + end + 1);
  if (appending) {
    for (const [traceId, spans] of index.byTrace) next.byTrace.set(traceId, spans.slice());
    for (const [runId, span] of index.runSpans) next.runSpans.set(runId, span);
  }
  for (const record of tolerantParse(complete)) add(next, record);
  return next;
}

async function readFrom(path: string, from: number, to: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(Math.max(0, to - from));
    let read = 0;
    while (read < buffer.length) {
      const { bytesRead } = await handle.read(buffer, read, buffer.length - read, from + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read);
  } finally {
    await handle.close();
  }
}

/** The file's spans; a line that is not one (a crash left half a line in the middle) is skipped, not fatal. */
function tolerantParse(text: string): JsonlSpanRecord[] {
  try {
    return parseJsonlSpans(text);
  } catch {
    const out: JsonlSpanRecord[] = [];
    for (const line of text.split('\n')) {
      try {
        out.push(...parseJsonlSpans(line));
      } catch {
        // not a span: skipped
      }
    }
    return out;
  }
}

function add(index: FileIndex, record: JsonlSpanRecord): void {
  let spans = index.byTrace.get(record.traceId);
  if (spans === undefined) index.byTrace.set(record.traceId, (spans = []));
  spans.push(record);
  const runId = record.attributes['cubepi.run_id'];
  if (typeof runId === 'string' && spanKindOf(record.name, record.attributes) === 'run') {
    index.runSpans.set(runId, record);
  }
}

function threadsOf(index: FileIndex): Map<string, StudioRunSummary[]> {
  if (index.threads !== undefined) return index.threads;
  const threads = new Map<string, StudioRunSummary[]>();
  for (const [runId, span] of index.runSpans) {
    const summary = summaryOf(index, runId, span);
    if (summary.threadId === null) continue;
    let runs = threads.get(summary.threadId);
    if (runs === undefined) threads.set(summary.threadId, (runs = []));
    runs.push(summary);
  }
  for (const runs of threads.values()) runs.sort((a, b) => a.startMs - b.startMs);
  index.threads = threads;
  return threads;
}

function threadOf(attributes: Readonly<Record<string, unknown>>): string | null {
  const thread = attributes['cubepi.thread_id'] ?? attributes['gen_ai.conversation.id'];
  return typeof thread === 'string' ? thread : null;
}

const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

function summaryOf(index: FileIndex, runId: string, span: JsonlSpanRecord): StudioRunSummary {
  const a = span.attributes;
  let input = num(a['gen_ai.usage.input_tokens']);
  let output = num(a['gen_ai.usage.output_tokens']);
  let cost = num(a['cubepi.usage.cost_usd']) ?? null;
  if (input === undefined || output === undefined) {
    // A run without agent_end's usage (cancelled, detached): the sum of its model calls.
    input = 0;
    output = 0;
    for (const record of descendants(index, span)) {
      if (spanKindOf(record.name, record.attributes) !== 'model') continue;
      input += num(record.attributes['gen_ai.usage.input_tokens']) ?? 0;
      output += num(record.attributes['gen_ai.usage.output_tokens']) ?? 0;
      const c = num(record.attributes['cubepi.usage.cost_usd']);
      if (c !== undefined) cost = (cost ?? 0) + c;
    }
  }
  const outcome = a['cubepi.run.outcome'];
  return {
    runId,
    traceId: span.traceId,
    threadId: threadOf(a),
    startMs: span.startMs,
    durationMs: span.durationMs,
    outcome: typeof outcome === 'string' ? outcome : null,
    inputTokens: input,
    outputTokens: output,
    costUsd: cost,
  };
}

/** The spans of `span`'s trace by parent id (made once per trace and state of the file). */
function childrenOf(index: FileIndex, traceId: string): Map<string, JsonlSpanRecord[]> {
  let children = index.children.get(traceId);
  if (children === undefined) {
    children = new Map();
    for (const record of index.byTrace.get(traceId) ?? []) {
      if (record.parentSpanId === undefined) continue;
      let siblings = children.get(record.parentSpanId);
      if (siblings === undefined) children.set(record.parentSpanId, (siblings = []));
      siblings.push(record);
    }
    for (const siblings of children.values()) siblings.sort((a, b) => a.startMs - b.startMs);
    index.children.set(traceId, children);
  }
  return children;
}

/** `span` and everything under it, parents first, siblings by start. */
function descendants(index: FileIndex, span: JsonlSpanRecord): JsonlSpanRecord[] {
  const children = childrenOf(index, span.traceId);
  const out: JsonlSpanRecord[] = [];
  const stack = [span];
  while (stack.length > 0) {
    const record = stack.pop()!;
    out.push(record);
    const below = children.get(record.spanId);
    if (below !== undefined) for (let i = below.length - 1; i >= 0; i--) stack.push(below[i]!);
  }
  return out;
}

function runTrace(index: FileIndex, span: JsonlSpanRecord): StudioRunTrace {
  const spans: StudioSpan[] = [];
  for (const record of descendants(index, span)) {
    const bar = toStudioSpan(record, record === span ? null : (record.parentSpanId ?? null));
    spans.push(bar);
    if (record.events.length > 0) spans.push(...eventSpans(bar, record.events));
  }
  return Object.freeze({
    run: summaryOf(index, String(span.attributes['cubepi.run_id']), span),
    spans: Object.freeze(spans),
    chain: parseChainText(span.attributes['cubepi.middleware.chain']),
  });
}

function toStudioSpan(record: JsonlSpanRecord, parentSpanId: string | null): StudioSpan {
  const kind = spanKindOf(record.name, record.attributes);
  return {
    spanId: record.spanId,
    // The run's own parent (a server span, a parent run's tool call) is not part of this run's timeline.
    parentSpanId,
    kind,
    label: spanLabelOf(kind, record.name, record.attributes),
    startMs: record.startMs,
    durationMs: record.durationMs,
    status: record.status.code === 2 ? 'error' : 'ok',
    attributes: record.attributes,
  };
}
