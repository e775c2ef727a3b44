/**
 * `createRunQueue`: agent runs queued on PostgreSQL through pg-boss, taken by any worker, cancelled and streamed from
 * any process. See `docs/scale-out.md`.
 * @module
 */
import { isPrincipal, type Principal } from '../types/principal.js';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ConstructorOptions, PgBoss } from 'pg-boss';
import type * as PgBossModule from 'pg-boss';
import { Observable } from 'rxjs';
import { threadIdProblem } from '../checkpoint/check-arguments.js';
import { checkIdempotencyKey } from '../agent/input-keys.js';
import { ConfigurationError, InvalidInputError } from '../types/errors.js';
import type { RunOutcome, SequencedEvent } from '../types/agent-events.js';
import type { ApprovalAnswer } from '../types/approval.js';
import type { Message } from '../types/messages.js';
import type { WireError, WireFrame } from '../wire/frames.js';
import { RunQueueError } from './errors.js';
import { createQueueRunEventLog, type QueueRunEventLog, type RunEventLog } from './run-event-log.js';
import { inTransaction } from './pg-transaction.js';
import { IDENTIFIER, runEventTables, type RunEventTables } from './run-events-schema.js';
import { migrateRuns, runTables, type RunTables } from './runs-schema.js';

/** Options of {@link createRunQueue}: a pool or a connection string (exactly one). */
export interface RunQueueOptions {
  /**
   * A pool for the queue's own statements and the run-event log's (not ended by `close`). pg-boss opens a small pool
   * of its own with the same connection settings (`pool.options`), and one connection that LISTENs for new jobs.
   */
  readonly pool?: pg.Pool | undefined;
  /** A connection string: the queue makes its pool from it (ended by `close`), and pg-boss its own. */
  readonly connectionString?: string | undefined;
  /** The schema of the runs table and the run-event log (created if missing; default `public`). */
  readonly schema?: string | undefined;
  /** pg-boss's schema (default `pgboss`). */
  readonly bossSchema?: string | undefined;
  /** The pg-boss queue's name (default `cubepi-runs`). */
  readonly queueName?: string | undefined;
  /**
   * How long a worker may go silent before its runs are taken from it (pg-boss's job heartbeat; at least 10, default
   * 10 seconds). A run on a killed worker is retried elsewhere after about this long plus `superviseIntervalSeconds`.
   */
  readonly heartbeatSeconds?: number | undefined;
  /** How often pg-boss looks for silent workers (default 2 seconds). */
  readonly superviseIntervalSeconds?: number | undefined;
  /**
   * How many times a run whose attempt was lost is taken again (default 3): its worker died or lost its lease, or
   * PostgreSQL failed under it. A run lost more often ends with a `run_error` frame (`code` `worker_lost`, the last
   * loss's cause in its message) instead of blocking its thread.
   */
  readonly retryLimit?: number | undefined;
  /** Connections in pg-boss's pool (default 4). */
  readonly bossPoolSize?: number | undefined;
}

/** What {@link RunQueue.enqueue} runs: a prompt, or the answer to an approval request of a suspended run. */
export type RunRequest = (
  | {
      readonly threadId: string;
      /** The name of the agent factory a worker builds the thread's agent with (`startWorker({ agents })`). */
      readonly agent: string;
      /** What `agent.prompt$(input)` takes: text, a message, or messages. */
      readonly input: string | Message | readonly Message[];
      /** Who the run acts for: stored with the run; the worker passes it to the agent factory and the run options. */
      readonly principal?: Principal | undefined;
      /** Whose the run is (the thread owner's `Principal.id`; default: `principal.id`, else none). */
      readonly owner?: string | null | undefined;
    }
  | {
      readonly threadId: string;
      readonly agent: string;
      /** `agent.respond$(requestId, answer)`: the answer is stored, and the last one of its batch resumes the run. */
      readonly respond: { readonly requestId: string; readonly answer: ApprovalAnswer };
    }
) & {
  /** Who the run acts for: stored with the run; the worker passes it to the agent factory and the run options. */
  readonly principal?: Principal | undefined;
  /** Whose the run is (the thread owner's `Principal.id`; default: `principal.id`, else none). */
  readonly owner?: string | null | undefined;
  /**
   * The run's id (default: a fresh UUID): give it when something must be keyed by the run before it is queued (the
   * limit check of `createQueueServer` holds the principal's run slot under it). A UUID; an id in use is refused.
   */
  readonly runId?: string | undefined;
  /**
   * Makes the request idempotent on its thread: a second `enqueue` on the same thread with the same key queues
   * nothing and resolves with the first run's id (a unique index on `(thread_id, idempotency_key)` decides, so two API
   * nodes racing with the same key get the same run). Non-empty text of at most 256 characters.
   */
  readonly idempotencyKey?: string | undefined;
};

