/**
 * One connection's reading of a run whose frames arrive as an Observable (a run queue's `frames(runId, { after })`):
 * the same reader the SSE and WebSocket pumps use for a log in this process.
 * @module
 */
import type { Observable, Subscription } from 'rxjs';
import { compactUpdate } from '../wire/compact-deltas.js';
import { frameJson, type WireFrame } from '../wire/frames.js';
import type { AssistantMessage } from '../types/messages.js';
import type { PumpItem, RunStreamReader, SentFrame } from './frame-pump.js';

/** The most frames handed out at once, so a client far behind catches up in bounded chunks. */
const MAX_BATCH = 512;

/**
 * Subscribes to `frames$` at once and hands its frames out in order ({@link next}: batches of at most 512, a
 * heartbeat after `heartbeatMs` without one, `null` after the terminal frame or {@link stop}); a failure of `frames$`
 * rejects the {@link next} after the frames that came before it. {@link stop} unsubscribes.
 *
 * A delta update whose snapshot is the previous one this connection sent, grown by its delta, goes compact (as the
 * in-process log sends it); anything else whole. Frames wait in memory until the client takes them: a client that
 * stops reading holds its run's frames (at most the run's size) until it leaves.
 * @internal
 */
export class ObservedFrameReader implements RunStreamReader {
  private readonly buffer: WireFrame[] = [];
  private readonly subscription: Subscription;
  private failure: { readonly error: unknown } | undefined;
  private completed = false;
  private done = false;
  private wake: (() => void) | undefined;
  /** The assistant message as this connection last sent it (what a compact update grows). */
  private snapshot: AssistantMessage | undefined;
  finished = false;
  /** Frames handed out so far (none: the stream started at or past the end, when it completed). */
  private sent = 0;
  private settledWaiters: (() => void)[] = [];

  /** `onDone` is called once, when the reading ends (however it ends). */
  constructor(
    frames$: Observable<WireFrame>,
    private readonly heartbeatMs: number,
    private readonly onDone: () => void = () => {},
  ) {
    this.subscription = frames$.subscribe({
      next: (frame) => {
        this.buffer.push(frame);
        this.wakeUp();
      },
      error: (error: unknown) => {
        this.failure = { error };
        this.wakeUp();
      },
      complete: () => {
        this.completed = true;
        this.wakeUp();
      },
    });
  }

  stop(): void {
    this.end();
    this.wakeUp();
  }

  async next(): Promise<PumpItem> {
    for (;;) {
      if (this.done) return null;
      if (this.buffer.length > 0) return this.take();
      if (this.failure !== undefined) {
        this.end();
        throw this.failure.error;
      }
      if (this.completed) {
        // Completed before any frame: the reading started at or past the end of a run that has ended.
        if (this.sent === 0) this.finished = true;
        this.end();
        return null;
      }
      const woke = await new Promise<'frame' | 'heartbeat'>((resolve) => {
        const timer = setTimeout(() => {
          this.wake = undefined;
          resolve('heartbeat');
        }, this.heartbeatMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve('frame');
        };
      });
      if (woke === 'heartbeat' && !this.done) return 'heartbeat';
    }
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    this.subscription.unsubscribe();
    this.onDone();
  }

  /**
   * True when the source completed before any frame: the reading started at or past the run's end (a run that ended).
   * Known once {@link settled} resolved.
   */
  get atEnd(): boolean {
    return this.completed && this.sent === 0 && this.buffer.length === 0 && this.failure === undefined;
  }

  /** Resolves once the source gave a frame, failed or completed (for a run that ended: its replay began or ended). */
  settled(): Promise<void> {
    if (this.buffer.length > 0 || this.completed || this.failure !== undefined) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  private wakeUp(): void {
    const settled = this.settledWaiters;
    this.settledWaiters = [];
    for (const resolve of settled) resolve();
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private take(): SentFrame[] {
    const batch = this.buffer.splice(0, MAX_BATCH);
    this.sent += batch.length;
    const sent: SentFrame[] = [];
    for (const frame of batch) {
      sent.push({ logged: { frame, json: this.encode(frame), compact: false }, whole: false });
      if (frame.kind !== 'event') {
        this.finished = true;
        this.end();
        break;
      }
    }
    return sent;
  }

  private encode(frame: WireFrame): string {
    if (frame.kind !== 'event') return frameJson(frame);
    const event = frame.event;
    const compact = compactUpdate(event, this.snapshot);
    if (event.type === 'message_update') this.snapshot = event.message;
    else if (event.type === 'message_start' && event.message.role === 'assistant') this.snapshot = event.message;
    else if (event.type === 'message_end') this.snapshot = undefined;
    return compact === undefined ? frameJson(frame) : JSON.stringify(compact);
  }
}
