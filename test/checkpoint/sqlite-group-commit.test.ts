// Issue 35: group commit. The writes made in one turn of the event loop, on any thread, land in one transaction (one
// fsync); each caller keeps its own outcome, and one thread's writes keep their order. The number of transactions is
// read from the WAL itself (its commit frames), not from the code under test, and nothing here asserts a duration.
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CheckpointError, ThreadConflictError, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { bundledScript } from '../bundled-script.js';

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const step of cleanup.splice(0).reverse()) step();
});

function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-sqlite-group-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'threads.db');
}

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });

/**
 * The transactions committed to `path`'s WAL since it was last restarted: its frames whose salt is the header's (the
 * current generation) and whose "database size after commit" field is set (the last frame of each commit).
 */
function walCommits(path: string): number {
  const fd = openSync(`${path}-wal`, 'r');
  try {
    const size = statSync(`${path}-wal`).size;
    if (size < 32) return 0;
    const header = Buffer.alloc(32);
    readSync(fd, header, 0, 32, 0);
    const pageSize = header.readUInt32BE(8);
    const salt = header.subarray(16, 24);
    const frame = Buffer.alloc(24);
    let commits = 0;
    for (let at = 32; at + 24 + pageSize <= size; at += 24 + pageSize) {
      readSync(fd, frame, 0, 24, at);
      if (!frame.subarray(8, 16).equals(salt)) break;
      if (frame.readUInt32BE(4) !== 0) commits++;
    }
    return commits;
  } finally {
    closeSync(fd);
  }
}

/** A checkpointer on a `Database` of the test's, whose WAL is never checkpointed (so every commit stays countable). */
function counted(): { path: string; db: Database.Database; store: SQLiteCheckpointer } {
  const path = tempFile();
  const db = new Database(path, { timeout: 0 });
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  const store = new SQLiteCheckpointer(db);
  cleanup.push(() => db.close());
  return { path, db, store };
}

