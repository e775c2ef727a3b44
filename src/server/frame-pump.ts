/**
 * Reading a run's log as one client does: batches of frames after a seq, at the client's pace, until the run's
 * terminal frame (or the client leaves, or the server closes). Shared by the SSE, WebSocket and UI message streams.
 * @module
 */
import type { WireFrame } from '../wire/frames.js';
import { fullJson, sseBytes, type LoggedFrame, type RunLog } from './run-log.js';

/** The most frames sent in one write, so a client far behind catches up in bounded chunks. */
const MAX_BATCH = 512;

/** A frame as one connection sends it: `whole` when a compact frame must go whole (see {@link FrameReader}). */
export interface SentFrame {
  readonly logged: LoggedFrame;
  readonly whole: boolean;
}

/** The frame of a {@link SentFrame}. */
export const frameOf = (sent: SentFrame): WireFrame => sent.logged.frame;

/** The JSON text of a {@link SentFrame} (a WebSocket message). */
export const jsonOf = (sent: SentFrame): string => (sent.whole ? fullJson(sent.logged) : sent.logged.json);

/** The SSE bytes of a batch, one buffer: each frame's record encoded once for all clients, then copied. */
export function sseChunk(batch: readonly SentFrame[]): Uint8Array {
  if (batch.length === 1) return sseBytes(batch[0]!.logged, batch[0]!.whole);
  const parts = batch.map((sent) => sseBytes(sent.logged, sent.whole));
  let size = 0;
  for (const part of parts) size += part.byteLength;
  const chunk = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    chunk.set(part, offset);
    offset += part.byteLength;
  }
  return chunk;
}

/** What {@link FrameReader.next} gives: frames to send, a heartbeat after a quiet while, or `null` at the end. */
export type PumpItem = readonly SentFrame[] | 'heartbeat' | null;

/**
 * One connection's reading of a run, whatever holds the run's frames (a {@link FrameReader} on a log in this process,
 * an `ObservedFrameReader` on a run queue's stream): {@link next} as {@link FrameReader}'s.
 * @internal
 */
export interface RunStreamReader {
  /** The next frames to send, `'heartbeat'` after a quiet while, `null` at the end (rejects when the source fails). */
  next(): Promise<PumpItem>;
  /** Ends the reading: a pending {@link next} resolves with `null`. */
  stop(): void;
  /** True once the run's terminal frame was handed out (the stream ended with the run, not cut short). */
  readonly finished: boolean;
  /**
   * True when the reading starts at or past the run's terminal frame (a plain `EventSource` reconnecting with the
   * `id:` of `event: end`): there is nothing to send, and SSE answers 204 so the browser stops reconnecting.
   */
  readonly atEnd?: boolean;
}

/**
 * One connection's position in a run's log. {@link next} returns the frames after the position (in batches of at
 * most 512), waiting when there are none; `null` after the run's terminal frame, after {@link stop} (the client left)
 * or when the log is abandoned (the server closes); `'heartbeat'` after `heartbeatMs` without a frame.
 *
 * A compact update needs the message it grows: this connection's first update of a message goes whole. Waiting costs
 * one listener and one timer, both released when the wait ends, however it ends.
 * @internal
 */
export class FrameReader implements RunStreamReader {
  private cursor: number;
  private based = false;
  private done = false;
  finished = false;
  readonly atEnd: boolean;
  private interrupt: (() => void) | undefined;

  /** Throws {@link ResumeGoneError} when the frames after `after` were dropped. */
  constructor(
    private readonly log: RunLog,
    after: number,
    private readonly heartbeatMs: number,
  ) {
    if (log.after(after, 0) === undefined) throw new ResumeGoneError(log.runId, after);
    this.cursor = after;
    this.atEnd = this.done = this.finished = log.ended && after >= log.seq;
  }

  /** Ends the reading: a pending {@link next} resolves with `null`. */
  stop(): void {
    this.done = true;
    this.interrupt?.();
  }

  async next(): Promise<PumpItem> {
    for (;;) {
      if (this.done || this.log.abandoned) return null;
      const frames = this.log.after(this.cursor, MAX_BATCH);
      if (frames === undefined) throw new ResumeGoneError(this.log.runId, this.cursor);
      if (frames.length > 0) return this.take(frames);
      // Past the terminal frame (a position beyond the end of a run that has ended since): nothing will come.
      if (this.log.ended) {
        this.done = this.finished = true;
        return null;
      }
      const woke = await new Promise<'frame' | 'heartbeat'>((resolve) => {
        const finish = (why: 'frame' | 'heartbeat') => {
          clearTimeout(timer);
          remove();
          this.interrupt = undefined;
          resolve(why);
        };
        const timer = setTimeout(() => finish('heartbeat'), this.heartbeatMs);
        const remove = this.log.onChange(() => finish('frame'));
        this.interrupt = () => finish('frame');
      });
      if (woke === 'heartbeat' && !this.done) return 'heartbeat';
    }
  }

  private take(batch: readonly LoggedFrame[]): SentFrame[] {
    const sent: SentFrame[] = new Array<SentFrame>(batch.length);
    for (let i = 0; i < batch.length; i++) {
      const logged = batch[i]!;
      sent[i] = { logged, whole: logged.compact && !this.based };
      const frame = logged.frame;
      if (frame.kind !== 'event') this.done = this.finished = true;
      else if (frame.event.type === 'message_update' || frame.event.type === 'message_start') this.based = true;
      else if (frame.event.type === 'message_end') this.based = false;
    }
    this.cursor = batch[batch.length - 1]!.frame.seq;
    return sent;
  }
}

/** A resume from a seq whose following frames the log no longer holds. */
export class ResumeGoneError extends Error {
  constructor(
    readonly runId: string,
    readonly after: number,
  ) {
    super(`run ${runId}: the frames after seq ${after} are no longer held; reload the thread`);
    this.name = 'ResumeGoneError';
  }
}