/** Where a queued run is. */
export type QueuedRunStatus = 'queued' | 'running' | 'ended';

/** A run as the queue knows it (`RunQueue.run`). */
export interface QueuedRun {
  readonly runId: string;
  readonly threadId: string;
  readonly agent: string;
  readonly kind: 'prompt' | 'respond';
  readonly status: QueuedRunStatus;
  /** How it ended: the run's `agent_end` outcome, or `error` when it failed as a whole (see `error`). */
  readonly outcome: RunOutcome | 'error' | undefined;
  readonly error: WireError | undefined;
  /** How many times a worker took it (more than 1: a worker died, or lost its lease, while running it). */
  readonly attempts: number;
  readonly cancelRequested: boolean;
  /** The worker that took it last (its `workerId`). */
  readonly worker: string | undefined;
  readonly createdAt: Date;
  readonly startedAt: Date | undefined;
  readonly endedAt: Date | undefined;
  /** How many messages the thread had when the run started: the run's own messages come after. */
  readonly baseCount: number | undefined;
  /** Whose the run is (`RunRequest.owner`): a `Principal.id`, or `null` for a run nobody owns. */
  readonly owner: string | null;
  /** Who the run acts for (`RunRequest.principal`), if anyone. */
  readonly principal: Principal | undefined;
}

/** Options of {@link RunQueue.events} and {@link RunQueue.frames}. */
export interface RunReadOptions {
  /** Read after this seq (the `Last-Event-ID` of a resuming client); default 0, from the start. */
  readonly after?: number | undefined;
  /** Read from this seq on (`after: fromSeq - 1`); give one of `after` and `fromSeq`. */
  readonly fromSeq?: number | undefined;
}

/**
 * Runs queued on PostgreSQL (`createRunQueue`). Every process of an application makes one: API nodes enqueue, cancel
 * and read; workers (`startWorker`) take runs from it. Methods connect lazily (creating the tables and pg-boss's
 * schema on first use) and reject with {@link RunQueueError} `database` when PostgreSQL fails.
 */
