/**
 * The run-event log on PostgreSQL: every frame of every run, appended by the process that runs it, read by any
 * process from any seq (replay, then the live tail). See `docs/scale-out.md`.
 * @module
 */
import pg from 'pg';
import type { Observable } from 'rxjs';
import { ConfigurationError, InvalidInputError } from '../types/errors.js';
import type { AssistantMessage } from '../types/messages.js';
import { compactUpdate } from '../wire/compact-deltas.js';
import { frameJson, type WireFrame } from '../wire/frames.js';
import { RunEventLogError } from './errors.js';
import { encodeBatch, type StoredFrame } from './run-event-batch.js';
import { readRunEvents, type ReaderContext, type ReaderHooks } from './read-run-events.js';
import { RunEventListener, type ListenerSession } from './run-event-listener.js';
import {
  channelOf,
  IDENTIFIER,
  lastSeqSql,
  migrateRunEvents,
  RUN_ENDED,
  runEventTables,
  SEQ_ORDER,
  type RunEventTables,
} from './run-events-schema.js';

/** Options of {@link createRunEventLog}: a pool or a connection string (exactly one). */
export interface RunEventLogOptions {
  /**
   * The pool to use (not ended by `close`). Appends and the readers' queries borrow its connections one statement at
   * a time; the readers' one LISTEN connection is not taken from it but made from its settings (`pool.options`).
   */
  readonly pool?: pg.Pool | undefined;
  /** A connection string: the log makes a pool of its own, ended by `close`. */
  readonly connectionString?: string | undefined;
  /** The schema of the tables (created if missing). Letters, digits and `_`; default `public`. */
  readonly schema?: string | undefined;
  /** Rows fetched per query while a reader replays (default 500): a row is an appended batch (or, for a run an older
   * version stored, one frame). */
  readonly pageSize?: number | undefined;
  /**
   * How long the readers' shared LISTEN connection stays open once no reader follows any run, in milliseconds
   * (default 10,000, as `pg.Pool` keeps an idle connection; 0 closes it as the last reader leaves).
   */
  readonly listenerIdleMillis?: number | undefined;
  /**
   * When the readers' LISTEN connection is lost, it reconnects at once; if that fails, it keeps trying for this long
   * (milliseconds, default 5,000; 0: that one attempt), then every reader fails with `RunEventLogError` `database`.
   */
  readonly listenerReconnectMillis?: number | undefined;
}

/** Options of {@link RunEventLog.runEvents}. */
export interface RunEventsOptions {
  /** Read the frames after this seq (default 0: all of them). The `Last-Event-ID` of a resuming client. */
  readonly after?: number | undefined;
}

/** The run-event log; see {@link createRunEventLog}. */
export interface RunEventLog {
  /** Creates the schema, tables and function now (optional: the first call does it). */
  migrate(): Promise<void>;
  /**
   * Appends `frames` (one run's, seqs consecutive, the first the run's last stored seq plus one — 1 for a run with
   * none —, at most one terminal frame and only last) in one statement, then wakes the run's readers: a run's stored
   * seqs are dense. Calls for one run are written in call order, and calls made while one is in flight are merged
   * into the next statement. Rejects with `InvalidInputError` for frames out of order (nothing written),
   * `RunEventLogError` `seq_order` or `run_ended` when the stored run refuses them (nothing written), `database`
   * otherwise (outcome unknown: read to know). When a call fails, the calls queued behind it fail `seq_order`
   * unwritten (they would follow a gap); append again from `lastSeq`, in order.
   */
  appendRunEvents(runId: string, frames: readonly WireFrame[]): Promise<void>;
  /**
   * A cold Observable of the run's frames after `options.after`: the stored ones, then each as it is appended, whole
   * (compact updates decoded, as `cubepi/client` would), each once, in seq order, completing after the run's terminal
   * frame. A run with no frames yet is waited for. Every reader of the log follows its run on the log's one shared
   * LISTEN connection (opened by the first, the run's channel UNLISTENed when its last reader leaves) and borrows a
   * pooled connection only for each query. If that connection is lost, it reconnects and each reader reads what it
   * missed; when it cannot (see `listenerReconnectMillis`), or its query fails, the reader fails with
   * `RunEventLogError` `database`.
   */
  runEvents(runId: string, options?: RunEventsOptions): Observable<WireFrame>;
  /** The run's last stored seq (0 when it has none). */
  lastSeq(runId: string): Promise<number>;
  /**
   * Retention: deletes every run whose last frame was appended before `date`, whole (never part of a run), ended or
   * not; resolves with the number of runs deleted. A run that is silent that long and then appends again is refused
   * (`seq_order`) unless it starts over at seq 1.
   */
  deleteRunEventsBefore(date: Date): Promise<number>;
  /**
   * Ends the readers' LISTEN connection (readers still subscribed fail with `RunEventLogError` `database`, later ones
   * at once) and the log's own pool (made from `connectionString`); a pool given in `pool` is left open.
   */
  close(): Promise<void>;
}

