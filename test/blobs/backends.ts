// The three checkpointers with their blob stores, for the tests of test/blobs: a fresh store each, its raw rows (what
// a stored message row holds), and another handle on the same store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { MemoryCheckpointer, type BlobOptions, type Checkpointer } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FileSystemBlobStore } from 'cubepi/blobs/filesystem';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { dropSchema, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';

export interface BackendStore {
  readonly checkpointer: Checkpointer;
  /** The message rows of a thread as stored (its own rows); `undefined` for memory (no rows to read). */
  rawBodies(threadId: string): Promise<string[] | undefined>;
  /** How many blobs the own blob table holds; `undefined` for memory. */
  blobRows(): Promise<number | undefined>;
  /** Runs SQL on the store (to break it on purpose); not for memory. */
  exec(sql: string): Promise<void>;
  /** `sqlite <file>` / `postgres <schema>`: what a new process opens. */
  readonly location?: readonly [string, string];
  dispose(): Promise<void>;
}

export interface Backend {
  readonly name: string;
  open(options?: BlobOptions): Promise<BackendStore>;
}

export const memoryBackend: Backend = {
  name: 'MemoryCheckpointer',
  async open(options) {
    return {
      checkpointer: new MemoryCheckpointer(options),
      rawBodies: async () => undefined,
      blobRows: async () => undefined,
      exec: () => Promise.reject(new Error('memory has no SQL')),
      dispose: async () => {},
    };
  },
};

export const sqliteBackend: Backend = sqlite('SQLiteCheckpointer', false);
/** The SQLite checkpointer with a blob store of the caller's: a directory (blobs written outside the transaction). */
export const sqliteFilesBackend: Backend = sqlite('SQLiteCheckpointer + FileSystemBlobStore', true);

function sqlite(name: string, inDirectory: boolean): Backend {
  return { name, open: (options) => openSqlite(options, inDirectory) };
}

async function openSqlite(options: BlobOptions | undefined, inDirectory: boolean): Promise<BackendStore> {
  {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-blob-threads-'));
    const file = join(dir, 'threads.db');
    const blobs = options?.blobs ?? (inDirectory ? new FileSystemBlobStore(join(dir, 'blobs')) : undefined);
    const checkpointer = new SQLiteCheckpointer(file, { ...options, ...(blobs === undefined ? {} : { blobs }) });
    const raw = new Database(file);
    return {
      checkpointer,
      rawBodies: async (threadId) =>
        raw
          .prepare('SELECT body FROM cubepi_messages WHERE thread_id = ? ORDER BY seq')
          .pluck()
          .all(threadId) as string[],
      blobRows: async () =>
        inDirectory ? undefined : (raw.prepare('SELECT count(*) FROM cubepi_blobs').pluck().get() as number),
      exec: async (sql) => void raw.exec(sql),
      location: ['sqlite', file],
      dispose: async () => {
        raw.close();
        await checkpointer.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

export function postgresBackend(admin: () => pg.Pool): Backend {
  return {
    name: 'PostgresCheckpointer',
    async open(options) {
      const schema = uniqueSchema('blobthreads');
      const pool = testPool({ max: 4 });
      const checkpointer = new PostgresCheckpointer(pool, { ...options, schema });
      await checkpointer.migrate();
      return {
        checkpointer,
        rawBodies: async (threadId) =>
          (
            await admin().query<{ body: string }>(
              `SELECT coalesce(body::text, body_raw) AS body FROM "${schema}".cubepi_messages WHERE thread_id = $1
               ORDER BY seq`,
              [threadId],
            )
          ).rows.map((row) => row.body),
        blobRows: async () =>
          Number((await admin().query(`SELECT count(*) AS n FROM "${schema}".cubepi_blobs`)).rows[0].n),
        exec: async (sql) => void (await admin().query(sql.replaceAll('cubepi_', `"${schema}".cubepi_`))),
        location: ['postgres', schema],
        dispose: async () => {
          await checkpointer.close();
          await pool.end();
          await dropSchema(admin(), schema);
        },
      };
    },
  };
}