export interface RunQueue {
  /**
   * Queues a run on `request.threadId` and resolves with its run id once the run is committed (row and job in one
   * transaction: an id returned is never lost). Only a worker that has `request.agent` takes it; a run for an agent no
   * worker has waits (`status` `queued`) until one starts, or until it is cancelled. A thread's runs run one at a time,
   * in the order they were enqueued, whichever agents they name: a run waits for the thread's earlier runs to end.
   * Rejects with `InvalidInputError` for a bad request (nothing queued).
   */
  enqueue(request: RunRequest): Promise<string>;
  /**
   * Cancels a run from any process: a queued run ends at once (its stream gets its terminal `end` frame and it never
   * runs); a running one is cancelled on its worker like `RunOptions.signal` does (its provider request aborted, its
   * tools' signals fired; its closing events still stream). Resolves `true` when the run was queued or running,
   * `false` when it had ended; rejects with {@link RunQueueError} `unknown_run`.
   */
  cancel(runId: string, reason?: string): Promise<boolean>;
  /**
   * The run's events from any process: the stored ones after `after` (replay), then the live tail, each once, in seq
   * order; completes when the run ends, fails with `RemoteRunError`-like {@link RunQueueError} `run_failed` when the
   * run failed as a whole. Cold; unsubscribing stops reading. Errors with `unknown_run` for a run never enqueued.
   */
  events(runId: string, options?: RunReadOptions): Observable<SequencedEvent>;
  /** The same stream as wire frames (the terminal `end`/`error` frame included): what a server relays. */
  frames(runId: string, options?: RunReadOptions): Observable<WireFrame>;
  /** The run's record, or `undefined` for an unknown id. */
  run(runId: string): Promise<QueuedRun | undefined>;
  /** The thread's runs, newest first (at most `limit`, default 20). */
  threadRuns(threadId: string, options?: { readonly limit?: number | undefined }): Promise<QueuedRun[]>;
  /** The thread's oldest run that has not ended (the running one, else the next to run), if any. */
  activeRun(threadId: string): Promise<QueuedRun | undefined>;
  /**
   * Retention: deletes the runs that ended before `date` — their rows and their events — and resolves with how many.
   * Queued and running runs are never deleted. (pg-boss deletes its completed jobs itself, after 7 days.)
   */
  deleteRunsBefore(date: Date): Promise<number>;
  /** The run-event log the queue's runs are streamed through. */
  readonly log: RunEventLog;
  /** Creates the tables and starts pg-boss now (optional: the first call does it). */
  start(): Promise<void>;
  /** Stops pg-boss and ends the pools the queue made (a pool given in `pool` is left open). */
  close(): Promise<void>;
}

/** The data of a run's pg-boss job. @internal */
export interface RunJobData {
  readonly runId: string;
  readonly threadId: string;
  readonly agent: string;
}

/** What `startWorker` needs of a queue. @internal */
export interface QueueInternals {
  readonly pool: pg.Pool;
  readonly tables: RunTables;
  readonly queueName: string;
  readonly retryLimit: number;
  /** pg-boss's supervise interval: how often a worker looks for runs whose jobs failed for good. */
  readonly superviseIntervalSeconds: number;
  readonly connection: pg.ClientConfig;
  readonly log: QueueRunEventLog;
  /** The run-event log's tables (both formats), qualified. */
  readonly logTables: RunEventTables;
  /** The channel pg-boss NOTIFYs when a job of a notify-enabled queue is sent (payload: the queue's name). */
  readonly bossChannel: string;
  boss(): Promise<PgBoss>;
  /** The number of an agent name (numbered on first use): the priority its runs' jobs carry. */
  agentNumber(name: string): Promise<number>;
  /** Gives the jobs of runs an older version queued (without an agent number) their agent's number. */
  relabelRuns(): Promise<void>;
}

const internals = new WeakMap<RunQueue, QueueInternals>();

/** @internal */
export function queueInternals(queue: RunQueue): QueueInternals {
  const found = internals.get(queue);
  if (found === undefined) throw new ConfigurationError('startWorker: `queue` must be made by createRunQueue');
  return found;
}

/**
 * Makes a run queue on PostgreSQL, built on pg-boss (an optional peer dependency of `cubepi/worker`: install
 * `pg-boss`; it declares Node.js 22.12, and works and is tested on Node.js 20, where npm warns about it: see
 * `docs/install.md`). Throws `ConfigurationError` for bad options; connects lazily.
 *
 * ```ts
 * import { createRunQueue } from 'cubepi/worker';
 * const queue = createRunQueue({ connectionString: process.env.DATABASE_URL });
 * const runId = await queue.enqueue({ threadId: 'user-42', agent: 'support', input: 'Where is my order?' });
 * queue.events(runId).subscribe((event) => console.log(event.seq, event.type));
 * ```
 */
