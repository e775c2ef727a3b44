// The run queue's idempotency key (issue 31, "Execution sessions"): a second enqueue with the same key on the same
// thread queues nothing and is answered with the first run's id, also when two enqueues race. Real PostgreSQL.
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from 'cubepi';
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

  it('refuses a bad key', async () => {
    await expect(
      queue.enqueue({ threadId: 't1', agent: 'notes', input: 'x', idempotencyKey: '' }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });
});
