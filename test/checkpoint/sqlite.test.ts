import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CheckpointCorruptionError,
  CheckpointError,
  CheckpointSchemaError,
  ConfigurationError,
  type Message,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { checkpointerConformance } from 'cubepi/testing';

const dirs: string[] = [];
function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-sqlite-'));
  dirs.push(dir);
  return join(dir, 'threads.db');
}
function removeTemp(path: string): void {
  rmSync(join(path, '..'), { recursive: true, force: true });
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });

checkpointerConformance(
  () => {
    const path = tempFile();
    const checkpointer = new SQLiteCheckpointer(path);
    return {
      checkpointer,
      reopen: () => new SQLiteCheckpointer(path),
      dispose: async () => {
        await checkpointer.close();
        removeTemp(path);
      },
    };
  },
  { name: 'SQLiteCheckpointer conformance (a file it opens; reopen = another connection)', describe, it },
);

checkpointerConformance(
  () => {
    const db = new Database(':memory:');
    return { checkpointer: new SQLiteCheckpointer(db), dispose: () => void db.close() };
  },
  { name: 'SQLiteCheckpointer conformance (an open Database)', describe, it },
);

describe('SQLiteCheckpointer on a file', () => {
  it('creates its tables in an empty file, at schema version 4, and switches it to WAL', async () => {
    const path = tempFile();
    const checkpointer = new SQLiteCheckpointer(path);
    await checkpointer.append('t', [user('a')]);
    const db = new Database(path, { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cubepi_%'`).pluck();
      expect((tables.all() as string[]).sort()).toEqual([
        'cubepi_blob_refs',
        'cubepi_blobs',
        'cubepi_messages',
        'cubepi_schema_version',
        'cubepi_threads',
      ]);
      expect(db.prepare('SELECT version FROM cubepi_schema_version').pluck().get()).toBe(4);
      const pk = db.prepare(`SELECT name FROM pragma_table_info('cubepi_messages') WHERE pk > 0 ORDER BY pk`).pluck();
      expect(pk.all()).toEqual(['thread_id', 'seq']);
      expect(existsSync(`${path}-wal`)).toBe(true);
    } finally {
      db.close();
      await checkpointer.close();
    }
  });

  it('loads a thread by one range scan of the (thread_id, seq) primary key, already in seq order', async () => {
    const path = tempFile();
    await new SQLiteCheckpointer(path).close();
    const db = new Database(path);
    try {
      const plan = db
        .prepare('EXPLAIN QUERY PLAN SELECT seq, body FROM cubepi_messages WHERE thread_id = ? ORDER BY seq')
        .all('t') as { detail: string }[];
      expect(plan.map((row) => row.detail)).toEqual([
        'SEARCH cubepi_messages USING INDEX sqlite_autoindex_cubepi_messages_1 (thread_id=?)',
      ]);
    } finally {
      db.close();
    }
  });

  it('reopens a file at the current version without migrating it again', async () => {
    const path = tempFile();
    const first = new SQLiteCheckpointer(path);
    await first.append('t', [user('a'), user('b')]);
    await first.close();
    const second = new SQLiteCheckpointer(path);
    expect((await second.load('t'))?.seq).toBe(2);
    await second.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM cubepi_schema_version').pluck().get()).toBe(1);
    expect(db.prepare('SELECT version FROM cubepi_schema_version').pluck().get()).toBe(4);
    db.close();
  });

  it('refuses a file at a newer schema version, before writing anything', async () => {
    const path = tempFile();
    const first = new SQLiteCheckpointer(path);
    await first.append('t', [user('a')]);
    await first.close();
    const db = new Database(path);
    db.prepare('UPDATE cubepi_schema_version SET version = 99').run();
    const before = db.prepare('SELECT count(*) FROM sqlite_master').pluck().get();
    let error: unknown;
    try {
      new SQLiteCheckpointer(path);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(CheckpointSchemaError);
    expect(error).toMatchObject({ code: 'checkpoint_schema', found: 99, supported: 4 });
    expect((error as Error).message).toContain('newer than this cubepi supports');
    expect(() => new SQLiteCheckpointer(db)).toThrow(CheckpointSchemaError);
    expect(db.prepare('SELECT count(*) FROM sqlite_master').pluck().get()).toBe(before);
    expect(db.prepare('SELECT version FROM cubepi_schema_version').pluck().get()).toBe(99);
    db.close();
  });

  it('reports a corrupt row as a CheckpointCorruptionError naming the thread and the seq', async () => {
    const path = tempFile();
    const checkpointer = new SQLiteCheckpointer(path);
    const db = new Database(path);
    // Each case damages its own thread of three messages (seq 0, 1, 2) behind the checkpointer's back.
    const cases: [string, number | undefined, RegExp][] = [
      [`UPDATE cubepi_messages SET body = '{"role":' WHERE thread_id = ? AND seq = 1`, 1, /not valid JSON/],
      [`UPDATE cubepi_messages SET body = '{"role":"robot"}' WHERE thread_id = ? AND seq = 2`, 2, /not a message/],
      [`DELETE FROM cubepi_messages WHERE thread_id = ? AND seq = 1`, 1, /missing/],
      [`UPDATE cubepi_threads SET next_seq = 4 WHERE thread_id = ?`, 3, /missing/],
      [`UPDATE cubepi_threads SET next_seq = 2 WHERE thread_id = ?`, 2, /beyond/],
      [`UPDATE cubepi_threads SET extra = '[1]' WHERE thread_id = ?`, undefined, /extra/],
    ];
    try {
      await checkpointer.append('healthy', [user('a')]);
      for (const [i, [sql, seq, reason]] of cases.entries()) {
        const threadId = `damaged-${i}`;
        await checkpointer.append(threadId, [user('a'), user('b'), user('c')]);
        db.prepare(sql).run(threadId);
        const error = await checkpointer.load(threadId).catch((caught: unknown) => caught);
        expect(error, sql).toBeInstanceOf(CheckpointCorruptionError);
        expect(error, sql).toMatchObject({ code: 'checkpoint_corruption', threadId, seq, operation: 'load' });
        expect((error as CheckpointCorruptionError).reason, sql).toMatch(reason);
        expect((error as Error).message, sql).toContain(`thread "${threadId}"`);
      }
      expect((await checkpointer.load('healthy'))?.seq).toBe(1);
    } finally {
      db.close();
      await checkpointer.close();
    }
  });

  it('turns a failing write into a CheckpointError naming the thread, and writes nothing of the batch', async () => {
    const db = new Database(tempFile());
    const checkpointer = new SQLiteCheckpointer(db);
    await checkpointer.append('t', [user('a')]);
    // A trigger that fails the second row of a batch: the first row and the counter must be rolled back with it.
    db.exec(`CREATE TRIGGER poison BEFORE INSERT ON cubepi_messages
             WHEN json_extract(NEW.body, '$.content') = 'poison' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`);
    const error = await checkpointer.append('t', [user('b'), user('poison')]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', threadId: 't', operation: 'append' });
    expect((error as Error).message).toContain('thread "t"');
    expect(((error as Error).cause as Error).message).toBe('disk on fire');
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    expect(await checkpointer.append('t', [user('b')], { expectedSeq: 1 })).toEqual({ seq: 2 });
    db.close();
  });

  it('turns a full disk (SQLITE_FULL) into a CheckpointError, and writes nothing', async () => {
    const db = new Database(tempFile());
    const checkpointer = new SQLiteCheckpointer(db);
    await checkpointer.append('t', [user('a')]);
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const big = user('x'.repeat(64 * 1024));
    const error = await checkpointer.append('t', [big]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ threadId: 't', operation: 'append', cause: { code: 'SQLITE_FULL' } });
    expect((await checkpointer.load('t'))?.seq).toBe(1);
    db.close();
  });

  it('turns every call on a closed database into a CheckpointError', async () => {
    const checkpointer = new SQLiteCheckpointer(tempFile());
    await checkpointer.close();
    await checkpointer.close(); // idempotent
    for (const [call, operation] of [
      [() => checkpointer.load('t'), 'load'],
      [() => checkpointer.append('t', [user('a')]), 'append'],
      [() => checkpointer.saveExtra('t', {}), 'saveExtra'],
      [() => checkpointer.deleteThread('t'), 'deleteThread'],
    ] as const) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toMatchObject({ operation, threadId: 't' });
    }
    await expect(checkpointer.listThreads()).rejects.toMatchObject({
      code: 'checkpoint_error',
      operation: 'listThreads',
    });
  });

  it('closes a file it opened, and leaves open a Database it was given', async () => {
    const db = new Database(tempFile());
    await new SQLiteCheckpointer(db).close();
    expect(db.open).toBe(true);
    db.close();
  });

  it('keeps stores with different table prefixes apart in one file', async () => {
    const path = tempFile();
    const a = new SQLiteCheckpointer(path, { tablePrefix: 'app_a_' });
    const b = new SQLiteCheckpointer(path, { tablePrefix: 'app_b_' });
    await a.append('t', [user('from a')]);
    expect(await b.load('t')).toBeNull();
    expect(await b.listThreads()).toEqual([]);
    await Promise.all([a.close(), b.close()]);
  });

  it('refuses bad options at construction', () => {
    expect(() => new SQLiteCheckpointer(':memory:', { tablePrefix: 'bad"; DROP' })).toThrow(ConfigurationError);
    expect(() => new SQLiteCheckpointer(':memory:', { synchronous: 'off' as 'full' })).toThrow(ConfigurationError);
    for (const busyTimeoutMs of [-1, 1.5, NaN, 2 ** 31]) {
      expect(() => new SQLiteCheckpointer(':memory:', { busyTimeoutMs })).toThrow(ConfigurationError);
    }
  });

  it('wraps a file it cannot open in a CheckpointError', () => {
    expect(() => new SQLiteCheckpointer(join(tmpdir(), 'no-such-dir-cubepi', 'x', 'threads.db'))).toThrow(
      CheckpointError,
    );
  });
});
