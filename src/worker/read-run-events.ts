/**
 * The reader of one run's events: replay from the table, then the live tail, woken through the log's shared listener.
 * @module
 */
import type pg from 'pg';
import { Observable } from 'rxjs';
import { DeltaDecoder } from '../wire/compact-deltas.js';
import { parseFrame, type WireFrame } from '../wire/frames.js';
import { RunEventLogError } from './errors.js';
import type { ChannelFollower, RunEventListener } from './run-event-listener.js';
import { channelOf, type RunEventTables } from './run-events-schema.js';

/** What a reader needs of its log. @internal */
export interface ReaderContext {
  /** Where the reader's queries go (each borrows a connection for one query only). */
  readonly pool: pg.Pool;
  /** The log's one LISTEN connection, shared by its readers. */
  readonly listener: RunEventListener;
  readonly tables: RunEventTables;
  /** Resolves once the table exists. */
  readonly ready: () => Promise<void>;
  /** Rows per replay query. */
  readonly pageSize: number;
}

/** Test seams. @internal */
export interface ReaderHooks {
  /**
   * Called (and awaited) once the run's channel is LISTENed (acknowledged), before the first query: where an append
   * that races the reader lands.
   */
  readonly afterListen?: () => Promise<void>;
}

interface Row {
  readonly frame: string;
  readonly compact: boolean;
}

/**
 * The frames of `runId` after seq `after`, whole (compact updates decoded), in seq order, each once, ending with the
 * run's terminal frame. Follows the run's channel on the log's shared listener while subscribed (its queries borrow
 * a pooled connection each, for that query only); unsubscribing stops following.
 *
 * No gap, no duplicate: the reader waits until the listener's LISTEN on the run's channel is acknowledged, then
 * queries `seq > last`, and queries again after each notification. A batch committed before the first query is in
 * it; one committed after LISTEN notifies, and the next query (still `seq > last`) returns only what was not yet
 * emitted. Batches of one run commit in seq order (the append function's lock), so `seq > last` never skips a smaller
 * seq committed later. When the listener reconnects it LISTENs again and tells the reader, which queries `seq > last`
 * once more: what was appended while nothing listened is read then.
 * @internal
 */
export function readRunEvents(
  context: ReaderContext,
  runId: string,
  after: number,
  hooks: ReaderHooks = {},
): Observable<WireFrame> {
  return new Observable<WireFrame>((subscriber) => {
    const { pool, listener, tables, pageSize } = context;
    const channel = channelOf(tables.schema, runId);
    const decoder = new DeltaDecoder();
    let closed = false;
    let listening = false;
    let dirty = false;
    let broken: Error | undefined;
    let wake: (() => void) | undefined;
    let last = after;
    let primed = after === 0;
    let first = true;

    const wakeUp = (): void => {
      const resolve = wake;
      wake = undefined;
      resolve?.();
    };
    const follower: ChannelFollower = {
      listening: () => {
        listening = true;
        dirty = true;
        wakeUp();
      },
      notify: () => {
        dirty = true;
        wakeUp();
      },
      fail: (error) => {
        broken = error;
        wakeUp();
      },
    };
    // The listener failed this reader (set from its callback, so read through a function, never narrowed).
    const throwIfBroken = (): void => {
      if (broken !== undefined) throw broken;
    };
    const waitForWake = (): Promise<void> => new Promise<void>((resolve) => (wake = resolve));

    const decode = (row: Row): WireFrame => {
      const frame = parseFrame(row.frame);
      if (frame === undefined) {
        throw new RunEventLogError('database', runId, `run "${runId}": a stored frame is not a wire frame`);
      }
      if (frame.kind !== 'event') return frame;
      // A compact update parses as an event missing its snapshot: the decoder grows it from the previous one.
      const event = decoder.decode(frame.event);
      return { kind: 'event', seq: frame.seq, event };
    };

    // A resume from the middle of a streamed message: decode from the last whole snapshot at or before `after`.
    const prime = async (): Promise<void> => {
      const { rows } = await pool.query<Row>(
        `SELECT frame, compact FROM ${tables.events} WHERE run_id = $1 AND seq <= $2 AND seq >= ` +
          `(SELECT max(seq) FROM ${tables.events} WHERE run_id = $1 AND seq <= $2 AND base) ORDER BY seq`,
        [runId, after],
      );
      if (rows.length === 0) {
        throw new RunEventLogError('database', runId, `run "${runId}": no whole message before seq ${after + 1}`);
      }
      for (const row of rows) decode(row);
    };

    const ended = async (): Promise<boolean> => {
      const { rowCount } = await pool.query(
        `SELECT 1 FROM ${tables.events} WHERE run_id = $1 AND terminal AND seq <= $2`,
        [runId, last],
      );
      return (rowCount ?? 0) > 0;
    };

    // Emits every stored frame after `last`, a page at a time. True once the terminal frame was emitted.
    const catchUp = async (): Promise<boolean> => {
      for (;;) {
        const { rows } = await pool.query<Row>(
          `SELECT frame, compact FROM ${tables.events} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
          [runId, last, pageSize],
        );
        if (closed) return true;
        if (!primed && rows.length > 0) {
          if (rows[0]!.compact) await prime();
          primed = true;
        }
        if (first) {
          first = false;
          // Resuming at or past the terminal frame: the run has ended, there is nothing more to wait for.
          if (rows.length === 0 && (await ended())) {
            subscriber.complete();
            return true;
          }
        }
        for (const row of rows) {
          if (closed) return true;
          const frame = decode(row);
          last = frame.seq;
          subscriber.next(frame);
          if (frame.kind !== 'event') {
            subscriber.complete();
            return true;
          }
        }
        if (rows.length < pageSize) return false;
      }
    };

    const run = async (): Promise<void> => {
      let release: (() => void) | undefined;
      try {
        await context.ready();
        if (closed) return;
        release = listener.follow(channel, follower);
        while (!listening && !closed) {
          throwIfBroken();
          await waitForWake();
        }
        throwIfBroken();
        if (closed) return;
        await hooks.afterListen?.();
        while (!closed) {
          throwIfBroken();
          if (!dirty) await waitForWake();
          throwIfBroken();
          if (closed) break;
          dirty = false;
          if (await catchUp()) break;
        }
      } catch (error) {
        if (!closed) {
          subscriber.error(
            error instanceof RunEventLogError
              ? error
              : new RunEventLogError(
                  'database',
                  runId,
                  `reading run "${runId}" failed: ${(error as Error)?.message ?? String(error)}`,
                  error,
                ),
          );
        }
      } finally {
        release?.();
      }
    };
    void run();

    return () => {
      closed = true;
      wakeUp();
    };
  });
}
