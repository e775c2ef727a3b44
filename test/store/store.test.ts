// The Store contract on all three backends (a real SQLite file, the real PostgreSQL server with a schema per test),
// and what is particular to each: sharing the checkpointers' connections, pgvector detection, a failing backend.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  EmbeddingError,
  MemoryCheckpointer,
  MemoryStore,
  StoreError,
  type StoreOptions,
} from 'cubepi';
import { SQLiteCheckpointer, SQLiteStore } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer, PostgresStore } from 'cubepi/checkpoint/postgres';
import { storeConformance } from 'cubepi/testing';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';

requirePostgres();

const dirs: string[] = [];
function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-store-'));
  dirs.push(dir);
  return join(dir, 'memory.db');
}
const admin = pgAvailable ? testPool({ max: 2 }) : undefined;
const schemas: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  for (const name of schemas.splice(0)) await dropSchema(admin!, name);
});
afterAll(async () => {
  await admin?.end();
});

storeConformance((options) => new MemoryStore(options), { name: 'MemoryStore conformance', describe, it });

storeConformance(
  (options: StoreOptions) => {
    const path = tempFile();
    const store = new SQLiteStore(path, options);
    const others: SQLiteStore[] = [];
    return {
      store,
      reopen: () => {
        const again = new SQLiteStore(path, options);
        others.push(again);
        return again;
      },
      dispose: async () => {
        await store.close();
        for (const other of others) await other.close();
      },
    };
  },
  { name: 'SQLiteStore conformance', describe, it, timeoutMs: 20_000 },
);

describe.skipIf(!pgAvailable)('PostgresStore', () => {
  storeConformance(
    (options: StoreOptions) => {
      const name = uniqueSchema('store');
      const own = testPool({ max: 4 });
      const others: pg.Pool[] = [];
      return {
        store: new PostgresStore(own, { ...options, schema: name }),
        reopen: () => {
          const pool = testPool({ max: 2 });
          others.push(pool);
          return new PostgresStore(pool, { ...options, schema: name });
        },
        dispose: async () => {
          await own.end();
          for (const pool of others) await pool.end();
          await dropSchema(admin!, name);
        },
      };
    },
    { name: 'PostgresStore conformance', describe, it, timeoutMs: 30_000 },
  );

  it('checkpointer.store() shares the checkpointer pool and schema; its close() leaves the pool open', async () => {
    const name = uniqueSchema('storecp');
    schemas.push(name);
    const pool = testPool({ max: 2 });
    try {
      const checkpointer = new PostgresCheckpointer(pool, { schema: name });
      const store = checkpointer.store();
      await store.put(['users', 'u1'], 'k', { text: 'hello' });
      await store.close();
      const tables = await pool.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
        [name],
      );
      expect(tables.rows.map((r) => r.table_name)).toContain('cubepi_store_items');
      expect((await checkpointer.store().get(['users', 'u1'], 'k'))?.value).toEqual({ text: 'hello' });
      await checkpointer.close();
    } finally {
      await pool.end();
    }
  });

  it('detects pgvector: exact on a server without the extension; requiring it is a ConfigurationError', async () => {
    const installed = (await admin!.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`)).rowCount! > 0;
    const name = uniqueSchema('storevec');
    schemas.push(name);
    const pool = testPool({ max: 2 });
    try {
      const auto = new PostgresStore(pool, { schema: name, embed: (t) => t.map(() => [1, 0]), dimensions: 2 });
      expect(await auto.vectorMode()).toBe(installed ? 'pgvector' : 'exact');
      expect(await new PostgresStore(pool, { schema: name, vectorSearch: 'exact' }).vectorMode()).toBe('exact');
      const required = new PostgresStore(pool, { schema: name, vectorSearch: 'pgvector' });
      if (installed) expect(await required.vectorMode()).toBe('pgvector');
      else await expect(required.vectorMode()).rejects.toBeInstanceOf(ConfigurationError);
    } finally {
      await pool.end();
    }
  });

  it('a refused connection is a StoreError with the driver error as cause', async () => {
    const store = new PostgresStore('postgresql://root@127.0.0.1:1/test');
    try {
      const error = await store.get(['a'], 'k').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).cause).toBeInstanceOf(Error);
    } finally {
      await store.close();
    }
  });
});

describe('SQLiteStore', () => {
  it('checkpointer.store() keeps its table in the checkpointer file, on its connection', async () => {
    const path = tempFile();
    const checkpointer = new SQLiteCheckpointer(path);
    const store = checkpointer.store({ embed: (texts) => texts.map((t) => [t.length, 1]), dimensions: 2 });
    await store.put(['users', 'u1'], 'k', { text: 'hello' });
    await checkpointer.close();
    const db = new Database(path, { readonly: true });
    try {
      const row = db.prepare(`SELECT value, length(vector) AS bytes FROM cubepi_store_items`).get() as {
        value: string;
        bytes: number;
      };
      expect(row).toEqual({ value: '{"text":"hello"}', bytes: 8 }); // two Float32 components
    } finally {
      db.close();
    }
  });

  it('a closed database is a StoreError; a bad embedding is an EmbeddingError before the database is touched', async () => {
    const db = new Database(tempFile());
    const store = new SQLiteStore(db, { embed: () => [[Number.NaN]], dimensions: 1 });
    await expect(store.put(['a'], 'k', 1)).rejects.toBeInstanceOf(EmbeddingError);
    db.close();
    await expect(store.get(['a'], 'k')).rejects.toBeInstanceOf(StoreError);
  });

  it('embed without dimensions is a ConfigurationError at construction, on every backend', () => {
    const embed = () => [[1]];
    expect(() => new MemoryStore({ embed })).toThrow(ConfigurationError);
    expect(() => new SQLiteStore(':memory:', { embed })).toThrow(ConfigurationError);
    expect(() => new PostgresStore('postgresql://x@127.0.0.1:1/x', { embed })).toThrow(ConfigurationError);
    void MemoryCheckpointer;
  });
});
