// The run-event log on the real PostgreSQL: replay then live tail with no gap or duplicate (an append racing the
// reader's first query included), resume from every seq (mid-message, through compact updates), a writer in another
// process, appends ordered and refused, cancellation releasing (and UNLISTENing) the connection, retention.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { firstValueFrom, lastValueFrom, timeout, toArray, type Observable } from 'rxjs';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InvalidInputError } from 'cubepi';
import { createRunEventLog, RunEventLogError, type RunEventLog, type WireFrame } from 'cubepi/worker';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  requirePostgres,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';
import { plain, scriptedRun } from './run-frames.js';

requirePostgres();

const root = fileURLToPath(new URL('../..', import.meta.url));
const writer = fileURLToPath(new URL('./fixtures/append-run.ts', import.meta.url));

const admin = pgAvailable ? testPool({ max: 2 }) : (undefined as unknown as pg.Pool);
afterAll(async () => {
  await admin?.end();
});

/** The log's readRunEvents, with its test seam (`afterListen`). */
type WithHooks = RunEventLog & {
  readRunEvents(
    runId: string,
    options: { after?: number },
    hooks: { afterListen?: () => Promise<void> },
  ): Observable<WireFrame>;
};

const BACKENDS = 'SELECT pid FROM pg_stat_activity WHERE application_name = $1';

/** Every frame until completion; a reader that hangs (a missed wake-up) fails after 10 s instead of the whole file. */
const all = (frames: Observable<WireFrame>): Promise<WireFrame[]> =>
  lastValueFrom(frames.pipe(timeout({ each: 10_000 }), toArray()));