export function createRunQueue(options: RunQueueOptions): RunQueue {
  if (typeof options !== 'object' || options === null) throw new ConfigurationError('createRunQueue: options needed');
  if ((options.pool === undefined) === (options.connectionString === undefined)) {
    throw new ConfigurationError('createRunQueue needs exactly one of pool and connectionString');
  }
  const schema = options.schema ?? 'public';
  const bossSchema = options.bossSchema ?? 'pgboss';
  for (const [name, value] of [
    ['schema', schema],
    ['bossSchema', bossSchema],
  ] as const) {
    if (!IDENTIFIER.test(value)) {
      throw new ConfigurationError(
        `createRunQueue: ${name} must be letters, digits and _ (at most 40), got "${value}"`,
      );
    }
  }
  const queueName = options.queueName ?? 'cubepi-runs';
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(queueName)) {
    throw new ConfigurationError(`createRunQueue: queueName must be letters, digits, _ . -, got "${queueName}"`);
  }
  const integer = (name: string, value: number | undefined, min: number, fallback: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isSafeInteger(value) || value < min) {
      throw new ConfigurationError(`createRunQueue: ${name} must be an integer >= ${min}, got ${String(value)}`);
    }
    return value;
  };
  const heartbeatSeconds = integer('heartbeatSeconds', options.heartbeatSeconds, 10, 10);
  const superviseIntervalSeconds = integer('superviseIntervalSeconds', options.superviseIntervalSeconds, 1, 2);
  const retryLimit = integer('retryLimit', options.retryLimit, 0, 3);
  const bossPoolSize = integer('bossPoolSize', options.bossPoolSize, 2, 4);

  const owned = options.pool === undefined;
  const pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString });
  const ignoreIdleError = (): void => {};
  pool.on('error', ignoreIdleError);
  const connection = connectionOf(pool, options.connectionString);
  const tables = runTables(schema);
  const log = createQueueRunEventLog({ pool, schema });

  let bossPromise: Promise<PgBoss> | undefined;
  let closed = false;
  const boss = (): Promise<PgBoss> => {
    if (closed) return Promise.reject(new RunQueueError('closed', '', 'the run queue is closed'));
    bossPromise ??= (async () => {
      await migrateRuns(pool, tables);
      await log.migrate();
      const { PgBoss } = await loadPgBoss();
      const instance = new PgBoss({
        ...(connection as ConstructorOptions),
        schema: bossSchema,
        max: bossPoolSize,
        // No LISTEN connection of pg-boss's own: every NOTIFY of the database is read by every LISTENing connection,
        // so each costs PostgreSQL a transaction per listener. A process that only enqueues needs none; a worker
        // hears pg-boss's channel on the connection it LISTENs for cancels on (startWorker), and wakes its loops.
        // `send` still NOTIFYs (the queue is created with `notify: true`).
        useListenNotify: false,
        supervise: true,
        schedule: false,
        superviseIntervalSeconds,
        monitorIntervalSeconds: superviseIntervalSeconds,
      });
      // pg-boss reports background failures (a lost connection it recovers from) as events; without a listener an
      // 'error' event would throw. They surface again through the calls that fail.
      instance.on('error', () => {});
      await instance.start();
      await ensureQueue(instance, queueName, heartbeatSeconds, retryLimit);
      await relabel(instance);
      return instance;
    })().catch((error: unknown) => {
      bossPromise = undefined;
      throw error instanceof RunQueueError || error instanceof ConfigurationError
        ? error
        : new RunQueueError('database', '', `starting the run queue failed: ${messageOf(error)}`, error);
    });
    return bossPromise;
  };

  // An agent's number never changes once given, so each process asks once per name.
  const agentNumbers = new Map<string, Promise<number>>();
  const agentNumber = (name: string): Promise<number> => {
    let found = agentNumbers.get(name);
    if (found === undefined) {
      found = (async () => {
        await pool.query(`INSERT INTO ${tables.agents} (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [name]);
        // A statement of its own: it sees the row a concurrent insert of the same name committed.
        const { rows } = await pool.query<{ number: number }>(`SELECT number FROM ${tables.agents} WHERE name = $1`, [
          name,
        ]);
        return rows[0]!.number;
      })();
      agentNumbers.set(name, found);
      found.catch(() => agentNumbers.delete(name));
    }
    return found;
  };

  /**
   * Runs queued by a version that sent every job with priority 0 (all agents in one fetch): their queued jobs get
   * their agent's number, so the workers that have the agent take them. A job that is active (an older worker runs
   * it) cannot be changed and is left for the next call: when its worker dies, the retry waits for that call.
   */
  async function relabel(instance: PgBoss): Promise<void> {
    const { rows } = await pool.query<{ run_id: string; agent: string }>(
      `SELECT run_id, agent FROM ${tables.runs} WHERE NOT routed AND status <> 'ended' ORDER BY created_at`,
    );
    for (const row of rows) {
      const priority = await agentNumber(row.agent);
      const { updated } = await instance.update(queueName, undefined, { id: row.run_id, priority });
      if (updated === 1) await pool.query(`UPDATE ${tables.runs} SET routed = true WHERE run_id = $1`, [row.run_id]);
    }
  }

  const database = (runId: string, what: string) => (error: unknown) => {
    if (error instanceof RunQueueError || error instanceof InvalidInputError) throw error;
    throw new RunQueueError('database', runId, `${what} failed: ${messageOf(error)}`, error);
  };

  async function readRun(runId: string): Promise<QueuedRun | undefined> {
    await boss();
    const { rows } = await pool.query<RunRow>(`SELECT * FROM ${tables.runs} WHERE run_id = $1`, [runId]);
    return rows[0] === undefined ? undefined : toQueuedRun(rows[0]);
  }

  const queue: RunQueue = {
    log,
    start: async () => {
      await boss();
    },

    async enqueue(request) {
      const checked = checkRequest(request);
      const instance = await boss();
      const runId = checked.runId ?? randomUUID();
      const priority = await agentNumber(checked.agent).catch(database(runId, 'enqueue'));
      const key = checked.idempotencyKey;
      return inTransaction(pool, async (client) => {
        // With a key, the unique index on (thread_id, idempotency_key) decides: a duplicate inserts nothing and is
        // answered with the run that holds the key (also when another node inserted it a moment ago).
        const inserted = await client.query(
          `INSERT INTO ${tables.runs} (run_id, thread_id, agent, request, routed, owner, principal, idempotency_key)
           VALUES ($1, $2, $3, $4, true, $5, $6, $7)
           ${key === undefined ? '' : 'ON CONFLICT (thread_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING'}`,
          [
            runId,
            checked.threadId,
            checked.agent,
            JSON.stringify(checked.request),
            checked.owner,
            checked.principal === undefined ? null : JSON.stringify(checked.principal),
            key ?? null,
          ],
        );
        if (inserted.rowCount === 0) {
          const { rows } = await client.query<{ run_id: string }>(
            `SELECT run_id FROM ${tables.runs} WHERE thread_id = $1 AND idempotency_key = $2`,
            [checked.threadId, key],
          );
          return rows[0]!.run_id;
        }
        const data: RunJobData = { runId, threadId: checked.threadId, agent: checked.agent };
        // The agent's number as the job's priority: workers fetch only their agents' numbers. The queue's
        // key_strict_fifo picks each thread's head among all its jobs, whatever their priority, so a thread's run
        // waits for its earlier runs whichever agents they name.
        await instance.send(queueName, data, {
          id: runId,
          priority,
          singletonKey: checked.threadId,
          db: { executeSql: (text, values) => client.query(text, values) },
        });
        return runId;
      }).catch(database(runId, 'enqueue'));
    },

    async cancel(runId, reason = 'cancelled') {
      if (typeof runId !== 'string' || runId === '') throw new InvalidInputError('runId must be text');
      if (typeof reason !== 'string') throw new InvalidInputError('reason must be text');
      const instance = await boss();
      const fail = database(runId, 'cancel');
      // Not taken yet: it ends here (the row's lock decides between this and a worker taking it at the same moment).
      const ended = await pool
        .query(
          `UPDATE ${tables.runs} SET status = 'ended', outcome = 'cancelled', ended_at = clock_timestamp(),
             cancel_requested_at = clock_timestamp(), error = $2
           WHERE run_id = $1 AND status = 'queued'`,
          [runId, JSON.stringify({ name: 'CancelledError', message: reason })],
        )
        .catch(fail);
      if (ended.rowCount === 1) {
        // Row, stream, job: a process dying in between leaves the job, and the worker that takes it finishes the rest.
        await log.appendRunEvents(runId, [{ kind: 'end', seq: 1, runId }]).catch(fail);
        await instance.cancel(queueName, runId).catch(fail);
        return true;
      }
      // Running: its worker listens on the channel and cancels it.
      const asked = await pool
        .query(
          `WITH asked AS (
             UPDATE ${tables.runs} SET cancel_requested_at = coalesce(cancel_requested_at, clock_timestamp())
             WHERE run_id = $1 AND status = 'running' RETURNING run_id
           )
           SELECT pg_notify($2, $3) FROM asked`,
          [runId, tables.cancelChannel, JSON.stringify({ runId, reason })],
        )
        .catch(fail);
      if (asked.rowCount === 1) return true;
      const { rowCount } = await pool.query(`SELECT 1 FROM ${tables.runs} WHERE run_id = $1`, [runId]).catch(fail);
      if (rowCount === 0) throw new RunQueueError('unknown_run', runId, `no run ${runId}`);
      return false;
    },

    frames(runId, options = {}) {
      const after = readPosition(options);
      return new Observable<WireFrame>((subscriber) => {
        let inner: { unsubscribe(): void } | undefined;
        let stopped = false;
        readRun(runId).then(
          (run) => {
            if (stopped) return;
            if (run === undefined) {
              subscriber.error(new RunQueueError('unknown_run', runId, `no run ${runId}`));
              return;
            }
            inner = log.runEvents(runId, { after }).subscribe(subscriber);
          },
          (error: unknown) => subscriber.error(error),
        );
        return () => {
          stopped = true;
          inner?.unsubscribe();
        };
      });
    },

    events(runId, options = {}) {
      const frames = queue.frames(runId, options);
      return new Observable<SequencedEvent>((subscriber) =>
        frames.subscribe({
          next: (frame) => {
            if (frame.kind === 'event') subscriber.next(frame.event);
            else if (frame.kind === 'end') subscriber.complete();
            else if (frame.kind === 'error') {
              subscriber.error(
                new RunQueueError('run_failed', runId, `run ${runId} failed: ${frame.error.message}`, frame.error),
              );
            } else {
              // A queue never writes `lost` (only createAgentServer does): ended all the same, as a failure.
              subscriber.error(new RunQueueError('run_failed', runId, `run ${runId} was lost`));
            }
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => subscriber.complete(),
        }),
      );
    },

    run: (runId) => readRun(runId).catch(database(runId, 'reading the run')),

    async threadRuns(threadId, options = {}) {
      const limit = options.limit ?? 20;
      if (!Number.isSafeInteger(limit) || limit < 1) throw new InvalidInputError('limit must be a positive integer');
      await boss();
      const { rows } = await pool
        .query<RunRow>(`SELECT * FROM ${tables.runs} WHERE thread_id = $1 ORDER BY created_at DESC LIMIT $2`, [
          threadId,
          limit,
        ])
        .catch(database('', 'reading the runs'));
      return rows.map(toQueuedRun);
    },

    async activeRun(threadId) {
      await boss();
      const { rows } = await pool
        .query<RunRow>(
          `SELECT * FROM ${tables.runs} WHERE thread_id = $1 AND status <> 'ended' ORDER BY created_at LIMIT 1`,
          [threadId],
        )
        .catch(database('', 'reading the runs'));
      return rows[0] === undefined ? undefined : toQueuedRun(rows[0]);
    },

    async deleteRunsBefore(date) {
      if (!(date instanceof Date) || Number.isNaN(date.getTime())) throw new InvalidInputError('date must be a Date');
      await boss();
      const fail = database('', 'deleting runs');
      const { rows } = await pool
        .query<{ run_id: string }>(
          `DELETE FROM ${tables.runs} WHERE status = 'ended' AND ended_at < $1 RETURNING run_id`,
          [date],
        )
        .catch(fail);
      if (rows.length > 0) {
        const { batches, events } = runEventTables(schema);
        await pool
          .query(
            `WITH gone AS (DELETE FROM ${batches} WHERE run_id = ANY($1)) DELETE FROM ${events} WHERE run_id = ANY($1)`,
            [rows.map((r) => r.run_id)],
          )
          .catch(fail);
      }
      return rows.length;
    },

    async close() {
      if (closed) return;
      closed = true;
      const started = bossPromise;
      bossPromise = undefined;
      if (started !== undefined) {
        const instance = await started.catch(() => undefined);
        await instance?.stop({ graceful: false, timeout: 1000 }).catch(() => {});
      }
      await log.close();
      pool.off('error', ignoreIdleError);
      if (owned) await pool.end();
    },
  };

  internals.set(queue, {
    pool,
    tables,
    queueName,
    retryLimit,
    superviseIntervalSeconds,
    connection,
    log,
    logTables: runEventTables(schema),
    bossChannel: bossNotifyChannel(bossSchema),
    boss,
    agentNumber,
    relabelRuns: async () => relabel(await boss()),
  });
  return queue;
}

/** A row of the runs table. @internal */
export interface RunRow {
  run_id: string;
  thread_id: string;
  agent: string;
  request: { kind: 'prompt'; input: unknown } | { kind: 'respond'; requestId: string; answer: ApprovalAnswer };
  status: QueuedRunStatus;
  outcome: RunOutcome | 'error' | null;
  error: WireError | null;
  attempts: number;
  base_count: number | null;
  worker: string | null;
  cancel_requested_at: Date | null;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  owner: string | null;
  principal: Principal | null;
}

function toQueuedRun(row: RunRow): QueuedRun {
  return {
    runId: row.run_id,
    threadId: row.thread_id,
    agent: row.agent,
    kind: row.request.kind,
    status: row.status,
    outcome: row.outcome ?? undefined,
    error: row.error ?? undefined,
    attempts: row.attempts,
    cancelRequested: row.cancel_requested_at !== null,
    worker: row.worker ?? undefined,
    createdAt: row.created_at,
    startedAt: row.started_at ?? undefined,
    endedAt: row.ended_at ?? undefined,
    baseCount: row.base_count ?? undefined,
    owner: row.owner,
    principal: row.principal ?? undefined,
  };
}

interface CheckedRequest {
  readonly threadId: string;
  readonly agent: string;
  readonly request: RunRow['request'];
  readonly principal: Principal | undefined;
  readonly owner: string | null;
  readonly runId: string | undefined;
  readonly idempotencyKey: string | undefined;
}

function checkRequest(request: RunRequest): CheckedRequest {
  if (typeof request !== 'object' || request === null) throw new InvalidInputError('enqueue: expected a request');
  const runId = request.runId;
  if (runId !== undefined && !(typeof runId === 'string' && UUID.test(runId))) {
    throw new InvalidInputError('enqueue: `runId` must be a UUID');
  }
  const who = checkWho(request);
  const key = request.idempotencyKey;
  const idempotencyKey = key === undefined ? undefined : checkIdempotencyKey(key, 'enqueue');
  return { ...checkWhat(request), ...who, runId, idempotencyKey };
}

/** The principal and owner of a request, checked (`InvalidInputError` for a principal without an id). */
function checkWho(request: RunRequest): { principal: Principal | undefined; owner: string | null } {
  const { principal, owner } = request;
  if (principal !== undefined && !isPrincipal(principal)) {
    throw new InvalidInputError('enqueue: `principal` must be a Principal ({ id: a non-empty string })');
  }
  if (owner !== undefined && owner !== null && (typeof owner !== 'string' || owner === '')) {
    throw new InvalidInputError('enqueue: `owner` must be a principal id (a non-empty string) or null');
  }
  return { principal, owner: owner === undefined ? (principal?.id ?? null) : owner };
}

function checkWhat(request: RunRequest): { threadId: string; agent: string; request: RunRow['request'] } {
  const problem = threadIdProblem(request.threadId);
  if (problem !== undefined) throw new InvalidInputError(`enqueue: ${problem}`);
  if (typeof request.agent !== 'string' || request.agent === '') {
    throw new InvalidInputError('enqueue: `agent` must name an agent of the workers (startWorker({ agents }))');
  }
  if ('respond' in request && request.respond !== undefined) {
    const { requestId, answer } = request.respond;
    if (typeof requestId !== 'string' || requestId === '') {
      throw new InvalidInputError('enqueue: `respond.requestId` must be text');
    }
    if (typeof answer !== 'object' || answer === null) {
      throw new InvalidInputError('enqueue: `respond.answer` must be { approve: true }, { deny } or { edit }');
    }
    return { threadId: request.threadId, agent: request.agent, request: { kind: 'respond', requestId, answer } };
  }
  const input = (request as { input?: unknown }).input;
  const validInput = typeof input === 'string' || Array.isArray(input) || (typeof input === 'object' && input !== null);
  if (!validInput) throw new InvalidInputError('enqueue: `input` must be text, a message or messages');
  return { threadId: request.threadId, agent: request.agent, request: { kind: 'prompt', input } };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function readPosition(options: RunReadOptions): number {
  if (options.after !== undefined && options.fromSeq !== undefined) {
    throw new InvalidInputError('give one of `after` and `fromSeq`');
  }
  const after = options.fromSeq !== undefined ? options.fromSeq - 1 : (options.after ?? 0);
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new InvalidInputError(`the position must be a non-negative integer seq, got ${String(after)}`);
  }
  return after;
}

/** The connection settings pg-boss and the worker's listener use: the pool's own (its application_name too). */
function connectionOf(pool: pg.Pool, connectionString: string | undefined): pg.ClientConfig {
  if (connectionString !== undefined) return { connectionString };
  const o = (pool as unknown as { options: pg.PoolConfig }).options;
  const config: pg.ClientConfig = {};
  const keys = ['connectionString', 'host', 'port', 'database', 'user', 'password', 'ssl'] as const;
  for (const key of [...keys, 'application_name', 'connectionTimeoutMillis'] as const) {
    if (o[key] !== undefined) (config as Record<string, unknown>)[key] = o[key];
  }
  return config;
}

async function ensureQueue(boss: PgBoss, name: string, heartbeatSeconds: number, retryLimit: number): Promise<void> {
  // Several processes start at once: create, and accept that another one did.
  if ((await boss.getQueue(name)) !== null) return;
  try {
    await boss.createQueue(name, {
      policy: 'key_strict_fifo',
      notify: true,
      heartbeatSeconds,
      retryLimit,
      retryDelay: 0,
      // A run may take long; the heartbeat, not the expiry, notices a dead worker.
      expireInSeconds: 24 * 3600,
    });
  } catch (error) {
    if ((await boss.getQueue(name)) === null) throw error;
  }
}

async function loadPgBoss(): Promise<typeof PgBossModule> {
  try {
    return await import('pg-boss');
  } catch (error) {
    throw new ConfigurationError(
      'createRunQueue needs the pg-boss package (an optional peer dependency of cubepi/worker): npm install pg-boss',
      { cause: error },
    );
  }
}

/**
 * The channel pg-boss 12 NOTIFYs on for a job sent to a notify-enabled queue: `'pgboss_' || left(encode(sha224(schema),
 * 'hex'), 24)` (its `notifyChannelSql`; `schema` is an IDENTIFIER here, so never quoted). test/worker/queue-writes.test.ts
 * holds this to what pg-boss sends (an idle worker woken by it).
 */
function bossNotifyChannel(bossSchema: string): string {
  return `pgboss_${createHash('sha224').update(bossSchema).digest('hex').slice(0, 24)}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
