/**
 * One served run's frames: appended as the run emits them, read by any number of clients from any seq, each at its
 * own pace. Readers never block the run or each other: a slow client only lags behind in the shared log.
 * @module
 */
import type { AssistantMessage } from '../types/messages.js';
import { compactUpdate } from '../wire/compact-deltas.js';
import { frameJson, sseRecord, type WireFrame } from '../wire/frames.js';

/**
 * A frame with its JSON text, encoded once for every client: a delta update whose snapshot grew by its delta alone is
 * encoded compact (`compact: true`, see `compact-deltas.ts`), and whole in {@link fullJson} for a connection that
 * starts in the middle of its message.
 */
export interface LoggedFrame {
  readonly frame: WireFrame;
  readonly json: string;
  readonly compact: boolean;
  /** The SSE record of `json` as bytes, encoded once for every SSE client (on first use). */
  sse?: Uint8Array;
  /** The SSE record of the whole frame, for a compact one (on first use). */
  fullSse?: Uint8Array;
}

const encoder = new TextEncoder();

/** The whole JSON of a logged frame (its `json` unless that is compact). */
export function fullJson(logged: LoggedFrame): string {
  return logged.compact ? frameJson(logged.frame) : logged.json;
}

/** The SSE record of a logged frame as bytes, compact or whole, encoded once and kept. */
export function sseBytes(logged: LoggedFrame, whole: boolean): Uint8Array {
  if (whole && logged.compact) return (logged.fullSse ??= encoder.encode(sseRecord(logged.frame, fullJson(logged))));
  return (logged.sse ??= encoder.encode(sseRecord(logged.frame, logged.json)));
}

/** Limits of a {@link RunLog}. */
export interface RunLogLimits {
  /**
   * When the log holds more frames than this, the `message_update` frames of messages that already ended are dropped
   * (their `message_end` frame carries the whole message, so a client that resumes before it still gets every
   * character); if none can be dropped, the oldest frames go, and a resume from before them is refused.
   */
  readonly maxFrames: number;
}

/**
 * The frames of one run, in `seq` order (strictly increasing; dense unless compacted). Append-only for the run;
 * {@link after} reads from any seq.
 * @internal
 */
export class RunLog {
  private frames: LoggedFrame[] = [];
  /** Index in `frames` up to which `message_update` frames belong to messages that have ended. */
  private endedBefore = 0;
  /** The first seq that may have been dropped from the front (resuming from before it is refused). */
  private droppedThrough = 0;
  private readonly waiters = new Set<() => void>();
  /** The latest snapshot of the message streaming in the run (what a compact update grows). */
  private snapshot: AssistantMessage | undefined;
  private lastSeq = 0;
  private size = 0;
  /** True once a terminal (`end` or `error`) frame is in the log. */
  ended = false;
  /** True once the server closed: readers stop without a terminal frame. */
  abandoned = false;

  constructor(
    readonly runId: string,
    readonly threadId: string,
    private readonly limits: RunLogLimits,
  ) {}

  /** The seq of the last frame appended (0 before any). */
  get seq(): number {
    return this.lastSeq;
  }

  /** What the log holds, in UTF-16 code units of its frames' JSON (about bytes): what retention is bounded by. */
  get bytes(): number {
    return this.size;
  }

  /** Appends `frame` (its seq must be greater than the last) and wakes every waiting reader. */
  append(frame: WireFrame): void {
    if (this.ended) return;
    this.lastSeq = frame.seq;
    if (frame.kind !== 'event') {
      this.frames.push({ frame, json: frameJson(frame), compact: false });
      this.ended = true;
    } else {
      const event = frame.event;
      const compact = compactUpdate(event, this.snapshot);
      this.frames.push({ frame, json: JSON.stringify(compact ?? event), compact: compact !== undefined });
      if (event.type === 'message_update') this.snapshot = event.message;
      else if (event.type === 'message_start' && event.message.role === 'assistant') this.snapshot = event.message;
      else if (event.type === 'message_end') {
        this.snapshot = undefined;
        this.endedBefore = this.frames.length;
      }
    }
    this.size += this.frames[this.frames.length - 1]!.json.length;
    if (this.frames.length > this.limits.maxFrames) this.compact();
    this.wake();
  }

  /**
   * The frames after `seq`, in order, at most `limit` of them (empty when the reader is up to date). Returns
   * `undefined` when frames after `seq` were dropped from the front of the log (a reader that fell too far behind, or
   * asked for an old seq).
   */
  after(seq: number, limit = Infinity): readonly LoggedFrame[] | undefined {
    if (seq < this.droppedThrough) return undefined;
    const frames = this.frames;
    // Binary search for the first frame with a seq greater than `seq`.
    let low = 0;
    let high = frames.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (frames[middle]!.frame.seq <= seq) low = middle + 1;
      else high = middle;
    }
    return low === frames.length ? [] : frames.slice(low, low + limit);
  }

  /**
   * Calls `listener` once, at the next append or when the log is abandoned; returns a function that removes it (a
   * reader that stops waiting for another reason leaves nothing behind).
   */
  onChange(listener: () => void): () => void {
    this.waiters.add(listener);
    return () => this.waiters.delete(listener);
  }

  /** Marks the log abandoned (the server is closing) and wakes every waiting reader. */
  abandon(): void {
    this.abandoned = true;
    this.wake();
  }

  private wake(): void {
    if (this.waiters.size === 0) return;
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  private compact(): void {
    this.compactFrames();
    this.size = 0;
    for (const logged of this.frames) this.size += logged.json.length;
  }

  private compactFrames(): void {
    const ended = this.frames.slice(0, this.endedBefore);
    const kept = ended.filter((f) => f.frame.kind !== 'event' || f.frame.event.type !== 'message_update');
    if (kept.length < ended.length) {
      this.frames = kept.concat(this.frames.slice(this.endedBefore));
      this.endedBefore = kept.length;
      // A reader between dropped frames resumes at the next kept one: no character is lost (message_end has them).
      if (this.frames.length <= this.limits.maxFrames) return;
    }
    // Nothing left to drop safely: let the oldest half go; readers before it get refused (410).
    const drop = this.frames.length - Math.floor(this.limits.maxFrames / 2);
    this.droppedThrough = this.frames[drop - 1]!.frame.seq;
    this.frames = this.frames.slice(drop);
    this.endedBefore = Math.max(0, this.endedBefore - drop);
  }
}
