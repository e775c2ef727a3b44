import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckpointError, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';

// Issue 15: while another connection holds the write lock, a call must wait without freezing the event loop.
// Nothing here asserts a duration (the machine is shared and noisy): the lock is released after the event loop has
// turned a number of times, so a call that blocks the thread never sees it released.

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const step of cleanup.splice(0).reverse()) step();
});

function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cubepi-sqlite-busy-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'threads.db');
}

/** A second connection to `path` that holds the write lock (`BEGIN IMMEDIATE`) until `release()`. */
function holdWriteLock(path: string): { release(): void } {
  const other = new Database(path);
  other.exec('BEGIN IMMEDIATE');
  const release = (): void => {
    if (other.inTransaction) other.exec('COMMIT');
  };
  cleanup.push(() => {
    release();
    other.close();
  });
  return { release };
}

/**
 * Counts turns of the event loop (a chain of `setTimeout(0)`), calling `onTick(count)` at each, until `stop()`.
 * A call that blocks the thread stops it from counting.
 */
function countTicks(onTick: (count: number) => void = () => {}): { readonly count: number; stop(): void } {
  let count = 0;
  let timer = setTimeout(function tick() {
    count++;
    onTick(count);
    timer = setTimeout(tick, 0);
  }, 0);
  const ticker = {
    get count() {
      return count;
    },
    stop: () => clearTimeout(timer),
  };
  cleanup.push(ticker.stop);
  return ticker;
}

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });

/** A store with thread `t` = [a] and extra `{ v: 1 }`, and a checkpointer on it. */
async function seeded(options: { busyTimeoutMs?: number } = {}): Promise<{ path: string; store: SQLiteCheckpointer }> {
  const path = tempFile();
  const store = new SQLiteCheckpointer(path, options);
  cleanup.push(() => void store.close());
  await store.append('t', [user('a')]);
  await store.saveExtra('t', { v: 1 });
  return { path, store };
}

const writes = [
  {
    operation: 'append',
    call: (store: SQLiteCheckpointer) => store.append('t', [user('b')], { expectedSeq: 1 }),
    resolves: { seq: 2 },
    stored: { messages: [user('a'), user('b')], extra: { v: 1 }, seq: 2 },
  },
  {
    operation: 'saveExtra',
    call: (store: SQLiteCheckpointer) => store.saveExtra('t', { v: 2 }),
    resolves: undefined,
    stored: { messages: [user('a')], extra: { v: 2 }, seq: 1 },
  },
  {
    operation: 'deleteThread',
    call: (store: SQLiteCheckpointer) => store.deleteThread('t'),
    resolves: undefined,
    stored: null,
  },
] as const;