/**
 * A data-modifying statement committed with an append, in the same statement (a CTE before the append): both land or
 * neither. `sql` numbers its parameters from `$8` (the append takes `$1`–`$7`). @internal
 */
export interface AlongStatement {
  readonly sql: string;
  readonly values: readonly unknown[];
}

interface Pending {
  readonly frames: readonly WireFrame[];
  readonly along?: AlongStatement | undefined;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** One run's writer state in this process: queued calls, the streaming message (for compact updates). */
interface RunWriter {
  queue: Pending[];
  flushing: boolean;
  /** The last seq accepted into the queue (checked before merging, so one bad call fails alone). */
  queuedSeq: number;
  snapshot: AssistantMessage | undefined;
  /** A terminal frame was queued. */
  ended: boolean;
}

/**
 * A run-event log on PostgreSQL (`cubepi/worker`). Throws `ConfigurationError` for bad options; connects lazily.
 *
 * ```ts
 * import pg from 'pg';
 * import { createRunEventLog } from 'cubepi/worker';
 * const log = createRunEventLog({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * log.runEvents('run-1', { after: 0 }).subscribe((frame) => console.log(frame.seq, frame.kind));
 * ```
 */
export function createRunEventLog(options: RunEventLogOptions): RunEventLog {
  return new PostgresRunEventLog(options);
}

/** The log as the queue and its workers use it: {@link RunEventLog} and `appendWith`. @internal */
export interface QueueRunEventLog extends RunEventLog {
  /**
   * `appendRunEvents`, and `along` run in the same statement as the append of these frames (written only if they
   * are). Only with a terminal frame last: a run's frames carry at most one.
   */
  appendWith(runId: string, frames: readonly WireFrame[], along: AlongStatement | undefined): Promise<void>;
}

/** {@link createRunEventLog}, typed for the queue. @internal */
export function createQueueRunEventLog(options: RunEventLogOptions): QueueRunEventLog {
  return new PostgresRunEventLog(options);
}

class PostgresRunEventLog implements QueueRunEventLog {
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #tables: RunEventTables;
  readonly #writers = new Map<string, RunWriter>();
  readonly #reader: ReaderContext;
  readonly #listener: RunEventListener;
  #ready: Promise<void> | undefined;
  readonly #ignoreIdleClientError = (): void => {};

