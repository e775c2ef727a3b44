/**
 * Reading a run's log as one client does: batches of frames after a seq, at the client's pace, until the run's
 * terminal frame (or the client leaves, or the server closes). Shared by the SSE and WebSocket transports.
 * @module
 */
import type { WireFrame } from '../wire/frames.js';
import { fullJson, type LoggedFrame, type RunLog } from './run-log.js';

/** The most frames sent in one write, so a client far behind catches up in bounded chunks. */
const MAX_BATCH = 512;

/** A frame and the JSON text to send it as, on one connection. */
export interface SentFrame {
  readonly frame: WireFrame;
  readonly json: string;
}

/** What {@link frameBatches} yields: frames to send, or a heartbeat when nothing happened for a while. */
export type PumpItem = readonly SentFrame[] | 'heartbeat';

/**
 * The frames of `log` after seq `after`, in batches, waiting for new ones, until a terminal frame was yielded. Ends
 * early when `stopped` resolves (the client left) or the log is abandoned (the server closes). Yields `'heartbeat'`
 * after `heartbeatMs` without a frame. Throws {@link ResumeGoneError} when frames after `after` were dropped.
 * @internal
 */
export async function* frameBatches(
  log: RunLog,
  after: number,
  stopped: Promise<void>,
  heartbeatMs: number,
): AsyncGenerator<PumpItem> {
  let cursor = after;
  let stop = false;
  // Whether this connection has sent a frame of the message streaming now: a compact update needs one before it.
  let based = false;
  const send = (logged: LoggedFrame): SentFrame => {
    const { frame } = logged;
    const json = logged.compact && !based ? fullJson(logged) : logged.json;
    if (frame.kind === 'event') {
      const type = frame.event.type;
      if (type === 'message_update' || type === 'message_start') based = true;
      else if (type === 'message_end') based = false;
    }
    return { frame, json };
  };
  void stopped.then(() => (stop = true));
  while (!stop && !log.abandoned) {
    const frames = log.after(cursor);
    if (frames === undefined) throw new ResumeGoneError(log.runId, cursor);
    if (frames.length > 0) {
      const batch = frames.length > MAX_BATCH ? frames.slice(0, MAX_BATCH) : frames;
      const last = batch[batch.length - 1]!;
      cursor = last.frame.seq;
      yield batch.map(send);
      if (last.frame.kind !== 'event') return;
      continue;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const beat = new Promise<'heartbeat'>((resolve) => (timer = setTimeout(() => resolve('heartbeat'), heartbeatMs)));
    const woke = await Promise.race([log.changed(cursor), stopped, beat]);
    clearTimeout(timer);
    if (woke === 'heartbeat' && !stop) yield 'heartbeat';
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
