// The BlobStore contract (cubepi/testing's blobStoreConformance) on every built-in store: memory, a directory, the
// SQLite checkpointer's table in a real file, the PostgreSQL checkpointer's table on the real server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { MemoryBlobStore } from 'cubepi';
import { FileSystemBlobStore } from 'cubepi/blobs/filesystem';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { blobStoreConformance } from 'cubepi/testing';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  requirePostgres,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';

requirePostgres();
const admin = pgAvailable ? testPool({ max: 2 }) : undefined;
afterAll(async () => {
  await admin?.end();
});

blobStoreConformance(() => new MemoryBlobStore(), { name: 'MemoryBlobStore', describe, it });

blobStoreConformance(
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-blobs-'));
    return {
      store: new FileSystemBlobStore(join(dir, 'store')),
      reopen: () => new FileSystemBlobStore(join(dir, 'store')),
      dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
  },
  { name: 'FileSystemBlobStore', describe, it },
);

blobStoreConformance(
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-blobs-sqlite-'));
    const file = join(dir, 'threads.db');
    const opened: SQLiteCheckpointer[] = [new SQLiteCheckpointer(file)];
    return {
      store: opened[0]!.blobs!,
      reopen: () => (opened.push(new SQLiteCheckpointer(file)), opened.at(-1)!.blobs!),
      dispose: async () => {
        for (const checkpointer of opened) await checkpointer.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  { name: 'SQLiteCheckpointer.blobs', describe, it },
);

describe.skipIf(!pgAvailable)('PostgreSQL', () => {
  blobStoreConformance(
    () => {
      const schema = uniqueSchema('blobs');
      const pool = testPool({ max: 4 });
      const other = new PostgresCheckpointer(connectionString(), { schema });
      return {
        store: new PostgresCheckpointer(pool, { schema }).blobs!,
        reopen: () => other.blobs!,
        dispose: async () => {
          await other.close();
          await pool.end();
          await dropSchema(admin!, schema);
        },
      };
    },
    { name: 'PostgresCheckpointer.blobs', describe, it, timeoutMs: 60_000 },
  );
});