  constructor(options: RunEventLogOptions) {
    const schema = options.schema ?? 'public';
    if (!IDENTIFIER.test(schema)) {
      throw new ConfigurationError(`schema must be letters, digits and _ (at most 40), got "${schema}"`);
    }
    const pageSize = options.pageSize ?? 500;
    if (!Number.isSafeInteger(pageSize) || pageSize < 1) {
      throw new ConfigurationError(`pageSize must be a positive integer, got ${pageSize}`);
    }
    const idleMillis = options.listenerIdleMillis ?? 10_000;
    const reconnectMillis = options.listenerReconnectMillis ?? 5_000;
    for (const [name, value] of [
      ['listenerIdleMillis', idleMillis],
      ['listenerReconnectMillis', reconnectMillis],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new ConfigurationError(`${name} must be a non-negative integer, got ${value}`);
      }
    }
    if ((options.pool === undefined) === (options.connectionString === undefined)) {
      throw new ConfigurationError('createRunEventLog needs exactly one of pool and connectionString');
    }
    this.#owned = options.pool === undefined;
    this.#pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString });
    // An idle client's error (a terminated backend) is emitted on the pool after it dropped the client.
    this.#pool.on('error', this.#ignoreIdleClientError);
    this.#tables = runEventTables(schema);
    const pool = this.#pool;
    this.#listener = new RunEventListener({
      // The settings the pool makes its own clients with (pg-pool does `new Client(pool.options)`), its Client class.
      client: () => new (pool.options.Client ?? pg.Client)(pool.options) as pg.Client,
      idleMillis,
      reconnectMillis,
    });
    this.#reader = {
      pool,
      listener: this.#listener,
      tables: this.#tables,
      ready: () => this.migrate(),
      pageSize,
    };
  }

  migrate(): Promise<void> {
    this.#ready ??= migrateRunEvents(this.#pool, this.#tables).catch((error: unknown) => {
      this.#ready = undefined;
      throw new RunEventLogError('database', '', `creating the run-event log failed: ${messageOf(error)}`, error);
    });
    return this.#ready;
  }

  appendRunEvents(runId: string, frames: readonly WireFrame[]): Promise<void> {
    return this.appendWith(runId, frames, undefined);
  }

  appendWith(runId: string, frames: readonly WireFrame[], along: AlongStatement | undefined): Promise<void> {
    if (typeof runId !== 'string' || runId === '') return Promise.reject(new InvalidInputError('runId must be text'));
    if (along !== undefined && frames.at(-1)?.kind === 'event') {
      return Promise.reject(
        new InvalidInputError(`run "${runId}": a statement along an append needs a terminal frame`),
      );
    }
    if (frames.length === 0) return Promise.resolve();
    const writer = this.#writer(runId);
    const problem = checkBatch(frames, writer.queuedSeq);
    if (problem !== undefined) return Promise.reject(new InvalidInputError(`run "${runId}": ${problem}`));
    writer.queuedSeq = frames[frames.length - 1]!.seq;
    if (frames[frames.length - 1]!.kind !== 'event') writer.ended = true;
    return new Promise<void>((resolve, reject) => {
      writer.queue.push({ frames, along, resolve, reject });
      if (!writer.flushing) void this.#flush(runId, writer);
    });
  }

  runEvents(runId: string, options: RunEventsOptions = {}): Observable<WireFrame> {
    return this.readRunEvents(runId, options, {});
  }

  /** {@link runEvents} with test seams. @internal */
  readRunEvents(runId: string, options: RunEventsOptions, hooks: ReaderHooks): Observable<WireFrame> {
    if (typeof runId !== 'string' || runId === '') throw new InvalidInputError('runId must be text');
    const after = options.after ?? 0;
    if (!Number.isSafeInteger(after) || after < 0) {
      throw new InvalidInputError(`after must be a non-negative integer, got ${String(after)}`);
    }
    return readRunEvents(this.#reader, runId, after, hooks);
  }

  async lastSeq(runId: string): Promise<number> {
    await this.migrate();
    const { rows } = await this.#query<{ seq: string | null }>(
      runId,
      `SELECT ${lastSeqSql(this.#tables, '$1')} AS seq`,
      [runId],
    );
    return Number(rows[0]?.seq ?? 0);
  }

  async deleteRunEventsBefore(date: Date): Promise<number> {
    if (!(date instanceof Date) || Number.isNaN(date.getTime())) throw new InvalidInputError('date must be a Date');
    await this.migrate();
    const { batches: b, events: e } = this.#tables;
    // Both formats: a run an older process began has rows in each, and its last frame decides.
    const { rows } = await this.#query<{ runs: string }>(
      '',
      `WITH stored AS (SELECT run_id, appended_at FROM ${b} UNION ALL SELECT run_id, appended_at FROM ${e}),
            old AS (SELECT run_id FROM stored GROUP BY run_id HAVING max(appended_at) < $1),
            gone_b AS (DELETE FROM ${b} USING old WHERE ${b}.run_id = old.run_id RETURNING ${b}.run_id),
            gone_e AS (DELETE FROM ${e} USING old WHERE ${e}.run_id = old.run_id RETURNING ${e}.run_id)
       SELECT count(DISTINCT run_id) AS runs FROM (SELECT run_id FROM gone_b UNION ALL SELECT run_id FROM gone_e) g`,
      [date],
    );
    return Number(rows[0]?.runs ?? 0);
  }

  /** The listener's session (backend pid, listened channels), asked of the server; undefined when closed. @internal */
  listenerSession(): Promise<ListenerSession | undefined> {
    return this.#listener.session();
  }

  async close(): Promise<void> {
    await this.#listener.close();
    this.#pool.off('error', this.#ignoreIdleClientError);
    if (this.#owned) await this.#pool.end();
  }

  #writer(runId: string): RunWriter {
    let writer = this.#writers.get(runId);
    if (writer === undefined) {
      writer = { queue: [], flushing: false, queuedSeq: 0, snapshot: undefined, ended: false };
      this.#writers.set(runId, writer);
    }
    return writer;
  }

  // Writes the queued calls of one run, merged, one statement at a time, until its queue is empty.
  async #flush(runId: string, writer: RunWriter): Promise<void> {
    writer.flushing = true;
    while (writer.queue.length > 0) {
      const batch = writer.queue;
      writer.queue = [];
      const frames = batch.flatMap((pending) => pending.frames);
      const batchRow = encode(frames, writer.snapshot);
      // Only the last call of a batch can carry one (a terminal frame ends the run's calls).
      const along = batch.at(-1)!.along;
      try {
        await this.migrate();
        const append = `SELECT ${this.#tables.append}($1, $2, $3, $4, $5, $6, $7)`;
        await this.#query(runId, along === undefined ? append : `WITH cubepi_along AS (${along.sql}) ${append}`, [
          runId,
          channelOf(this.#tables.schema, runId),
          frames[0]!.seq,
          frames[frames.length - 1]!.seq,
          batchRow.firstBase,
          frames[frames.length - 1]!.kind !== 'event',
          batchRow.payload,
          ...(along?.values ?? []),
        ]);
        writer.snapshot = batchRow.snapshot;
        for (const pending of batch) pending.resolve();
      } catch (error) {
        // The calls queued behind this one are refused unwritten: written, they would follow a gap when this one did
        // not land (a lost connection leaves that unknown). Their caller appends again from the stored last seq, in
        // order: what the table holds decides which seq comes next (the next update goes whole).
        const behind = writer.queue;
        writer.queue = [];
        writer.snapshot = undefined;
        writer.queuedSeq = 0;
        writer.ended = false;
        for (const pending of batch) pending.reject(error);
        const refused = new RunEventLogError(
          'seq_order',
          runId,
          `run "${runId}": not written, the append before it (from seq ${frames[0]!.seq}) failed`,
          error,
        );
        for (const pending of behind) pending.reject(refused);
      }
    }
    writer.flushing = false;
    // The run ended: this process keeps nothing of it (a later call starts afresh, and the table refuses it).
    if (writer.ended) this.#writers.delete(runId);
  }

  async #query<R extends pg.QueryResultRow>(
    runId: string,
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.#pool.query<R>(text, values);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === SEQ_ORDER) throw new RunEventLogError('seq_order', runId, messageOf(error), error);
      if (code === RUN_ENDED) throw new RunEventLogError('run_ended', runId, messageOf(error), error);
      throw new RunEventLogError('database', runId, `run-event log: ${messageOf(error)}`, error);
    }
  }
}

