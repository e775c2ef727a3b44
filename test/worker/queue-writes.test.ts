// What a queued run costs PostgreSQL (issue 35): a worker appends a run's frames per flush, not one statement each; its
// last frames, terminal frame and outcome commit in one transaction; only a worker holds a LISTEN connection (one, for
// cancels and pg-boss's job channel both), and an idle worker is woken by the job's NOTIFY heard on it.
import type pg from 'pg';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from 'cubepi';
import { createRunQueue, RunEventLogError, startWorker, type RunQueue, type RunWorker } from 'cubepi/worker';
import { createQueueRunEventLog } from '../../src/worker/run-event-log.js';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';
import { createEffectsTable, queueAgents } from './fixtures/queue-agents.js';

requirePostgres();

describe.skipIf(!pgAvailable)('queue writes per run', () => {
  let pool: pg.Pool;
  let schema: string;
  let app: string;
  let queue: RunQueue;
  const workers: RunWorker[] = [];

  beforeEach(async () => {
    schema = uniqueSchema('qw');
    // Every connection the queue, pg-boss and the worker make carries this name (pg_stat_activity tells them apart).
    app = `cubepi_${schema}`;
    pool = testPool({ max: 10, application_name: app });
    await createEffectsTable(pool, schema);
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.stop({ graceMs: 0 });
    await queue.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  const start = async (pollSeconds?: number) => {
    const worker = await startWorker({
      queue,
      agents: queueAgents({ pool, schema }),
      ...(pollSeconds === undefined ? {} : { pollSeconds }),
    });
    workers.push(worker);
    return worker;
  };
  const all = (runId: string) => lastValueFrom(queue.events(runId).pipe(toArray()));
  const listening = async () => {
    const { rows } = await pool.query<{ query: string }>(
      `SELECT query FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN %'`,
      [app],
    );
    return rows.map((row) => row.query);
  };

  it('a process that only enqueues holds no LISTEN connection; a worker holds one, for cancels and new jobs', async () => {
    const runId = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'hello' });
    expect(await listening()).toEqual([]);
    await start();
    await all(runId);
    const queries = await listening();
    expect(queries).toHaveLength(1);
    expect(queries[0]).toContain(`cubepi_cancel_${schema}`);
    expect(queries[0]).toContain('pgboss_');
  });

  it('an idle worker takes a run at once when it is enqueued (the NOTIFY heard on its one listener, not a poll)', async () => {
    // pg-boss polls every 60 s: the run would wait that long unless the job's NOTIFY wakes the worker. The test's
    // timeout (30 s) fails it otherwise.
    await start(60);
    const first = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'one' });
    await all(first);
    // Now idle, asleep in its poll: a new job must wake it.
    const second = await queue.enqueue({ threadId: 't2', agent: 'notes', input: 'two' });
    const events = await all(second);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  }, 30_000);

  it("appends a run's frames per flush, and its last frames, terminal frame and outcome in one transaction", async () => {
    await start();
    const runId = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'hello' });
    const events = await all(runId);
    const log = `"${schema}".cubepi_run_events_v3`;
    // One row per appended batch, in one transaction each.
    const { rows } = await pool.query<{ first: string; last: string; xid: string; terminal: boolean }>(
      `SELECT first_seq AS first, last_seq AS last, xmin::text AS xid, terminal FROM ${log} WHERE run_id = $1
       ORDER BY last_seq`,
      [runId],
    );
    const frames = rows.map((row) => Number(row.last) - Number(row.first) + 1);
    expect(frames.reduce((sum, n) => sum + n, 0)).toBe(events.length + 1);
    expect(new Set(rows.map((row) => row.xid)).size).toBe(rows.length);
    // The first frame goes alone (at once); the rest in flushes of several frames each.
    expect(frames[0]).toBe(1);
    expect(rows.length).toBeLessThan((events.length + 1) / 2);
    const terminal = rows.at(-1)!;
    expect(terminal.terminal).toBe(true);
    // agent_end was still buffered when the run completed: it went with the terminal frame.
    expect(Number(terminal.last)).toBe(events.length + 1);
    expect(frames.at(-1)).toBeGreaterThan(1);
    const run = await pool.query<{ xid: string; status: string; outcome: string }>(
      `SELECT xmin::text AS xid, status, outcome FROM "${schema}".cubepi_runs WHERE run_id = $1`,
      [runId],
    );
    expect(run.rows[0]).toEqual({ xid: terminal.xid, status: 'ended', outcome: 'completed' });
  });

  it('appendWith: the statement along commits with the frames, or neither lands; only beside a terminal frame', async () => {
    const log = createQueueRunEventLog({ pool, schema });
    try {
      await log.migrate();
      await pool.query(`CREATE TABLE "${schema}".along_probe (run_id text PRIMARY KEY, n integer CHECK (n > 0))`);
      const event = (seq: number) => ({
        kind: 'event' as const,
        seq,
        event: { type: 'agent_start' as const, runId: 'r1', seq },
      });
      const along = (n: number) => ({
        sql: `INSERT INTO "${schema}".along_probe (run_id, n) VALUES ($8, $9)`,
        values: ['r1', n],
      });
      await expect(log.appendWith('r1', [event(1)], along(1))).rejects.toBeInstanceOf(InvalidInputError);
      // A call queued while another is in flight goes in the next statement, its statement along with it.
      const first = log.appendRunEvents('r1', [event(1)]);
      const last = log.appendWith('r1', [event(2), { kind: 'end', seq: 3, runId: 'r1' }], along(0));
      await first;
      // The check refuses n = 0: the frames of that statement are not written either.
      await expect(last).rejects.toBeInstanceOf(RunEventLogError);
      expect(await log.lastSeq('r1')).toBe(1);
      await log.appendWith('r1', [event(2), { kind: 'end', seq: 3, runId: 'r1' }], along(7));
      expect(await log.lastSeq('r1')).toBe(3);
      const { rows } = await pool.query(`SELECT n FROM "${schema}".along_probe`);
      expect(rows).toEqual([{ n: 7 }]);
    } finally {
      await log.close();
    }
  });
});
