// The run queue's idempotency key (issue 31, "Execution sessions"): a second enqueue with the same key on the same
// thread queues nothing and is answered with the first run's id, also when two enqueues race. Real PostgreSQL.
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { createQueueServer } from 'cubepi/server';
import { createRunQueue, type RunQueue } from 'cubepi/worker';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';

requirePostgres();

describe.skipIf(!pgAvailable)('run queue idempotency keys', () => {
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;

  beforeEach(() => {
    schema = uniqueSchema('rqk');
    pool = testPool({ max: 10 });
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  });
  afterEach(async () => {
    await queue.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  const rows = async (threadId: string) =>
    (
      await pool.query<{ run_id: string }>(`SELECT run_id FROM "${schema}".cubepi_runs WHERE thread_id = $1`, [
        threadId,
      ])
    ).rows.map((r) => r.run_id);
  const jobs = async () =>
    (
      await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}_boss".job WHERE name NOT LIKE '__pgboss%'`,
      )
    ).rows[0]!.n;

  it('a duplicate key on the thread is answered with the first run id and queues no second job', async () => {
    const first = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'pay', idempotencyKey: 'k1' });
    const again = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'pay', idempotencyKey: 'k1' });
    expect(again).toBe(first);
    expect(await rows('t1')).toEqual([first]);
    expect(await jobs()).toBe(1);
    // The same key on another thread, or no key, is another run.
    const other = await queue.enqueue({ threadId: 't2', agent: 'notes', input: 'pay', idempotencyKey: 'k1' });
    const plain = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'pay' });
    expect(new Set([first, other, plain]).size).toBe(3);
    expect(await jobs()).toBe(3);
  });

  it('racing enqueues with one key get one run', async () => {
    const ids = await Promise.all(
      Array.from({ length: 6 }, () =>
        queue.enqueue({ threadId: 'race', agent: 'notes', input: 'once', idempotencyKey: 'same' }),
      ),
    );
    expect(new Set(ids).size).toBe(1);
    expect(await rows('race')).toEqual([ids[0]]);
  });

  it('POST /threads/:id/runs with the same idempotencyKey answers the first run id; a bad key is a 400', async () => {
    const server = createQueueServer({
      queue,
      agent: 'notes',
      checkpointer: new PostgresCheckpointer(pool, { schema }),
    });
    try {
      const post = (body: unknown) =>
        server.fetch(
          new Request('http://127.0.0.1/threads/h1/runs', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }),
        );
      const created = await post({ input: 'pay', idempotencyKey: 'h-1' });
      const first = (await created.json()) as { runId: string };
      expect([created.status, typeof first.runId]).toEqual([201, 'string']);
      const again = (await (await post({ input: 'pay', idempotencyKey: 'h-1' })).json()) as { runId: string };
      expect(again.runId).toBe(first.runId);
      expect(await rows('h1')).toEqual([first.runId]);
      expect((await post({ input: 'pay', idempotencyKey: 42 })).status).toBe(400);
    } finally {
      server.close();
    }
  });

  it('refuses a bad key', async () => {
    await expect(
      queue.enqueue({ threadId: 't1', agent: 'notes', input: 'x', idempotencyKey: '' }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });
});
