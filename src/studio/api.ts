/**
 * The studio's JSON API: what `createStudio` serves under `<basePath>/studio-api/` and the studio page reads. Types
 * only (no runtime code), shared by the server (src/studio) and the page (page/studio), so the two cannot drift.
 *
 * Routes (all `GET` unless said; every one authenticated as the agent server's routes are):
 * - `studio-api/threads?q=&after=&limit=` → {@link StudioThreadPage}
 * - `studio-api/threads/:id` → {@link StudioThread} (404 `unknown_thread`)
 * - `studio-api/runs?thread=:id` → {@link StudioRunList} (the thread's runs found in the trace file, oldest first)
 * - `studio-api/runs/:runId` → {@link StudioRunTrace} (404 `unknown_run`)
 * - `studio-api/config` → {@link StudioConfig}
 * @module
 */
import type { Message } from '../types/messages.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { MiddlewareChain } from '../types/middleware-chain.js';

/** What the page needs to know about the studio it talks to. */
export interface StudioConfig {
  /** Where the agent server's routes are (`POST <apiBase>/threads/:id/runs`, …), as a path from the origin. */
  readonly apiBase: string;
  /** Whether a trace file is read (without one, the timeline views say so). */
  readonly traces: boolean;
  /** Whether runs can be started, stopped and answered (an agent server is mounted). */
  readonly live: boolean;
}

/** A thread in the list. */
export interface StudioThreadSummary {
  readonly threadId: string;
  /** The first user message's text, cut to 120 characters (`''` for a thread with none). */
  readonly title: string;
  readonly messageCount: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Set for a fork: the thread it was forked from, and the cut-off (it shares the parent's messages `[0, atSeq)`). */
  readonly parent?: { readonly threadId: string; readonly atSeq: number } | undefined;
}

/** One page of the thread list, newest first; `next` is the cursor of the next page (`null`: the last page). */
export interface StudioThreadPage {
  readonly threads: readonly StudioThreadSummary[];
  readonly next: string | null;
}

/** A thread as the studio shows it. */
export interface StudioThread {
  readonly threadId: string;
  /** The number of messages stored (`messages.length`). */
  readonly seq: number;
  /** Every stored message, in order: message `i` has seq `i`. */
  readonly messages: readonly Message[];
  /** The thread's run state (`extra`: values, state log, `changedBy` with producer and version, compactions). */
  readonly extra: Readonly<Record<string, unknown>>;
  readonly parent?: { readonly threadId: string; readonly atSeq: number } | undefined;
  /** The threads forked from this one, with where they branch off. */
  readonly forks: readonly { readonly threadId: string; readonly atSeq: number }[];
  /** The run in progress on the thread, when the agent server has one. */
  readonly activeRunId: string | null;
  /** The approvals the thread waits for. */
  readonly pending: readonly ApprovalRequest[];
}

/** A run as found in the trace file. */
export interface StudioRunSummary {
  readonly runId: string;
  readonly traceId: string;
  readonly threadId: string | null;
  readonly startMs: number;
  readonly durationMs: number;
  /** The run's outcome (`completed`, `failed`, `cancelled`, `suspended`, …) when the trace says. */
  readonly outcome: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** The run's cost in US dollars, when the spans carry one. */
  readonly costUsd: number | null;
}

/** The thread's runs, oldest first. */
export interface StudioRunList {
  readonly runs: readonly StudioRunSummary[];
}

/** What a span stands for, for the timeline's colours and rows. */
export type StudioSpanKind =
  'run' | 'turn' | 'model' | 'tool' | 'approval' | 'hook' | 'guardrail' | 'compaction' | 'handoff' | 'other';

/** One bar of the timeline. Times are milliseconds since the Unix epoch. */
export interface StudioSpan {
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly kind: StudioSpanKind;
  /** What the bar is labelled with: the tool's name, `chat <model>`, the hook and its middleware, … */
  readonly label: string;
  readonly startMs: number;
  /** `null` while the span is still open (a live run). */
  readonly durationMs: number | null;
  readonly status: 'ok' | 'error' | 'running';
  /** The span's attributes, as recorded (token counts, retry attempt, fallback, outcome, …). */
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** A run's spans (every span of its trace, parents before children), and its middleware chain when recorded. */
export interface StudioRunTrace {
  readonly run: StudioRunSummary;
  readonly spans: readonly StudioSpan[];
  readonly chain: MiddlewareChain | null;
}
