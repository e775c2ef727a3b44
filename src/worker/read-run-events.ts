/**
 * The reader of one run's events: replay from the table, then the live tail, woken through the log's shared listener.
 * @module
 */
import type pg from 'pg';
import { Observable } from 'rxjs';
import { DeltaDecoder } from '../wire/compact-deltas.js';
import { parseFrame, type WireFrame } from '../wire/frames.js';
import { RunEventLogError } from './errors.js';
import { decodeBatch, type StoredFrame } from './run-event-batch.js';
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
  /** Rows per replay query (a row: one batch, or one frame of the old format). */
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

/** A row of either format: a batch (`payload`) or, in the old table, one frame (`frame`, `compact`, `base`). */
interface Row {
  readonly first_seq: string;
  readonly payload: Buffer | null;
  readonly frame: string | null;
  readonly compact: boolean | null;
  readonly base: boolean | null;
}

/** A stored frame and its seq. @internal */
export interface SeqFrame extends StoredFrame {
  readonly seq: number;
}

/** The columns of {@link Row} from the old table, then from the batch table (for a UNION ALL). */
const OLD_COLUMNS = 'seq AS first_seq, seq AS last_seq, NULL::bytea AS payload, frame, compact, base';
const BATCH_COLUMNS =
  'first_seq, last_seq, payload, NULL::text AS frame, NULL::boolean AS compact, NULL::boolean AS base';

/** The frames of rows read from either table, in seq order. */
function framesOf(rows: readonly Row[]): SeqFrame[] {
  const frames: SeqFrame[] = [];
  for (const row of rows) {
    const first = Number(row.first_seq);
    if (row.payload === null) {
      frames.push({ seq: first, json: row.frame!, compact: row.compact!, base: row.base! });
      continue;
    }
    const batch = decodeBatch(row.payload);
    for (let i = 0; i < batch.length; i++) frames.push({ seq: first + i, ...batch[i]! });
  }
  return frames;
}

/**
 * Every stored frame of `runId`, both formats, in seq order (for a worker closing a run whose stream was cut).
 * @internal
 */
export async function storedFrames(pool: pg.Pool, tables: RunEventTables, runId: string): Promise<SeqFrame[]> {
  const { rows } = await pool.query<Row>(
    `SELECT ${OLD_COLUMNS} FROM ${tables.events} WHERE run_id = $1 UNION ALL ` +
      `SELECT ${BATCH_COLUMNS} FROM ${tables.batches} WHERE run_id = $1 ORDER BY last_seq`,
    [runId],
  );
  return framesOf(rows);
}

/**
 * The frames of `runId` after seq `after`, whole (compact updates decoded), in seq order, each once, ending with the
 * run's terminal frame. Follows the run's channel on the log's shared listener while subscribed (its queries borrow
 * a pooled connection each, for that query only); unsubscribing stops following.
 *
 * The run's frames are read from both of the log's tables: batches (format 3) and, for a run an older process began,
 * its rows of one frame each (formats 1 and 2), which all come before its batches. A batch holding seq `last` and
 * later ones is read whole, the frames up to `last` skipped.
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

    const decode = (row: SeqFrame): WireFrame => {
      const frame = parseFrame(row.json);
      if (frame === undefined) {
        throw new RunEventLogError('database', runId, `run "${runId}": a stored frame is not a wire frame`);
      }
      if (frame.kind !== 'event') return frame;
      // A compact update parses as an event missing its snapshot: the decoder grows it from the previous one.
      const event = decoder.decode(frame.event);
      return { kind: 'event', seq: frame.seq, event };
    };

    // A resume from the middle of a streamed message: decode from the last whole snapshot at or before `after`. Its
    // row: in the old table, the last base row at or before `after`; among batches, the last one starting at or
    // before `after` whose first base is too (a later batch before `after` has none, so holds no later one).
    const prime = async (): Promise<void> => {
      const { rows } = await pool.query<Row>(
        `WITH b AS (SELECT greatest(` +
          `(SELECT max(seq) FROM ${tables.events} WHERE run_id = $1 AND seq <= $2 AND base), ` +
          `(SELECT max(first_seq) FROM ${tables.batches} WHERE run_id = $1 AND first_seq <= $2 AND first_base <= $2)` +
          `) AS s) ` +
          `SELECT ${OLD_COLUMNS} FROM ${tables.events} WHERE run_id = $1 AND seq <= $2 AND seq >= (SELECT s FROM b) ` +
          `UNION ALL SELECT ${BATCH_COLUMNS} FROM ${tables.batches} ` +
          `WHERE run_id = $1 AND first_seq <= $2 AND first_seq >= (SELECT s FROM b) ORDER BY first_seq`,
        [runId, after],
      );
      const frames = framesOf(rows).filter((frame) => frame.seq <= after);
      let from = frames.length - 1;
      while (from >= 0 && !frames[from]!.base) from--;
      if (from < 0) {
        throw new RunEventLogError('database', runId, `run "${runId}": no whole message before seq ${after + 1}`);
      }
      for (let i = from; i < frames.length; i++) decode(frames[i]!);
    };

    const ended = async (): Promise<boolean> => {
      const { rowCount } = await pool.query(
        `SELECT 1 FROM ${tables.batches} WHERE run_id = $1 AND terminal AND last_seq <= $2 UNION ALL ` +
          `SELECT 1 FROM ${tables.events} WHERE run_id = $1 AND terminal AND seq <= $2 LIMIT 1`,
        [runId, last],
      );
      return (rowCount ?? 0) > 0;
    };

    // Emits every stored frame after `last`, a page of rows at a time. True once the terminal frame was emitted.
    const catchUp = async (): Promise<boolean> => {
      for (;;) {
        const { rows } = await pool.query<Row>(
          `SELECT ${OLD_COLUMNS} FROM ${tables.events} WHERE run_id = $1 AND seq > $2 UNION ALL ` +
            `SELECT ${BATCH_COLUMNS} FROM ${tables.batches} WHERE run_id = $1 AND last_seq > $2 ` +
            `ORDER BY last_seq LIMIT $3`,
          [runId, last, pageSize],
        );
        if (closed) return true;
        // The first page's first row may be a batch that began at or before `last`: its frames up to `last` are not
        // emitted (and were decoded by `prime`, or are not needed).
        const frames = framesOf(rows).filter((frame) => frame.seq > last);
        if (!primed && frames.length > 0) {
          if (frames[0]!.compact) await prime();
          primed = true;
        }
        if (first) {
          first = false;
          // Resuming at or past the terminal frame: the run has ended, there is nothing more to wait for.
          if (frames.length === 0 && (await ended())) {
            subscriber.complete();
            return true;
          }
        }
        for (const stored of frames) {
          if (closed) return true;
          const frame = decode(stored);
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
