import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  CheckpointCorruptionError,
  CheckpointError,
  CheckpointSchemaError,
  ConfigurationError,
  ThreadConflictError,
  type Message,
} from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { checkpointerConformance } from 'cubepi/testing';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  requirePostgres,
  testPool,
  uniqueSchema,
} from './postgres-server.js';

requirePostgres();

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });

// One admin pool for setup and cleanup; every schema a test creates is dropped after it.
const admin = pgAvailable ? testPool({ max: 2 }) : undefined;
const schemas: string[] = [];
const pools: pg.Pool[] = [];
function schema(label: string): string {
  const name = uniqueSchema(label);
  schemas.push(name);
  return name;
}
function pool(options: pg.PoolConfig = {}): pg.Pool {
  const created = testPool(options);
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

describe.skipIf(!pgAvailable)('PostgresCheckpointer', () => {
  checkpointerConformance(
    () => {
      // A fresh schema per test; reopen is another process: its own pool, from a connection string it owns.
      const name = uniqueSchema('conf');
      const own = testPool({ max: 4 });
      return {
        checkpointer: new PostgresCheckpointer(own, { schema: name }),
        reopen: () => new PostgresCheckpointer(connectionString(), { schema: name }),
        dispose: async () => {
          await own.end();
          await dropSchema(admin!, name);
        },
      };
    },
    { name: 'conformance (a pool per writer, a schema per test)', describe, it },
  );

  it('migrates an empty database: the schema, its tables, version 4 — once, however many start together', async () => {
    const name = schema('migrate');
    const writers = Array.from({ length: 8 }, () => new PostgresCheckpointer(pool({ max: 1 }), { schema: name }));
    await Promise.all(writers.map((w) => w.migrate()));
    const tables = await admin!.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [name],
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      'cubepi_blob_refs',
      'cubepi_blobs',
      'cubepi_messages',
      'cubepi_schema_version',
      'cubepi_threads',
    ]);
    const versions = await admin!.query(`SELECT id, version FROM "${name}".cubepi_schema_version`);
    expect(versions.rows).toEqual([{ id: 1, version: 4 }]);
    const pk = await admin!.query<{ attname: string }>(
      `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
       WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
      [`"${name}".cubepi_messages`],
    );
    expect(pk.rows.map((r) => r.attname)).toEqual(['thread_id', 'seq']);
    const types = await admin!.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'cubepi_messages' AND column_name = 'body'`,
      [name],
    );
    expect(types.rows).toEqual([{ column_name: 'body', data_type: 'jsonb' }]);
  });

  it('refuses a schema newer than it knows, before writing anything', async () => {
    const name = schema('newer');
    const first = new PostgresCheckpointer(pool(), { schema: name });
    await first.append('t', [user('a')]);
    await admin!.query(`UPDATE "${name}".cubepi_schema_version SET version = 99`);
    const later = new PostgresCheckpointer(pool(), { schema: name });
    const error = await later.append('t', [user('b')]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CheckpointSchemaError);
    expect(error).toMatchObject({ code: 'checkpoint_schema', found: 99, supported: 4 });
    expect((error as Error).message).toContain('newer than this cubepi supports');
    await expect(later.migrate()).rejects.toBeInstanceOf(CheckpointSchemaError);
    await expect(later.load('t')).rejects.toBeInstanceOf(CheckpointSchemaError);
    const rows = await admin!.query(`SELECT count(*)::int AS n FROM "${name}".cubepi_messages`);
    expect(rows.rows[0].n).toBe(1);
  });

  it('reports a corrupt row as a CheckpointCorruptionError naming the thread and the seq', async () => {
    const name = schema('corrupt');
    const checkpointer = new PostgresCheckpointer(pool(), { schema: name });
    const cases: [string, number | undefined, RegExp][] = [
      [
        `UPDATE "${name}".cubepi_messages SET body = NULL, body_raw = '{"role":' WHERE thread_id = $1 AND seq = 1`,
        1,
        /not valid JSON/,
      ],
      [
        `UPDATE "${name}".cubepi_messages SET body = '{"role":"robot"}' WHERE thread_id = $1 AND seq = 2`,
        2,
        /not a message/,
      ],
      [`UPDATE "${name}".cubepi_messages SET body = '42' WHERE thread_id = $1 AND seq = 0`, 0, /not a message/],
      [`DELETE FROM "${name}".cubepi_messages WHERE thread_id = $1 AND seq = 1`, 1, /missing/],
      [`UPDATE "${name}".cubepi_threads SET next_seq = 5 WHERE thread_id = $1`, 3, /missing/],
      [`UPDATE "${name}".cubepi_threads SET extra = '"text"' WHERE thread_id = $1`, undefined, /extra/],
    ];
    await checkpointer.append('healthy', [user('a')]);
    for (const [i, [sql, seq, reason]] of cases.entries()) {
      const threadId = `damaged-${i}`;
      await checkpointer.append(threadId, [user('a'), user('b'), user('c')]);
      await admin!.query(sql, [threadId]);
      const error = await checkpointer.load(threadId).catch((caught: unknown) => caught);
      expect(error, sql).toBeInstanceOf(CheckpointCorruptionError);
      expect(error, sql).toMatchObject({ code: 'checkpoint_corruption', threadId, seq });
      expect((error as CheckpointCorruptionError).reason, sql).toMatch(reason);
    }
    expect((await checkpointer.load('healthy'))?.seq).toBe(1);
  });

  it('turns a failing write into a CheckpointError naming the thread, and writes nothing of the batch', async () => {
    const name = schema('failing');
    const checkpointer = new PostgresCheckpointer(pool(), { schema: name });
    await checkpointer.append('t', [user('a')]);
    await admin!.query(`
      CREATE FUNCTION "${name}".poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.body->>'content' = 'poison' THEN RAISE EXCEPTION 'disk on fire'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER poison BEFORE INSERT ON "${name}".cubepi_messages
        FOR EACH ROW EXECUTE FUNCTION "${name}".poison();`);
    const error = await checkpointer.append('t', [user('b'), user('poison')]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', threadId: 't', operation: 'append' });
    expect(((error as Error).cause as Error).message).toBe('disk on fire');
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    expect(await checkpointer.append('t', [user('b')], { expectedSeq: 1 })).toEqual({ seq: 2 });
  });

  it('turns a connection lost mid-append into a CheckpointError naming the thread, and writes nothing', async () => {
    const name = schema('lost');
    const victim = pool({ max: 1, application_name: `cubepi-victim-${name}`.slice(0, 60) });
    const checkpointer = new PostgresCheckpointer(victim, { schema: name });
    await checkpointer.append('t', [user('a')]);
    // Hold the thread's row lock so the append waits inside the server, then kill its connection.
    const blocker = await admin!.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM "${name}".cubepi_threads WHERE thread_id = 't' FOR UPDATE`);
      const append = checkpointer.append('t', [user('b')]).catch((caught: unknown) => caught);
      const appName = `cubepi-victim-${name}`.slice(0, 60);
      for (;;) {
        const waiting = await admin!.query(
          `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [appName],
        );
        if (waiting.rows.length > 0) {
          await admin!.query('SELECT pg_terminate_backend($1)', [waiting.rows[0].pid]);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const error = await append;
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toMatchObject({ code: 'checkpoint_error', threadId: 't', operation: 'append' });
      expect((error as Error).message).toContain('thread "t"');
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
  });

  it('turns an unreachable server into a CheckpointError naming the thread', async () => {
    const nowhere = pool({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 2_000 });
    const checkpointer = new PostgresCheckpointer(nowhere, { schema: schema('nowhere') });
    const error = await checkpointer.append('t', [user('a')]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', threadId: 't', operation: 'append' });
    await expect(checkpointer.migrate()).rejects.toMatchObject({ code: 'checkpoint_error', operation: 'open' });
  });

  it('two processes racing to create one thread: exactly one wins each time, nothing duplicated', async () => {
    const name = schema('race');
    const a = new PostgresCheckpointer(pool({ max: 2 }), { schema: name });
    const b = new PostgresCheckpointer(pool({ max: 2 }), { schema: name });
    await Promise.all([a.migrate(), b.migrate()]);
    for (let round = 0; round < 20; round++) {
      const threadId = `new-${round}`;
      const results = await Promise.allSettled([
        a.append(threadId, [user('a')], { expectedSeq: 0 }),
        b.append(threadId, [user('b1'), user('b2')], { expectedSeq: 0 }),
      ]);
      const won = results.findIndex((r) => r.status === 'fulfilled');
      expect(
        results.filter((r) => r.status === 'fulfilled'),
        `round ${round}`,
      ).toHaveLength(1);
      const lost = results[1 - won] as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(ThreadConflictError);
      const winner = won === 0 ? [user('a')] : [user('b1'), user('b2')];
      expect(lost.reason).toMatchObject({ threadId, expected: 0, actual: winner.length });
      expect(await a.load(threadId)).toEqual({ messages: winner, extra: {}, seq: winner.length });
    }
    // Without expectedSeq both land, each batch whole.
    await Promise.all([a.append('shared', [user('a1'), user('a2')]), b.append('shared', [user('b1'), user('b2')])]);
    const texts = (await b.load('shared'))?.messages.map((m) => m.content as string);
    expect([texts?.slice(0, 2), texts?.slice(2)].map((pair) => pair?.join())).toEqual(
      expect.arrayContaining(['a1,a2', 'b1,b2']),
    );
  });

  it('many writers on different threads, from two pools at once: every message lands in order', async () => {
    const name = schema('many');
    const writers = [pool({ max: 4 }), pool({ max: 4 })].map((p) => new PostgresCheckpointer(p, { schema: name }));
    await Promise.all(writers.map((w) => w.migrate()));
    await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const writer = writers[i % 2]!;
        for (let k = 0; k < 10; k++) await writer.append(`t${i}`, [user(`${k}`)], { expectedSeq: k });
      }),
    );
    const listed = await writers[0]!.listThreads({ limit: 100 });
    expect(listed).toHaveLength(16);
    expect(listed.every((t) => t.messageCount === 10)).toBe(true);
    for (let i = 0; i < 16; i++) {
      expect((await writers[1]!.load(`t${i}`))?.messages.map((m) => m.content)).toEqual([
        '0',
        '1',
        '2',
        '3',
        '4',
        '5',
        '6',
        '7',
        '8',
        '9',
      ]);
    }
  });

  it('stores messages as JSONB; a text JSONB cannot hold goes, unchanged, to the text column', async () => {
    const name = schema('jsonb');
    const checkpointer = new PostgresCheckpointer(pool(), { schema: name });
    const nul = user('a NUL \u0000 here');
    const surrogate = user('a lone \ud800 surrogate');
    await checkpointer.append('t', [user('plain'), nul, surrogate]);
    const rows = await admin!.query(
      `SELECT seq, body->>'content' AS content, body_raw IS NOT NULL AS raw
       FROM "${name}".cubepi_messages ORDER BY seq`,
    );
    expect(rows.rows).toEqual([
      { seq: '0', content: 'plain', raw: false },
      { seq: '1', content: null, raw: true },
      { seq: '2', content: null, raw: true },
    ]);
    await checkpointer.saveExtra('t', { note: '\u0000' });
    expect(await checkpointer.load('t')).toEqual({
      messages: [user('plain'), nul, surrogate],
      extra: { note: '\u0000' },
      seq: 3,
    });
  });

  it('ignores the host’s global pg type parsers', async () => {
    const name = schema('parsers');
    const jsonb = 3802;
    const original = pg.types.getTypeParser(jsonb);
    pg.types.setTypeParser(jsonb, () => 'hijacked');
    try {
      const checkpointer = new PostgresCheckpointer(pool(), { schema: name });
      await checkpointer.append('t', [user('a')]);
      expect((await checkpointer.load('t'))?.messages).toEqual([user('a')]);
    } finally {
      pg.types.setTypeParser(jsonb, original);
    }
  });

  it('leaves open a pool it was given, and ends a pool it created', async () => {
    const name = schema('owner');
    const given = pool();
    const borrowed = new PostgresCheckpointer(given, { schema: name });
    await borrowed.append('t', [user('a')]);
    await borrowed.close();
    expect((await given.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    const owning = new PostgresCheckpointer(connectionString(), { schema: name });
    expect((await owning.load('t'))?.seq).toBe(1);
    await owning.close();
    await owning.close(); // idempotent
    await expect(owning.load('t')).rejects.toMatchObject({ code: 'checkpoint_error', threadId: 't' });
  });

  it('works without named prepared statements (for poolers that cannot keep them)', async () => {
    const checkpointer = new PostgresCheckpointer(pool(), { schema: schema('unprepared'), preparedStatements: false });
    await checkpointer.append('t', [user('a')], { expectedSeq: 0 });
    await checkpointer.saveExtra('t', { k: 1 });
    await expect(checkpointer.append('t', [user('b')], { expectedSeq: 0 })).rejects.toBeInstanceOf(ThreadConflictError);
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: { k: 1 }, seq: 1 });
    expect((await checkpointer.listThreads()).map((t) => t.threadId)).toEqual(['t']);
  });

  it('keeps stores with different table prefixes apart in one schema', async () => {
    const name = schema('prefix');
    const a = new PostgresCheckpointer(pool(), { schema: name, tablePrefix: 'a_' });
    const b = new PostgresCheckpointer(pool(), { schema: name, tablePrefix: 'b_' });
    await a.append('t', [user('from a')]);
    expect(await b.load('t')).toBeNull();
    expect(await b.listThreads()).toEqual([]);
  });

  it('refuses bad options at construction', () => {
    expect(() => new PostgresCheckpointer(pool(), { schema: 'x"; DROP' })).toThrow(ConfigurationError);
    expect(() => new PostgresCheckpointer(pool(), { tablePrefix: '1bad' })).toThrow(ConfigurationError);
  });
});