describe('SQLiteCheckpointer while another connection holds the write lock', () => {
  for (const { operation, call, resolves, stored } of writes) {
    it(`${operation} waits with the event loop turning, then succeeds once the lock is released`, async () => {
      const { path, store } = await seeded();
      const lock = holdWriteLock(path);
      let settled = false;
      let settledAtRelease: boolean | undefined;
      const ticks = countTicks((count) => {
        if (count === 25) {
          settledAtRelease = settled;
          lock.release();
        }
      });
      const result = await call(store).finally(() => (settled = true));
      ticks.stop();
      expect(settledAtRelease).toBe(false); // it was still waiting for the lock when the lock was released
      expect(ticks.count).toBeGreaterThanOrEqual(25);
      expect(result).toEqual(resolves);
      expect(await store.load('t')).toEqual(stored);
    });

    it(`${operation} rejects past busyTimeoutMs with a CheckpointError saying the database was locked, and writes nothing`, async () => {
      const { path, store } = await seeded({ busyTimeoutMs: 300 });
      const lock = holdWriteLock(path);
      const ticks = countTicks();
      const error = await call(store).catch((caught: unknown) => caught);
      ticks.stop();
      expect(ticks.count).toBeGreaterThan(10);
      expect(error).toBeInstanceOf(CheckpointError);
      expect(error).toMatchObject({
        code: 'checkpoint_error',
        operation,
        threadId: 't',
        cause: { code: 'SQLITE_BUSY' },
      });
      expect((error as Error).message).toBe(
        `Checkpoint ${operation} failed for thread "t": the database was locked ` +
          '(another connection held the lock for all of busyTimeoutMs, 300 ms)',
      );
      lock.release();
      expect(await store.load('t')).toEqual({ messages: [user('a')], extra: { v: 1 }, seq: 1 });
    });
  }

  it('with busyTimeoutMs: 0, refuses at once without waiting', async () => {
    const { path, store } = await seeded({ busyTimeoutMs: 0 });
    holdWriteLock(path);
    await expect(store.append('t', [user('b')])).rejects.toThrow(/the database was locked/);
  });

  it('load and listThreads do not wait for a writer (WAL): they answer while the lock is held', async () => {
    const { path, store } = await seeded({ busyTimeoutMs: 60_000 });
    holdWriteLock(path);
    expect(await store.load('t')).toEqual({ messages: [user('a')], extra: { v: 1 }, seq: 1 });
    expect((await store.listThreads()).map((thread) => thread.threadId)).toEqual(['t']);
  });

  it('opens a store already at the current version without waiting for the lock', async () => {
    const { path } = await seeded();
    holdWriteLock(path);
    const second = new SQLiteCheckpointer(path, { busyTimeoutMs: 0 });
    cleanup.push(() => void second.close());
    expect((await second.load('t'))?.seq).toBe(1);
  });

  it('waits the same way on a Database passed in with { timeout: 0 }, and leaves its busy_timeout alone', async () => {
    const path = tempFile();
    const db = new Database(path, { timeout: 0 });
    cleanup.push(() => db.close());
    const store = new SQLiteCheckpointer(db);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(0);
    const other = new Database(path);
    cleanup.push(() => other.close());
    expect(other.pragma('busy_timeout', { simple: true })).toBe(5000);
    void new SQLiteCheckpointer(other).close();
    expect(other.pragma('busy_timeout', { simple: true })).toBe(5000);

    await store.append('t', [user('a')]);
    const lock = holdWriteLock(path);
    const ticks = countTicks((count) => count === 25 && lock.release());
    expect(await store.append('t', [user('b')], { expectedSeq: 1 })).toEqual({ seq: 2 });
    expect(ticks.count).toBeGreaterThanOrEqual(25);
  });

  it('does not retry inside a transaction of the caller (a later attempt would run outside it)', async () => {
    const path = tempFile();
    const db = new Database(path, { timeout: 0 });
    cleanup.push(() => db.close());
    const store = new SQLiteCheckpointer(db);
    await store.append('t', [user('a')]);
    db.exec('BEGIN');
    holdWriteLock(path);
    await expect(store.append('t', [user('b')])).rejects.toMatchObject({
      operation: 'append',
      cause: { code: 'SQLITE_BUSY' },
    });
    expect(db.inTransaction).toBe(true);
    db.exec('ROLLBACK');
  });
});

describe('SQLiteCheckpointer reads refused with SQLITE_BUSY', () => {
  // In WAL a writer never blocks a reader, but SQLite can still refuse a read (SQLITE_BUSY_RECOVERY while another
  // connection recovers the WAL after a crash). The driver's refusal is simulated here.
  function refuseReads(times: number): { readonly calls: number } {
    const probe = new Database(':memory:');
    const statement = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { all: (...args: unknown[]) => unknown };
    probe.close();
    const all = statement.all;
    let calls = 0;
    statement.all = function (this: unknown, ...args: unknown[]) {
      if (++calls <= times) throw new Database.SqliteError('database is locked', 'SQLITE_BUSY_RECOVERY');
      return all.apply(this, args);
    };
    cleanup.push(() => (statement.all = all));
    return {
      get calls() {
        return calls;
      },
    };
  }

  it('retries load and listThreads until SQLite answers', async () => {
    const { store } = await seeded();
    const refusals = refuseReads(3);
    expect(await store.load('t')).toEqual({ messages: [user('a')], extra: { v: 1 }, seq: 1 });
    expect(refusals.calls).toBe(4);
    const again = refuseReads(3);
    expect((await store.listThreads()).map((thread) => thread.threadId)).toEqual(['t']);
    expect(again.calls).toBe(4);
  });

  it('rejects load and listThreads past busyTimeoutMs with a CheckpointError saying the database was locked', async () => {
    const { store } = await seeded({ busyTimeoutMs: 50 });
    refuseReads(Infinity);
    await expect(store.load('t')).rejects.toMatchObject({
      operation: 'load',
      threadId: 't',
      message: expect.stringContaining('the database was locked'),
    });
    await expect(store.listThreads()).rejects.toMatchObject({
      operation: 'listThreads',
      message: expect.stringContaining('the database was locked'),
    });
  });
});