/**
 * Why `frames` cannot follow seq `previous` (seqs consecutive and after it, a terminal frame only last), else
 * undefined.
 */
function checkBatch(frames: readonly WireFrame[], previous: number): string | undefined {
  let last = previous;
  for (let i = 0; i < frames.length; i++) {
    const frame = frames[i]!;
    if (!Number.isSafeInteger(frame.seq) || frame.seq <= last) {
      return `frame seq ${String(frame.seq)} is not after seq ${last}`;
    }
    if (i > 0 && frame.seq !== last + 1) return `frame seq ${frame.seq} does not follow seq ${last} (a gap)`;
    if (frame.kind !== 'event' && i !== frames.length - 1)
      return `a ${frame.kind} frame (seq ${frame.seq}) is not last`;
    last = frame.seq;
  }
  return undefined;
}

/**
 * The row of `frames`: its payload (each frame's wire JSON, compact when it grows the previous snapshot, and flags),
 * the seq of its first frame that carries a whole snapshot (null: none), and the snapshot after it.
 */
function encode(
  frames: readonly WireFrame[],
  previous: AssistantMessage | undefined,
): { payload: Buffer; firstBase: number | null; snapshot: AssistantMessage | undefined } {
  const stored: StoredFrame[] = [];
  let snapshot = previous;
  let firstBase: number | null = null;
  for (const frame of frames) {
    let json: string;
    let compact = false;
    let base = false;
    if (frame.kind !== 'event') json = frameJson(frame);
    else {
      const event = frame.event;
      const small = compactUpdate(event, snapshot);
      compact = small !== undefined;
      json = JSON.stringify(small ?? event);
      // The same bookkeeping as the server's RunLog: what a compact update grows.
      if (event.type === 'message_update') {
        snapshot = event.message;
        base = !compact;
      } else if (event.type === 'message_start' && event.message.role === 'assistant') {
        snapshot = event.message;
        base = true;
      } else if (event.type === 'message_end') snapshot = undefined;
    }
    if (base && firstBase === null) firstBase = frame.seq;
    stored.push({ json, compact, base });
  }
  return { payload: encodeBatch(stored), firstBase, snapshot };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