describe.skipIf(!pgAvailable)('run-event log (PostgreSQL)', () => {
  let schema: string;
  let pool: pg.Pool;
  let log: RunEventLog;

  beforeEach(async () => {
    schema = uniqueSchema('runevents');
    pool = testPool({ max: 8 });
    log = createRunEventLog({ pool, schema });
    await log.migrate();
  });
  afterEach(async () => {
    await pool.end();
    await dropSchema(admin, schema);
  });

  it('replays the stored frames, then follows the live tail, and completes at the terminal frame', async () => {
    const frames = scriptedRun('r1', 2, 10);
    await log.appendRunEvents('r1', frames.slice(0, 7));
    const seen: WireFrame[] = [];
    const done = new Promise<void>((resolve, reject) =>
      log.runEvents('r1').subscribe({ next: (f) => seen.push(f), error: reject, complete: resolve }),
    );
    await vi.waitFor(() => expect(seen).toHaveLength(7));
    for (let i = 7; i < frames.length; i += 5) await log.appendRunEvents('r1', frames.slice(i, i + 5));
    await done;
    expect(plain(seen)).toEqual(plain(frames));
    // Stored compact: the text deltas after the first of each message (the bytes stay linear in the answer).
    const { rows } = await admin.query<{ compact: number }>(
      `SELECT count(*)::int AS compact FROM "${schema}".cubepi_run_events WHERE run_id = 'r1' AND compact`,
    );
    expect(rows[0]!.compact).toBe(2 * 10);
  });

  it('resumes from every seq: the frames after it, whole, even from the middle of a streamed message', async () => {
    const frames = scriptedRun('r2', 2, 6);
    await log.appendRunEvents('r2', frames);
    for (let after = 0; after <= frames.length; after++) {
      expect(plain(await all(log.runEvents('r2', { after }))), `after ${after}`).toEqual(plain(frames.slice(after)));
    }
  });

  it('resumes mid-message across pages (page size 3: the replay and its priming are paged)', async () => {
    const small = createRunEventLog({ pool, schema, pageSize: 3 });
    const frames = scriptedRun('r3', 1, 20);
    await small.appendRunEvents('r3', frames);
    for (const after of [0, 5, 11, 17, frames.length - 1]) {
      expect(plain(await all(small.runEvents('r3', { after }))), `after ${after}`).toEqual(plain(frames.slice(after)));
    }
  });

  // The append lands after the reader's LISTEN and before its first query: in both, and notified. Appending the whole
  // rest there, terminal frame included, leaves nothing later to wake a reader that missed it (it would wait forever);
  // appending a batch there and the rest later makes a reader that read the batch twice repeat it.
  it.each([
    ['the rest of the run, terminal frame included', 100],
    ['a batch, and the rest later', 9],
  ])('loses and repeats nothing when an append commits between its LISTEN and its first query (%s)', async (_, cut) => {
    const frames = scriptedRun('race', 1, 8);
    await log.appendRunEvents('race', frames.slice(0, 4));
    const otherPool = testPool({ max: 2 });
    const other = createRunEventLog({ pool: otherPool, schema }); // another writer, its own connections
    let raced = 0;
    try {
      const seen = await all(
        (log as WithHooks).readRunEvents(
          'race',
          { after: 2 },
          {
            afterListen: async () => {
              await other.appendRunEvents('race', frames.slice(4, cut));
              raced++;
              if (cut < frames.length) setTimeout(() => void other.appendRunEvents('race', frames.slice(cut)), 20);
            },
          },
        ),
      );
      expect(raced).toBe(1);
      expect(seen.map((f) => f.seq)).toEqual(frames.slice(2).map((f) => f.seq));
      expect(plain(seen)).toEqual(plain(frames.slice(2)));
    } finally {
      await otherPool.end();
    }
  });

  it('streams a run written by another process to readers that join at any point, each frame once', async () => {
    const frames = scriptedRun('child-run', 3, 15);
    const readers: Promise<WireFrame[]>[] = [all(log.runEvents('child-run'))]; // subscribed before the writer runs
    const starts: number[] = [0];
    const child = spawn(process.execPath, ['--import', 'tsx', writer, schema, 'child-run', '3', '15', '4', '3'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let buffer = '';
    let batches = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        const committed = Number(line);
        // Every third batch, a reader joins, resuming from a seq at or before what is committed (mid-message too).
        if (++batches % 3 === 0) {
          const after = Math.max(0, committed - (batches % 7));
          starts.push(after);
          readers.push(all(log.runEvents('child-run', { after })));
        }
      }
    });
    expect(await exited, stderr).toBe(0);
    expect(starts.length).toBeGreaterThan(5);
    const results = await Promise.all(readers);
    results.forEach((seen, i) =>
      expect(plain(seen), `reader from ${starts[i]}`).toEqual(plain(frames.slice(starts[i]))),
    );
  });

  it('writes calls made without waiting in call order, merged, and refuses frames out of order', async () => {
    const frames = scriptedRun('order', 1, 30);
    await Promise.all(frames.map((frame) => log.appendRunEvents('order', [frame])));
    expect(plain(await all(log.runEvents('order')))).toEqual(plain(frames));
    expect(await log.lastSeq('order')).toBe(frames.length);

    const [a, b] = scriptedRun('bad', 1, 1);
    await expect(log.appendRunEvents('bad', [b!, a!])).rejects.toBeInstanceOf(InvalidInputError);
    await expect(log.appendRunEvents('bad', [{ kind: 'end', seq: 1, runId: 'bad' }, b!])).rejects.toThrow(/not last/);
    expect(await log.lastSeq('bad')).toBe(0); // nothing written
  });

  it('refuses a second writer that does not continue the run, and any append after its terminal frame', async () => {
    const frames = scriptedRun('two', 1, 3);
    const second = createRunEventLog({ pool, schema });
    await log.appendRunEvents('two', frames.slice(0, 4));
    const stale = await second.appendRunEvents('two', frames.slice(2, 5)).catch((error: unknown) => error);
    expect(stale).toBeInstanceOf(RunEventLogError);
    expect(stale).toMatchObject({ reason: 'seq_order', runId: 'two' });
    await second.appendRunEvents('two', frames.slice(4)); // continuing it is fine, from any process
    const late = await log
      .appendRunEvents('two', [{ ...frames[0]!, seq: frames.length + 1 }])
      .catch((error: unknown) => error);
    expect(late).toMatchObject({ reason: 'run_ended' });
    expect(plain(await all(log.runEvents('two')))).toEqual(plain(frames));
  });

  it('ends at an error frame too, and a reader resuming at or past the terminal frame completes at once', async () => {
    const frames = scriptedRun('failed', 1, 2).slice(0, -1);
    const error: WireFrame = {
      kind: 'error',
      seq: frames.length + 1,
      runId: 'failed',
      error: { name: 'ProviderError', message: 'overloaded', code: 'provider_error' },
    };
    await log.appendRunEvents('failed', [...frames, error]);
    const seen = await all(log.runEvents('failed', { after: frames.length - 1 }));
    expect(plain(seen)).toEqual(plain([frames.at(-1)!, error]));
    expect(await all(log.runEvents('failed', { after: error.seq }))).toEqual([]);
    expect(await all(log.runEvents('failed', { after: error.seq + 5 }))).toEqual([]);
  });

  it('releases its connection, UNLISTENed, when unsubscribed, and emits nothing after', async () => {
    const name = `reader_${schema.slice(-8)}`;
    const one = testPool({ max: 1, application_name: name });
    const seen: WireFrame[] = [];
    const subscription = createRunEventLog({ pool: one, schema })
      .runEvents('cancel')
      .subscribe((frame) => seen.push(frame));
    try {
      const frames = scriptedRun('cancel', 1, 4);
      await log.appendRunEvents('cancel', frames.slice(0, 3));
      await vi.waitFor(() => expect(seen).toHaveLength(3));
      // Held: the pool's only connection is out, its backend is there.
      expect(one.totalCount - one.idleCount).toBe(1);
      expect((await admin.query(BACKENDS, [name])).rowCount).toBe(1);

      subscription.unsubscribe();
      await vi.waitFor(() => expect(one.idleCount).toBe(1));
      // The same (only) connection, back in the pool, listens to nothing.
      const channels = await one.query('SELECT pg_listening_channels()');
      expect(channels.rowCount).toBe(0);
      await log.appendRunEvents('cancel', frames.slice(3));
      await one.query('SELECT 1'); // a round trip after the append's commit (and its NOTIFY)
      expect(seen).toHaveLength(3);
    } finally {
      subscription.unsubscribe();
      await one.end();
    }
  });

  it('releases the connection when unsubscribed before it was even connected, and on completion', async () => {
    const one = testPool({ max: 1 });
    try {
      const reader = createRunEventLog({ pool: one, schema });
      reader.runEvents('nothing-yet').subscribe().unsubscribe();
      await vi.waitFor(() => expect(one.totalCount === 0 || one.idleCount === one.totalCount).toBe(true));
      const frames = scriptedRun('whole', 1, 1);
      await log.appendRunEvents('whole', frames);
      await all(reader.runEvents('whole'));
      await vi.waitFor(() => expect(one.idleCount).toBe(one.totalCount));
      expect((await one.query('SELECT pg_listening_channels()')).rowCount).toBe(0);
    } finally {
      await one.end();
    }
  });

  it('fails with a RunEventLogError when its connection is lost', async () => {
    const name = `lost_${schema.slice(-8)}`;
    const one = testPool({ max: 1, application_name: name });
    try {
      const failure = firstValueFrom(createRunEventLog({ pool: one, schema }).runEvents('lost')).catch(
        (error: unknown) => error,
      );
      // Its backend, once the reader has connected and is waiting for the run's first frame.
      const pid = await vi.waitFor(async () => {
        const { rows } = await admin.query<{ pid: number; query: string }>(`${BACKENDS} AND query LIKE 'SELECT%'`, [
          name,
        ]);
        expect(rows).toHaveLength(1);
        return rows[0]!.pid;
      });
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      const error = await failure;
      expect(error).toBeInstanceOf(RunEventLogError);
      expect(error).toMatchObject({ reason: 'database', runId: 'lost' });
      await vi.waitFor(() => expect(one.totalCount).toBe(0)); // the broken connection was destroyed, not pooled
    } finally {
      await one.end();
    }
  });

  it('deletes whole runs whose last frame is older than a date (retention)', async () => {
    await log.appendRunEvents('old', scriptedRun('old', 1, 2));
    await log.appendRunEvents('new', scriptedRun('new', 1, 2));
    await admin.query(
      `UPDATE "${schema}".cubepi_run_events SET appended_at = now() - interval '2 days' WHERE run_id = 'old'`,
    );
    // A run with one recent frame among old ones is kept whole.
    await log.appendRunEvents('mixed', scriptedRun('mixed', 1, 2).slice(0, 3));
    await admin.query(
      `UPDATE "${schema}".cubepi_run_events SET appended_at = now() - interval '2 days'
       WHERE run_id = 'mixed' AND seq < 3`,
    );
    expect(await log.deleteRunEventsBefore(new Date(Date.now() - 24 * 3600_000))).toBe(1);
    expect(await log.lastSeq('old')).toBe(0);
    expect(await log.lastSeq('new')).toBe(scriptedRun('new', 1, 2).length);
    expect(await log.lastSeq('mixed')).toBe(3);
  });

  it('makes and ends a pool of its own from a connection string', async () => {
    const own = createRunEventLog({ connectionString: connectionString(), schema });
    const frames = scriptedRun('own', 1, 2);
    await own.appendRunEvents('own', frames);
    expect(plain(await all(own.runEvents('own')))).toEqual(plain(frames));
    await own.close();
    await expect(own.lastSeq('own')).rejects.toBeInstanceOf(RunEventLogError); // its pool has ended
  });

  it('refuses bad options and arguments with typed errors', () => {
    expect(() => createRunEventLog({ pool, schema: 'bad-name' })).toThrow(/schema must be/);
    expect(() => createRunEventLog({ schema })).toThrow(/exactly one of pool and connectionString/);
    expect(() => log.runEvents('r', { after: -1 })).toThrow(InvalidInputError);
  });
});
