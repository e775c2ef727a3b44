/**
 * `cubepi/tracing/jsonl`: a span exporter writing one JSON line per span to a local file, and its reader, for local
 * use (`cubepi trace list | show ID` reads the file as a tree with timings). Node.js only (it writes with `node:fs`).
 * @module
 */
import { appendFile } from 'node:fs/promises';
import type { Attributes, HrTime, SpanContext, SpanStatus } from '@opentelemetry/api';

/** What {@link JsonlSpanExporter} reads of a span: a subset of the OpenTelemetry SDK's `ReadableSpan`. */
export interface ExportableSpan {
  readonly name: string;
  readonly kind: number;
  spanContext(): SpanContext;
  readonly parentSpanContext?: SpanContext | undefined;
  readonly startTime: HrTime;
  readonly duration: HrTime;
  readonly status: SpanStatus;
  readonly attributes: Attributes;
  readonly events: readonly { readonly name: string; readonly time: HrTime; readonly attributes?: Attributes }[];
  readonly instrumentationScope: { readonly name: string };
  readonly resource?: { readonly attributes: Attributes } | undefined;
}

/** The result an exporter reports (the SDK's `ExportResult`: code 0 success, 1 failure). */
export interface JsonlExportResult {
  readonly code: 0 | 1;
  readonly error?: Error;
}

/** One line of a JSONL trace file: a finished span. Times are milliseconds (`startMs` since the Unix epoch). */
export interface JsonlSpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  /** The parent span, when it has one (it may be in another process's file). */
  readonly parentSpanId?: string;
  readonly name: string;
  /** The OpenTelemetry `SpanKind`: 0 internal, 1 server, 2 client, 3 producer, 4 consumer. */
  readonly kind: number;
  readonly startMs: number;
  readonly durationMs: number;
  /** The OpenTelemetry status: code 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message?: string };
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly events: readonly {
    readonly name: string;
    readonly timeMs: number;
    readonly attributes?: Readonly<Record<string, unknown>>;
  }[];
  /** The instrumentation scope (`cubepi` for cubepi's spans). */
  readonly scope: string;
  /** The resource's `service.name`, when it has one. */
  readonly service?: string;
}

const ms = ([seconds, nanos]: HrTime): number => seconds * 1e3 + nanos / 1e6;

/** A span as a {@link JsonlSpanRecord}. */
export function toJsonlRecord(span: ExportableSpan): JsonlSpanRecord {
  const { traceId, spanId } = span.spanContext();
  const service = span.resource?.attributes['service.name'];
  return {
    traceId,
    spanId,
    ...(span.parentSpanContext !== undefined ? { parentSpanId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    kind: span.kind,
    startMs: ms(span.startTime),
    durationMs: ms(span.duration),
    status: span.status.message === undefined ? { code: span.status.code } : { ...span.status },
    attributes: span.attributes,
    events: span.events.map((event) => ({
      name: event.name,
      timeMs: ms(event.time),
      ...(event.attributes !== undefined ? { attributes: event.attributes } : {}),
    })),
    scope: span.instrumentationScope.name,
    ...(typeof service === 'string' ? { service } : {}),
  };
}

/**
 * An OpenTelemetry span exporter that appends one JSON line per finished span ({@link JsonlSpanRecord}) to the file
 * at `path`, for local use: give it to the SDK's `SimpleSpanProcessor` or `BatchSpanProcessor`, and read the file
 * with `cubepi trace list` and `cubepi trace show ID`. Writes are asynchronous and in order; a failed write is
 * reported to the processor as a failed export (the run never sees it). Never record content in a file you share
 * (`recordContent` is off by default).
 *
 * @example
 * import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
 * import { traceAgent } from 'cubepi/tracing';
 * import { JsonlSpanExporter } from 'cubepi/tracing/jsonl';
 *
 * const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new JsonlSpanExporter('traces.jsonl'))] });
 * traceAgent(agent, { tracer: provider.getTracer('my-app') });
 */
export class JsonlSpanExporter {
  private written: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(readonly path: string) {}

  /** Appends `spans` to the file; `resultCallback` hears how it went once they are written. */
  export(spans: readonly ExportableSpan[], resultCallback: (result: JsonlExportResult) => void): void {
    if (this.stopped) {
      resultCallback({ code: 1, error: new Error('JsonlSpanExporter: export after shutdown') });
      return;
    }
    let text: string;
    try {
      text = spans.map((span) => `${JSON.stringify(toJsonlRecord(span))}\n`).join('');
    } catch (error) {
      resultCallback({ code: 1, error: asError(error) });
      return;
    }
    this.written = this.written
      .then(() => appendFile(this.path, text))
      .then(
        () => resultCallback({ code: 0 }),
        (error: unknown) => resultCallback({ code: 1, error: asError(error) }),
      );
  }

  /** Resolves when every span exported so far is written. */
  forceFlush(): Promise<void> {
    return this.written;
  }

  /** Refuses further exports; resolves when the pending writes are done. */
  shutdown(): Promise<void> {
    this.stopped = true;
    return this.written;
  }
}

/**
 * Reads a JSONL trace file's text: one {@link JsonlSpanRecord} per non-empty line. A last line cut off by a crash
 * mid-write is skipped; any other line that is not a span throws an error naming its line number.
 */
export function parseJsonlSpans(text: string): JsonlSpanRecord[] {
  const lines = text.split('\n');
  const spans: JsonlSpanRecord[] = [];
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (index === lines.length - 1) break; // no newline yet: a write cut off
      throw new Error(`line ${index + 1}: not JSON`);
    }
    if (!isRecord(value)) throw new Error(`line ${index + 1}: not a span (traceId, spanId, name, startMs, durationMs)`);
    spans.push(value);
  }
  return spans;
}

function isRecord(value: unknown): value is JsonlSpanRecord {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.traceId === 'string' &&
    typeof v.spanId === 'string' &&
    typeof v.name === 'string' &&
    typeof v.startMs === 'number' &&
    typeof v.durationMs === 'number' &&
    typeof v.attributes === 'object' &&
    v.attributes !== null &&
    Array.isArray(v.events) &&
    typeof v.status === 'object' &&
    v.status !== null
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
