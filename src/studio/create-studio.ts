/**
 * `createStudio`: the studio's page and its JSON API (src/studio/api.ts) over a thread store, a trace file and an
 * agent server. (Skeleton: the helper building the studio server fills this in.)
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import type { HttpAgentServer } from '../server/routes.js';

/** Options of {@link createStudio}. */
export interface StudioOptions {
  /** The thread store the studio reads (and forks through). */
  readonly checkpointer: Checkpointer;
  /** The agent server whose runs the studio streams, stops and answers; its routes are served at its `basePath`. */
  readonly server?: HttpAgentServer | undefined;
  /** A JSONL trace file written by `JsonlSpanExporter` (cubepi/tracing/jsonl): the runs' timelines. */
  readonly traceFile?: string | undefined;
  /** The path prefix of the studio's page and `studio-api/` routes (default: none). */
  readonly basePath?: string | undefined;
}

/** A studio: mount {@link Studio.fetch} (or `toNodeListener`-style adapters) in a server. */
export interface Studio {
  /** Handles one request: the page, `studio-api/…`, and (with a `server`) the agent server's routes. */
  fetch(request: Request): Promise<Response>;
  /** Releases what the studio holds (file watchers, caches). */
  close(): void;
}

/** The studio over `options.checkpointer` (see docs/studio.md). */
export function createStudio(options: StudioOptions): Studio {
  void options;
  throw new Error('createStudio: not built yet');
}
