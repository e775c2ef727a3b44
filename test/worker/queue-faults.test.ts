// The run queue when PostgreSQL terminates its connections (issue 36): a failure is a RunQueueError `database`, the
// process lives (an 'error' event nobody hears is thrown from the socket callback: `uncaughtException`, which in a
// plain Node process is the crash), nothing is half-written, and the next call works. Only the backends of the test's
// own connections are terminated, found by their application_name (the schema's name): other files share the server.
import type pg from 'pg';
import { lastValueFrom, toArray, type Observable } from 'rxjs';
import { ConfigurationError } from 'cubepi';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createRunEventLog,
  createRunQueue,
  RunEventLogError,
  RunQueueError,
  startWorker,
  type RunQueue,
  type RunWorker,
  type WireFrame,
} from 'cubepi/worker';
import { channelOf } from '../../src/worker/run-events-schema.js';
import {
  dropSchema,
  pgAvailable,
  requirePostgres,
  terminateBackendWhileWaiting,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';
import { createEffectsTable, queueAgents } from './fixtures/queue-agents.js';
import { random } from '../cutting-fetch.js';
import { plain, scriptedRun } from './run-frames.js';
import { startPgProxy, type TcpProxy } from './tcp-proxy.js';

requirePostgres();

/** A prompt whose run streams for seconds at `delayMs: 30` (the model echoes it in its tool call and its answer). */
const LONG_PROMPT = `a long one ${Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ')}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// What would have crashed the process during the test (messages only: a pg error drags its whole client along).
const crashes: string[] = [];
const onCrash = (error: unknown) => crashes.push(error instanceof Error ? error.message : String(error));

describe.skipIf(!pgAvailable)('run queue, connections terminated', () => {
  let admin: pg.Pool;
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;
  const workers: RunWorker[] = [];
  const proxies: TcpProxy[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeEach(() => {
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    schema = uniqueSchema('qf');
    admin = testPool({ max: 3 });
    pool = testPool({ max: 6, application_name: schema });
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.stop({ graceMs: 0 });
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await queue.close();
    for (const proxy of proxies.splice(0)) await proxy.close();
    await pool.end();
    await dropSchema(admin, schema);
    await dropSchema(admin, `${schema}_boss`);
    await admin.end();
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    crashes.length = 0;
  });

  const terminateWhileWaiting = (lockSql: string, operation: () => Promise<unknown>) =>
    terminateBackendWhileWaiting(admin, schema, lockSql, operation);

  async function waitUntil(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
    const until = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
      await sleep(50);
    }
  }

  /**
   * Waits until the pool holds no checked-out client (the one whose backend was terminated has been released and
   * destroyed: the window in which its 'error' event crashed the process is over), then makes one round trip so any
   * event of the closed socket still queued is delivered first.
   */
  async function settle(): Promise<void> {
    await waitUntil(
      'every client of the pool is checked in',
      async () => pool.totalCount === pool.idleCount && pool.waitingCount === 0,
    );
    await pool.query('SELECT 1');
  }

  it('enqueue whose connection is terminated inside its transaction rejects with RunQueueError database; the process lives, nothing is half-written', async () => {
    await queue.start();
    const error = await terminateWhileWaiting(`LOCK TABLE "${schema}".cubepi_runs IN ACCESS EXCLUSIVE MODE`, () =>
      queue.enqueue({ threadId: 't', agent: 'notes', input: 'hello' }),
    );
    await settle();
    expect(crashes).toEqual([]);
    expect(error).toBeInstanceOf(RunQueueError);
    expect(error).toMatchObject({ reason: 'database' });
    // Nothing of it stayed: no row, no job.
    const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".cubepi_runs`);
    expect(rows[0]!.n).toBe(0);
    const jobs = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}_boss".job`);
    expect(jobs.rows[0]!.n).toBe(0);
    // The next one works.
    const runId = await queue.enqueue({ threadId: 't', agent: 'notes', input: 'again' });
    expect(await queue.run(runId)).toMatchObject({ status: 'queued', threadId: 't' });
  });

  it('creating the tables on a connection terminated while it waits for the migration lock rejects with RunQueueError database; the process lives, the next start works', async () => {
    // The lock migrateUnderLock takes for the runs table: class "crrq", the schema's hash.
    const error = await terminateWhileWaiting(
      `SELECT pg_advisory_xact_lock(${0x63727271}, hashtext('${schema}'))`,
      () => queue.start(),
    );
    await settle();
    expect(crashes).toEqual([]);
    expect(error).toBeInstanceOf(RunQueueError);
    expect(error).toMatchObject({ reason: 'database' });
    await queue.start();
    const runId = await queue.enqueue({ threadId: 't', agent: 'notes', input: 'hello' });
    expect(await queue.run(runId)).toMatchObject({ status: 'queued' });
  });

  it("a worker's cancel listener whose connection is terminated while PostgreSQL refuses connections keeps reconnecting; cancel from another process works again", async () => {
    const proxy = await startPgProxy();
    proxies.push(proxy);
    await queue.close();
    await pool.end();
    pool = testPool({ max: 6, application_name: schema, host: '127.0.0.1', port: proxy.port });
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
    await createEffectsTable(pool, schema);
    const errors: unknown[] = [];
    workers.push(
      await startWorker({
        queue,
        agents: queueAgents({ pool, schema, delayMs: 30 }),
        onError: (error) => errors.push(error),
      }),
    );
    const listenerPid = async () => {
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN "cubepi_cancel_%'`,
        [schema],
      );
      return rows[0]?.pid;
    };
    const first = await listenerPid();
    expect(first).toBeDefined();
    proxy.refusing = true;
    await admin.query('SELECT pg_terminate_backend($1)', [first]);
    // Its first attempt to reconnect is refused.
    await waitUntil('a reconnect was refused', async () => proxy.refused > 0);
    proxy.refusing = false;
    await waitUntil('the listener is back', async () => {
      const pid = await listenerPid();
      return pid !== undefined && pid !== first;
    });
    expect(crashes).toEqual([]);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((error) => error instanceof RunQueueError && error.reason === 'database')).toBe(true);
    // Cancelled from the queue (as another process would): the worker hears it and stops the run.
    // Long enough (a ~450-character tool call and answer, 4 characters per 30 ms chunk) that a loaded machine's
    // polling cannot see it end before the cancel: the run streams for seconds and ends the moment it is cancelled.
    const runId = await queue.enqueue({ threadId: 'c', agent: 'notes', input: LONG_PROMPT });
    const events = lastValueFrom(queue.events(runId).pipe(toArray()));
    await waitUntil('the run streams', async () => (await queue.log.lastSeq(runId)) > 3);
    expect(await queue.cancel(runId, 'stop pressed')).toBe(true);
    expect((await events).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
  });

  it("a worker's agent factory that throws ends the run with its own error (agent_factory, its message kept), once, not retried as a lost worker; the thread goes on", async () => {
    await createEffectsTable(pool, schema);
    const calls = { broken: 0, empty: 0 };
    workers.push(
      await startWorker({
        queue,
        agents: {
          ...queueAgents({ pool, schema }),
          broken: () => {
            calls.broken++;
            throw new ConfigurationError('no API key for the model of "broken"');
          },
          empty: async () => {
            calls.empty++;
            return undefined as never;
          },
        },
      }),
    );
    const bad = await queue.enqueue({ threadId: 'f', agent: 'broken', input: 'hi' });
    const empty = await queue.enqueue({ threadId: 'f', agent: 'empty', input: 'hi' });
    const next = await queue.enqueue({ threadId: 'f', agent: 'notes', input: 'next' });
    const error = await lastValueFrom(queue.events(bad)).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'run_failed', cause: { code: 'agent_factory', name: 'ConfigurationError' } });
    expect((error as RunQueueError).message).toContain('no API key for the model of "broken"');
    expect(await queue.run(bad)).toMatchObject({ status: 'ended', outcome: 'error', attempts: 1 });
    const notAgent = await lastValueFrom(queue.events(empty)).catch((e: unknown) => e);
    expect(notAgent).toMatchObject({ reason: 'run_failed', cause: { code: 'agent_factory', name: 'TypeError' } });
    expect((notAgent as RunQueueError).message).toContain('not an Agent');
    expect((await lastValueFrom(queue.events(next).pipe(toArray()))).at(-1)).toMatchObject({
      type: 'agent_end',
      outcome: 'completed',
    });
    expect(calls).toEqual({ broken: 1, empty: 1 });
  });

  it("a run whose job failed for good (its last attempt's connection terminated) ends worker_lost with that cause and its terminal frame; its thread goes on", async () => {
    await queue.close();
    // No retry: the first failed attempt is the last.
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss`, retryLimit: 0 });
    await createEffectsTable(pool, schema);
    await queue.start();
    const first = await queue.enqueue({ threadId: 'held', agent: 'notes', input: 'first' });
    const second = await queue.enqueue({ threadId: 'held', agent: 'notes', input: 'second' });
    const worker = startWorker({ queue, agents: queueAgents({ pool, schema }), onError: () => {} });
    // The worker's first statement of the run waits for the run's row, and its backend is terminated there.
    await terminateWhileWaiting(
      `SELECT 1 FROM "${schema}".cubepi_runs WHERE run_id = '${first}' FOR UPDATE`,
      async () => {
        workers.push(await worker);
      },
    );
    const frames = await lastValueFrom(queue.frames(first).pipe(toArray()));
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
    expect(frames.at(-1)).toMatchObject({ kind: 'error', error: { code: 'worker_lost' } });
    const run = await queue.run(first);
    expect(run).toMatchObject({ status: 'ended', outcome: 'error', error: { code: 'worker_lost' } });
    expect(run!.error!.message).toMatch(/: 1 attempt was lost .*; the last: .*terminat/);
    expect((await lastValueFrom(queue.events(second).pipe(toArray()))).at(-1)).toMatchObject({
      type: 'agent_end',
      outcome: 'completed',
    });
    expect(crashes).toEqual([]);
  });

  it.each([3, 8])(
    'under terminated backends (seed %i) every acknowledged run ends with its terminal frame, streams are dense, threads keep their order and go on',
    async (seed) => {
      const rand = random(seed);
      await createEffectsTable(pool, schema);
      // One retry: a run whose two attempts are lost has used its retries (its job fails for good).
      await queue.close();
      queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss`, retryLimit: 1 });
      await queue.start();
      // Two workers, each on a queue and a pool of its own (as in their own processes), named like the test's pool.
      for (const id of ['w1', 'w2']) {
        const own = testPool({ max: 6, application_name: schema });
        const ownQueue = createRunQueue({ pool: own, schema, bossSchema: `${schema}_boss`, retryLimit: 1 });
        cleanups.push(async () => {
          await ownQueue.close();
          await own.end();
        });
        workers.push(
          await startWorker({
            queue: ownQueue,
            workerId: id,
            concurrency: 3,
            agents: queueAgents({ pool: own, schema, delayMs: 2, toolMs: 10, workerId: id }),
            onError: () => {},
          }),
        );
      }
      const threads = 8;
      const acknowledged: { runId: string; threadId: string; prompt: string }[] = [];
      let killing = true;
      let kills = 0;
      const killer = (async () => {
        while (killing) {
          await sleep(100 + Math.floor(rand() * 400));
          const { rows } = await admin.query<{ n: number }>(
            `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
             WHERE application_name = $1 AND pid <> pg_backend_pid()`,
            [schema],
          );
          kills += rows[0]!.n;
        }
      })();
      for (let r = 0; r < 5; r++) {
        for (let t = 0; t < threads; t++) {
          const threadId = `thread-${t}`;
          const prompt = `t${t}-r${r}`;
          for (let attempt = 0; attempt < 50; attempt++) {
            const runId = await queue.enqueue({ threadId, agent: 'notes', input: prompt }).catch((e: unknown) => e);
            if (typeof runId === 'string') {
              acknowledged.push({ runId, threadId, prompt });
              break;
            }
            expect(runId).toMatchObject({ reason: 'database' });
            // An enqueue that failed may still have committed (its COMMIT's answer lost): that run is not counted.
          }
        }
        await sleep(150 + Math.floor(rand() * 300));
      }
      killing = false;
      await killer;
      expect(kills).toBeGreaterThan(20);
      // Every acknowledged run ends, and so does every other run that was committed.
      await waitUntil(
        'every run ended',
        async () => {
          const { rows } = await admin.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${schema}".cubepi_runs WHERE status <> 'ended'`,
          );
          return rows[0]!.n === 0;
        },
        45_000,
      );
      expect(crashes).toEqual([]);
      const { rows: runs } = await admin.query<{
        run_id: string;
        thread_id: string;
        outcome: string;
        error: { code?: string; message: string } | null;
        started_at: Date | null;
        ended_at: Date;
      }>(`SELECT * FROM "${schema}".cubepi_runs ORDER BY created_at`);
      const outcomes = new Map<string, number>();
      for (const run of runs) {
        const key = run.error?.code ?? run.outcome;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        const frames = await lastValueFrom(queue.frames(run.run_id).pipe(toArray()));
        // Dense, one terminal frame, last.
        expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
        expect(frames.at(-1)?.kind).toBe(run.outcome === 'error' ? 'error' : 'end');
        expect(frames.filter((f) => f.kind !== 'event')).toHaveLength(1);
        if (run.outcome === 'completed') {
          const events = frames.flatMap((f) => (f.kind === 'event' ? [f.event] : []));
          expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
        }
        if (run.outcome === 'error') {
          // Ended typed, with its cause: its attempts were lost, or a checkpoint write of the run failed.
          expect(['worker_lost', 'checkpoint_error']).toContain(run.error?.code);
          if (run.error?.code === 'worker_lost') expect(run.error.message).toContain('; the last: ');
        }
      }
      for (const { runId } of acknowledged) expect(runs.some((run) => run.run_id === runId)).toBe(true);
      // Per thread, each run started after the one before it had ended.
      for (let t = 0; t < threads; t++) {
        const mine = runs.filter((run) => run.thread_id === `thread-${t}` && run.started_at !== null);
        for (let i = 1; i < mine.length; i++) {
          expect(mine[i]!.started_at!.getTime()).toBeGreaterThanOrEqual(mine[i - 1]!.ended_at.getTime());
        }
      }
      // Every effect once: a tool starts only after the message that asked for it is stored (issue 36 item 4), so a
      // retried run either never ran the call or finds it stored and closes it as interrupted.
      const { rows: twice } = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT text FROM "${schema}".effects GROUP BY text HAVING count(*) > 1) d`,
      );
      console.log(
        `seed ${seed}: ${kills} backends terminated, ${runs.length} runs:`,
        Object.fromEntries(outcomes),
        `effects twice: ${twice[0]!.n}`,
      );
      expect(twice[0]!.n, 'effects that happened twice').toBe(0);
    },
    180_000,
  );

  describe('the run-event log', () => {
    const all = (frames: Observable<WireFrame>) => lastValueFrom(frames.pipe(toArray()));
    // The lock the append function takes for a run: held, an append waits for it, and its backend is terminated.
    const runLock = (runId: string) =>
      `SELECT pg_advisory_xact_lock(hashtextextended('${channelOf(schema, runId)}', 0))`;

    it('the batch queued behind a failed append is refused unwritten, never stored after a gap; appended again in order, the stream is dense', async () => {
      const log = createRunEventLog({ pool, schema });
      await log.migrate();
      const frames = scriptedRun('gap', 2, 3);
      let behind: Promise<unknown> | undefined;
      const error = await terminateWhileWaiting(runLock('gap'), () => {
        const first = log.appendRunEvents('gap', frames.slice(0, 3));
        behind = log.appendRunEvents('gap', frames.slice(3, 6)).catch((e: unknown) => e);
        return first;
      });
      expect(error).toMatchObject({ reason: 'database' });
      expect(await behind).toBeInstanceOf(RunEventLogError);
      expect(await behind).toMatchObject({ reason: 'seq_order', runId: 'gap' });
      await settle();
      expect(crashes).toEqual([]);
      expect(await log.lastSeq('gap')).toBe(0);
      // The writer appends again from what is stored, in order.
      await log.appendRunEvents('gap', frames);
      expect(plain(await all(log.runEvents('gap')))).toEqual(plain(frames));
      await log.close();
    });

    it('an append that does not start right after the stored seqs is refused, after a failed append and in a schema an older version made', async () => {
      // A schema made by the version before (its append function took any greater seq), with a run of 2 frames.
      const old = scriptedRun('old', 1, 2);
      await admin.query(`CREATE SCHEMA "${schema}"`);
      await admin.query(`CREATE TABLE "${schema}".cubepi_run_events (
        run_id text NOT NULL, seq bigint NOT NULL, frame text NOT NULL, compact boolean NOT NULL,
        base boolean NOT NULL, terminal boolean NOT NULL, appended_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, seq))`);
      await admin.query(
        `CREATE FUNCTION "${schema}".cubepi_append_run_events(p_run text, p_channel text, p_seqs bigint[],
           p_frames text[], p_compact boolean[], p_base boolean[], p_terminal boolean[]) RETURNS void
         LANGUAGE sql AS $$ INSERT INTO "${schema}".cubepi_run_events (run_id, seq, frame, compact, base, terminal)
           SELECT p_run, u.* FROM unnest(p_seqs, p_frames, p_compact, p_base, p_terminal) AS u $$`,
      );
      const writer = createRunEventLog({ pool, schema });
      await writer.appendRunEvents('old', old.slice(0, 2));
      const log = createRunEventLog({ pool, schema });
      const gap = await log.appendRunEvents('old', old.slice(3)).catch((e: unknown) => e);
      expect(gap).toMatchObject({ reason: 'seq_order', runId: 'old' });
      await log.appendRunEvents('old', old.slice(2));
      expect(plain(await all(log.runEvents('old')))).toEqual(plain(old));
      // A first append that is lost: a later call of the same writer, made once it failed, is refused too.
      const frames = scriptedRun('lost', 1, 3);
      const error = await terminateWhileWaiting(runLock('lost'), () => log.appendRunEvents('lost', frames.slice(0, 2)));
      expect(error).toMatchObject({ reason: 'database' });
      const later = await log.appendRunEvents('lost', frames.slice(2)).catch((e: unknown) => e);
      expect(later).toMatchObject({ reason: 'seq_order', runId: 'lost' });
      const fromAnother = await writer.appendRunEvents('lost', frames.slice(2)).catch((e: unknown) => e);
      expect(fromAnother).toMatchObject({ reason: 'seq_order', runId: 'lost' });
      expect(await log.lastSeq('lost')).toBe(0);
      await settle();
      expect(crashes).toEqual([]);
      await writer.close();
      await log.close();
    });
  });
});
