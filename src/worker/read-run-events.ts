/**
 * The reader of one run's events: replay from the table, then the live tail, woken by the run's NOTIFY channel.
 * @module
 */
import type pg from 'pg';
import { Observable } from 'rxjs';
import { DeltaDecoder } from '../wire/compact-deltas.js';
import { parseFrame, type WireFrame } from '../wire/frames.js';
import { RunEventLogError } from './errors.js';
import { channelOf, type RunEventTables } from './run-events-schema.js';

/** What a reader needs of its log. @internal */
export interface ReaderContext {
  readonly pool: pg.Pool;
  readonly tables: RunEventTables;
  /** Resolves once the table exists. */
  readonly ready: () => Promise<void>;
  /** Rows per replay query. */
  readonly pageSize: number;
}

/** Test seams. @internal */
export interface ReaderHooks {
  /** Called (and awaited) after LISTEN, before the first query: where an append that races the reader lands. */
  readonly afterListen?: () => Promise<void>;
}

interface Row {
  readonly frame: string;
  readonly compact: boolean;
}

/**
 * The frames of `runId` after seq `after`, whole (compact updates decoded), in seq order, each once, ending with the
 * run's terminal frame. Holds one pooled connection while subscribed; unsubscribing UNLISTENs and releases it.
 *
 * No gap, no duplicate: the reader LISTENs first, then queries `seq > last`, and queries again after each
 * notification. A batch committed before the first query is in it; one committed after LISTEN notifies, and the next
 * query (still `seq > last`) returns only what was not yet emitted. Batches of one run commit in seq order (the append
 * function's lock), so `seq > last` never skips a smaller seq committed later.
 * @internal
 */
export function readRunEvents(
  context: ReaderContext,
  runId: string,
  after: number,
  hooks: ReaderHooks = {},
): Observable<WireFrame> {
  return new Observable<WireFrame>((subscriber) => {
    const { pool, tables, pageSize } = context;
    const channel = channelOf(tables.schema, runId);
    const decoder = new DeltaDecoder();
    let closed = false;
    let dirty = true;
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
    const onNotification = (message: pg.Notification): void => {
      if (message.channel !== channel) return;
      dirty = true;
      wakeUp();
    };
    const onError = (error: Error): void => {
      broken = error;
      wakeUp();
    };

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
    const prime = async (client: pg.PoolClient): Promise<void> => {
      const { rows } = await client.query<Row>(
        `SELECT frame, compact FROM ${tables.events} WHERE run_id = $1 AND seq <= $2 AND seq >= ` +
          `(SELECT max(seq) FROM ${tables.events} WHERE run_id = $1 AND seq <= $2 AND base) ORDER BY seq`,
        [runId, after],
      );
      if (rows.length === 0) {
        throw new RunEventLogError('database', runId, `run "${runId}": no whole message before seq ${after + 1}`);
      }
      for (const row of rows) decode(row);
    };

    const ended = async (client: pg.PoolClient): Promise<boolean> => {
      const { rowCount } = await client.query(
        `SELECT 1 FROM ${tables.events} WHERE run_id = $1 AND terminal AND seq <= $2`,
        [runId, last],
      );
      return (rowCount ?? 0) > 0;
    };

    // Emits every stored frame after `last`, a page at a time. True once the terminal frame was emitted.
    const catchUp = async (client: pg.PoolClient): Promise<boolean> => {
      for (;;) {
        const { rows } = await client.query<Row>(
          `SELECT frame, compact FROM ${tables.events} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
          [runId, last, pageSize],
        );
        if (!primed && rows.length > 0) {
          if (rows[0]!.compact) await prime(client);
          primed = true;
        }
        if (first) {
          first = false;
          // Resuming at or past the terminal frame: the run has ended, there is nothing more to wait for.
          if (rows.length === 0 && (await ended(client))) {
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
      let client: pg.PoolClient | undefined;
      try {
        await context.ready();
        if (closed) return;
        client = await pool.connect();
        client.on('notification', onNotification);
        client.on('error', onError);
        if (closed) return;
        await client.query(`LISTEN "${channel}"`);
        await hooks.afterListen?.();
        while (!closed) {
          if (!dirty && broken === undefined) await new Promise<void>((resolve) => (wake = resolve));
          if (broken !== undefined) throw broken;
          if (closed) break;
          dirty = false;
          if (await catchUp(client)) break;
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
        if (client !== undefined) await releaseListener(client, channel, broken, onNotification, onError);
      }
    };
    void run();

    return () => {
      closed = true;
      wakeUp();
    };
  });
}

/** UNLISTENs and returns the connection to the pool; a broken one (or one that fails to UNLISTEN) is destroyed. */
async function releaseListener(
  client: pg.PoolClient,
  channel: string,
  broken: Error | undefined,
  onNotification: (message: pg.Notification) => void,
  onError: (error: Error) => void,
): Promise<void> {
  client.off('notification', onNotification);
  if (broken !== undefined) {
    client.off('error', onError);
    client.release(broken);
    return;
  }
  try {
    await client.query(`UNLISTEN "${channel}"`);
    client.off('error', onError);
    client.release();
  } catch (error) {
    client.off('error', onError);
    client.release(error instanceof Error ? error : new Error(String(error)));
  }
}