describe('SQLiteCheckpointer group commit', () => {
  it("commits the first append of a turn at once and the next 49 threads' appends of that turn in one transaction", async () => {
    const { path, store } = counted();
    const before = walCommits(path);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.append(`t${i}`, [user(`a${i}`), user(`b${i}`)], { expectedSeq: 0 })),
    );
    expect(results).toEqual(Array.from({ length: 50 }, () => ({ seq: 2 })));
    // The first alone (no queue: it runs inside its call, as before group commit), the other 49 together.
    expect(walCommits(path) - before).toBe(2);
    // The next turn's writes: again the first alone, then the rest.
    await Promise.all([
      store.append('t0', [user('c0')], { expectedSeq: 2 }),
      store.saveExtra('t1', { v: 1 }),
      store.saveExtra('t2', { v: 2 }),
    ]);
    expect(walCommits(path) - before).toBe(4);
    for (let i = 0; i < 50; i++) expect((await store.load(`t${i}`))!.seq).toBe(i === 0 ? 3 : 2);
    expect((await store.load('t1'))!.extra).toEqual({ v: 1 });
  });

  it("keeps one thread's writes in call order within a group, and a stale expectedSeq rejects only its caller", async () => {
    const { path, store } = counted();
    const before = walCommits(path);
    const calls = [
      store.append('t', [user('m0')], { expectedSeq: 0 }),
      store.append('t', [user('m1')], { expectedSeq: 1 }),
      store.append('t', [user('stale')], { expectedSeq: 1 }),
      store.saveExtra('t', { after: 'm1' }),
      store.append('t', [user('m2'), user('m3')], { expectedSeq: 2 }),
      store.append('other', [user('x')]),
    ];
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    const conflict = (settled[2] as PromiseRejectedResult).reason as ThreadConflictError;
    expect(conflict).toBeInstanceOf(ThreadConflictError);
    expect([conflict.expected, conflict.actual]).toEqual([1, 2]);
    expect((settled[4] as PromiseFulfilledResult<unknown>).value).toEqual({ seq: 4 });
    expect(walCommits(path) - before).toBe(2);
    const saved = await store.load('t');
    expect(saved!.messages.map((m) => m.content)).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(saved!.extra).toEqual({ after: 'm1' });
  });

  it('rolls back only the append a statement refused (a savepoint each): its caller alone rejects, nothing half written', async () => {
    const { path, db, store } = counted();
    await store.append('seed', [user('s')]);
    await new Promise((resolve) => setImmediate(resolve)); // a turn with no write queued: the next write runs alone
    db.exec(`CREATE TRIGGER poison BEFORE INSERT ON cubepi_messages WHEN NEW.body LIKE '%poison%'
             BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`);
    const before = walCommits(path);
    const settled = await Promise.allSettled([
      store.append('first', [user('f')]), // alone; a, b and c are one group
      store.append('a', [user('a0')]),
      store.append('b', [user('b0'), user('poison'), user('b2')]),
      store.append('c', [user('c0')]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const error = (settled[2] as PromiseRejectedResult).reason as CheckpointError;
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error.threadId).toBe('b');
    expect(String((error.cause as Error).message)).toContain('poisoned row');
    expect(walCommits(path) - before).toBe(2);
    expect(await store.load('b')).toBeNull();
    expect((await store.load('a'))!.seq).toBe(1);
    expect((await store.load('c'))!.seq).toBe(1);
  });

  it('runs each write of a group alone when one ended the whole transaction, so each caller gets its own outcome', async () => {
    const { db, store } = counted();
    await store.append('seed', [user('s')]);
    await new Promise((resolve) => setImmediate(resolve)); // a turn with no write queued: the next write runs alone
    // RAISE(ROLLBACK) rolls back the whole transaction, not just the statement.
    db.exec(`CREATE TRIGGER poison BEFORE INSERT ON cubepi_messages WHEN NEW.body LIKE '%poison%'
             BEGIN SELECT RAISE(ROLLBACK, 'poisoned transaction'); END`);
    const settled = await Promise.allSettled([
      store.append('first', [user('f')]), // alone; a, b and c are one group
      store.append('a', [user('a0')]),
      store.append('b', [user('b0'), user('poison')]),
      store.saveExtra('c', { v: 1 }),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const error = (settled[2] as PromiseRejectedResult).reason as CheckpointError;
    expect(error.threadId).toBe('b');
    expect(String((error.cause as Error).message)).toContain('poisoned transaction');
    expect(await store.load('b')).toBeNull();
    expect((await store.load('a'))!.messages).toEqual([user('a0')]);
    expect((await store.load('c'))!.extra).toEqual({ v: 1 });
  });

  it('lets a load see the writes called before it, awaited or not', async () => {
    const { store } = counted();
    const append = store.append('t', [user('a')]);
    const extra = store.saveExtra('t', { v: 1 });
    const loaded = await store.load('t');
    expect(loaded).toEqual({ messages: [user('a')], extra: { v: 1 }, seq: 1 });
    expect(await store.listThreads()).toHaveLength(1);
    await Promise.all([append, extra]);
  });

  it('waits for a lock held elsewhere as one group, then commits every write of it', async () => {
    const path = tempFile();
    const store = new SQLiteCheckpointer(path);
    cleanup.push(() => void store.close());
    await store.append('seed', [user('s')]);
    const other = new Database(path);
    cleanup.push(() => other.close());
    other.exec('BEGIN IMMEDIATE');
    const writes = Promise.all([store.append('a', [user('a0')]), store.append('b', [user('b0')])]);
    let turns = 0;
    // Released after the event loop has turned: a write that blocked the thread would never see it released.
    await new Promise<void>((resolve) => {
      const tick = (): void => {
        if (++turns === 20) {
          other.exec('COMMIT');
          resolve();
        } else setTimeout(tick, 0);
      };
      setTimeout(tick, 0);
    });
    expect(await writes).toEqual([{ seq: 1 }, { seq: 1 }]);
    expect((await store.load('b'))!.seq).toBe(1);
  });

  it('rejects every write of a group that never got the lock with its own locked error, having written nothing', async () => {
    const path = tempFile();
    const store = new SQLiteCheckpointer(path, { busyTimeoutMs: 50 });
    cleanup.push(() => void store.close());
    await store.append('seed', [user('s')]);
    const other = new Database(path);
    cleanup.push(() => other.close());
    other.exec('BEGIN IMMEDIATE');
    const settled = await Promise.allSettled([store.append('a', [user('a0')]), store.saveExtra('b', { v: 1 })]);
    other.exec('COMMIT');
    const reasons = settled.map((s) => (s as PromiseRejectedResult).reason as CheckpointError);
    expect(reasons.map((e) => [e.operation, e.threadId])).toEqual([
      ['append', 'a'],
      ['saveExtra', 'b'],
    ]);
    for (const e of reasons) expect(e.message).toContain('the database was locked');
    expect(await store.load('a')).toBeNull();
    expect(await store.load('b')).toBeNull();
  });

  it('checkpoints the WAL of a file it opened after writes (autocheckpoint off, a PASSIVE checkpoint on a timer)', async () => {
    const path = tempFile();
    const store = new SQLiteCheckpointer(path);
    cleanup.push(() => void store.close());
    const fileSize = statSync(path).size;
    const big = 'x'.repeat(4000);
    await Promise.all(Array.from({ length: 40 }, (_, i) => store.append(`t${i}`, [user(`${i} ${big}`)])));
    // The rows reach the database file itself once the checkpoint has run (the WAL held them until then).
    await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(fileSize + 40 * 4000), { timeout: 10_000 });
    const reader = new Database(path, { readonly: true });
    cleanup.push(() => reader.close());
    expect(reader.prepare('SELECT count(*) FROM cubepi_messages').pluck().get()).toBe(40);
  });

  it('finishes close() in a process with nothing else to do, after the WAL worker has run', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/close-after-checkpoint.ts', import.meta.url));
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [await bundledScript(fixture), tempFile()], {
      cwd: root,
    });
    expect(stdout).toBe('closed\n');
  });
});
