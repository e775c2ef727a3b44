// Forks on PostgreSQL beyond the conformance kit: a store written by schema version 1 migrates and forks, a fork
// writes one row whatever the history, a fork's load takes the same round trips at any depth, and a fork racing the
// deletion of its parent never leaves a fork without its parent.
import type pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Message } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from './postgres-server.js';

requirePostgres();

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });
const texts = (messages: readonly Message[] | undefined) => messages?.map((m) => m.content);

const admin = pgAvailable ? testPool({ max: 2 }) : undefined;
const schemas: string[] = [];
const pools: pg.Pool[] = [];
function schema(): string {
  const name = uniqueSchema('fork');
  schemas.push(name);
  return name;
}
function pool(): pg.Pool {
  const created = testPool({ max: 4 });
  pools.push(created);
  return created;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
  for (const name of schemas.splice(0)) await dropSchema(admin!, name);
});
afterAll(async () => {
  await admin?.end();
});

async function counts(name: string): Promise<{ threads: number; messages: number }> {
  const { rows } = await admin!.query(
    `SELECT (SELECT count(*)::int FROM "${name}".cubepi_threads) AS threads,
            (SELECT count(*)::int FROM "${name}".cubepi_messages) AS messages`,
  );
  return rows[0] as { threads: number; messages: number };
}

describe.skipIf(!pgAvailable)('PostgresCheckpointer forks', () => {
  it('migrates a store written by schema version 1: its threads load unchanged, then fork and append', async () => {
    const name = schema();
    // Schema version 1 exactly as the released migration 1 created it.
    await admin!.query(`
      CREATE SCHEMA "${name}";
      CREATE TABLE "${name}".cubepi_schema_version (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL);
      INSERT INTO "${name}".cubepi_schema_version VALUES (1, 1);
      CREATE TABLE "${name}".cubepi_threads (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, thread_id text NOT NULL UNIQUE, next_seq bigint NOT NULL,
        extra jsonb, extra_raw text, created_at bigint NOT NULL, updated_at bigint NOT NULL,
        CHECK ((extra IS NULL) <> (extra_raw IS NULL))
      );
      CREATE TABLE "${name}".cubepi_messages (
        thread_id text NOT NULL, seq bigint NOT NULL, body jsonb, body_raw text, PRIMARY KEY (thread_id, seq),
        CHECK ((body IS NULL) <> (body_raw IS NULL))
      );
      INSERT INTO "${name}".cubepi_threads (thread_id, next_seq, extra, created_at, updated_at)
        VALUES ('old', 3, '{"k": 1}', 10, 20);
      INSERT INTO "${name}".cubepi_messages (thread_id, seq, body)
        SELECT 'old', s, jsonb_build_object('role', 'user', 'content', 'm' || s, 'timestamp', 1)
        FROM generate_series(0, 2) AS s;`);
    const checkpointer = new PostgresCheckpointer(pool(), { schema: name });
    expect(await checkpointer.load('old')).toEqual({ messages: ['m0', 'm1', 'm2'].map(user), extra: { k: 1 }, seq: 3 });
    const [info] = await checkpointer.listThreads();
    expect(info).toMatchObject({ threadId: 'old', messageCount: 3, createdAt: 10, updatedAt: 20 });
    expect(info?.parent).toBeUndefined();
    // Migration 3 (owners): a thread from before owners is unowned, and a claim does not adopt it.
    expect(info?.owner).toBeUndefined();
    expect(await checkpointer.threadOwner('old')).toBeNull();
    expect(await checkpointer.claimThread('old', 'mallory')).toBeNull();
    await checkpointer.fork('old', { atSeq: 2, newThreadId: 'new' });
    await checkpointer.append('new', [user('n')], { expectedSeq: 2 });
    await checkpointer.append('old', [user('m3')], { expectedSeq: 3 });
    expect(texts((await checkpointer.load('new'))?.messages)).toEqual(['m0', 'm1', 'n']);
    expect(texts((await checkpointer.load('old'))?.messages)).toEqual(['m0', 'm1', 'm2', 'm3']);
    const version = await admin!.query(`SELECT version FROM "${name}".cubepi_schema_version`);
    expect(version.rows).toEqual([{ version: 4 }]);
    await checkpointer.close();
  });

  it('writes one thread row and no message row per fork, whatever the history (1,000 messages, 5 deep)', async () => {
    const name = schema();
    const checkpointer = new PostgresCheckpointer(pool(), { schema: name });
    await checkpointer.append(
      't0',
      Array.from({ length: 1000 }, (_, i) => user(`m${i}`)),
    );
    for (let d = 1; d <= 5; d++) {
      const before = await counts(name);
      await checkpointer.fork(`t${d - 1}`, { atSeq: 1000 - d, newThreadId: `t${d}` });
      expect(await counts(name)).toEqual({ threads: before.threads + 1, messages: before.messages });
    }
    expect((await checkpointer.load('t5'))?.seq).toBe(995);
  });

  it('loads a fork 30 deep in as many queries as a thread that is not a fork', async () => {
    const own = pool();
    const sent: string[] = [];
    // Every query a checked-out client sends (load runs in a transaction on one client).
    own.on('acquire', (client) => {
      const patched = client as pg.PoolClient & { counted?: boolean };
      if (patched.counted) return;
      patched.counted = true;
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        const first = args[0];
        sent.push(typeof first === 'string' ? first : String((first as { text?: unknown }).text));
        return query(...args);
      };
    });
    const checkpointer = new PostgresCheckpointer(own, { schema: schema() });
    await checkpointer.append('t0', [user('a'), user('b')]);
    for (let d = 1; d <= 30; d++) {
      await checkpointer.fork(`t${d - 1}`, { atSeq: d + 1, newThreadId: `t${d}` });
      await checkpointer.append(`t${d}`, [user(`own${d}`)]);
    }
    sent.length = 0;
    await checkpointer.load('t0');
    const plain = sent.length;
    sent.length = 0;
    const deep = await checkpointer.load('t30');
    expect(texts(deep?.messages)).toEqual(['a', 'b', ...Array.from({ length: 30 }, (_, i) => `own${i + 1}`)]);
    expect(sent.length).toBe(plain);
    expect(sent.filter((text) => /WITH RECURSIVE/.test(text))).toHaveLength(1);
  });

  it('a fork racing the deletion of its parent: either the fork exists with its parent, or neither', async () => {
    const name = schema();
    const a = new PostgresCheckpointer(pool(), { schema: name });
    const b = new PostgresCheckpointer(pool(), { schema: name });
    await a.migrate();
    for (let round = 0; round < 20; round++) {
      const parent = `p${round}`;
      await a.append(parent, [user('a'), user('b')]);
      const [deleted, forked] = await Promise.allSettled([
        a.deleteThread(parent),
        b.fork(parent, { atSeq: 1, newThreadId: `f${round}` }),
      ]);
      const parentLoaded = await a.load(parent);
      const forkLoaded = await a.load(`f${round}`);
      if (forked.status === 'fulfilled') {
        expect(deleted.status, `round ${round}`).toBe('rejected');
        expect((deleted as PromiseRejectedResult).reason).toMatchObject({ code: 'thread_has_forks' });
        expect(texts(parentLoaded?.messages)).toEqual(['a', 'b']);
        expect(texts(forkLoaded?.messages)).toEqual(['a']);
      } else {
        expect(deleted.status, `round ${round}`).toBe('fulfilled');
        expect(forked.reason).toMatchObject({ code: 'invalid_input' });
        expect(parentLoaded).toBeNull();
        expect(forkLoaded).toBeNull();
      }
    }
    await a.close();
    await b.close();
  });
});
