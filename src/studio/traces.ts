/**
 * The studio's reading of a JSONL trace file: spans grouped into runs, as the timeline shows them. (Skeleton: the
 * helper building the timeline fills this in.)
 * @module
 */
import type { StudioRunList, StudioRunTrace } from './api.js';

/** Runs read from a trace file, read again when the file changed. */
export interface TraceReader {
  /** The thread's runs found in the file, oldest first (none for a missing file). */
  runs(threadId: string): Promise<StudioRunList>;
  /** One run's spans, parents before children; `undefined` when the file has no such run. */
  run(runId: string): Promise<StudioRunTrace | undefined>;
}

/** A {@link TraceReader} over the JSONL file at `path`. */
export function createTraceReader(path: string): TraceReader {
  void path;
  return {
    runs: () => Promise.resolve({ runs: [] }),
    run: () => Promise.resolve(undefined),
  };
}
