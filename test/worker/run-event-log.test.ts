// The run-event log on the real PostgreSQL: replay then live tail with no gap or duplicate (an append racing the
// reader's first query included), resume from every seq (mid-message, through compact updates), a writer in another
// process, appends ordered and refused, one shared LISTEN connection per log (its channels LISTENed while followed,
// reconnected when lost), cancellation stopping the reader, retention.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { firstValueFrom, lastValueFrom, timeout, toArray, type Observable } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
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
import { decodeBatch } from '../../src/worker/run-event-batch.js';
import { channelOf } from '../../src/worker/run-events-schema.js';
import { plain, scriptedRun } from './run-frames.js';
import { startPgProxy } from './tcp-proxy.js';
import { bundledScript } from '../bundled-script.js';

requirePostgres();

const root = fileURLToPath(new URL('../..', import.meta.url));
const writer = fileURLToPath(new URL('./fixtures/append-run.ts', import.meta.url));
/** `writer` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let writerBundle: string;
beforeAll(async () => {
  writerBundle = await bundledScript(writer);
});

const admin = pgAvailable ? testPool({ max: 2 }) : (undefined as unknown as pg.Pool);
afterAll(async () => {
  await admin?.end();
});

/** The log's test seams: readRunEvents with `afterListen`, and what its LISTEN connection's session does. */
type WithHooks = RunEventLog & {
  readRunEvents(
    runId: string,
    options: { after?: number },
    hooks: { afterListen?: () => Promise<void> },
  ): Observable<WireFrame>;
  listenerSession(): Promise<{ pid: number; channels: string[] } | undefined>;
};

/** The listener's session: its backend pid and the channels it LISTENs on (asked of the server). */
const session = (log: RunEventLog) => (log as WithHooks).listenerSession();

const BACKENDS = 'SELECT pid FROM pg_stat_activity WHERE application_name = $1';

/** Every frame until completion; a reader that hangs (a missed wake-up) fails after 10 s instead of the whole file. */
const all = (frames: Observable<WireFrame>): Promise<WireFrame[]> =>
  lastValueFrom(frames.pipe(timeout({ each: 10_000 }), toArray()));

describe.skipIf(!pgAvailable)('run-event log (PostgreSQL)', () => {
  let schema: string;
  let pool: pg.Pool;
  let log: RunEventLog;
  let logs: RunEventLog[];
  /** A log closed after the test (its listener ended). */
  const open = (options: Parameters<typeof createRunEventLog>[0]): RunEventLog => {
    const made = createRunEventLog(options);
    logs.push(made);
    return made;
  };
  /** The runs' channels, sorted as `listenerSession` lists them. */
  const channels = (...runIds: string[]): string[] => runIds.map((id) => channelOf(schema, id)).sort();

  beforeEach(async () => {
    schema = uniqueSchema('runevents');
    pool = testPool({ max: 8 });
    logs = [];
    log = open({ pool, schema });
    await log.migrate();
  });
  afterEach(async () => {
    for (const made of logs) await made.close();
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
    const { rows } = await admin.query<{ payload: Buffer }>(
      `SELECT payload FROM "${schema}".cubepi_run_events_v3 WHERE run_id = 'r1' ORDER BY last_seq`,
    );
    expect(rows.flatMap((row) => decodeBatch(row.payload)).filter((frame) => frame.compact)).toHaveLength(2 * 10);
  });

  it('resumes from every seq: the frames after it, whole, even from the middle of a streamed message', async () => {
    const frames = scriptedRun('r2', 2, 6);
    await log.appendRunEvents('r2', frames);
    for (let after = 0; after <= frames.length; after++) {
      expect(plain(await all(log.runEvents('r2', { after }))), `after ${after}`).toEqual(plain(frames.slice(after)));
    }
  });

  it('resumes mid-message across pages (page size 3: the replay and its priming are paged)', async () => {
    const small = open({ pool, schema, pageSize: 3 });
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
    const child = spawn(process.execPath, [writerBundle, schema, 'child-run', '3', '15', '4', '3'], {
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

  it('serves 50 readers of 10 runs from one LISTEN connection, its channels the runs followed', async () => {
    const name = `many_${schema.slice(-8)}`;
    const readerPool = testPool({ max: 3, application_name: name });
    const reader = open({ pool: readerPool, schema });
    const runs = Array.from({ length: 10 }, (_, i) => `many-${i}`);
    const frames = new Map(runs.map((id) => [id, scriptedRun(id, 1, 4)]));
    for (const id of runs) await log.appendRunEvents(id, frames.get(id)!.slice(0, 3));
    const seen = runs.flatMap((id) => Array.from({ length: 5 }, () => ({ id, frames: [] as WireFrame[] })));
    const done = seen.map(
      ({ id, frames: into }) =>
        new Promise<void>((resolve, reject) =>
          reader.runEvents(id).subscribe({ next: (f) => into.push(f), error: reject, complete: resolve }),
        ),
    );
    try {
      // Every reader has replayed (a reader holding a connection of its own would leave 47 of them waiting).
      await vi.waitFor(() => expect(seen.every((s) => s.frames.length === 3)).toBe(true), { timeout: 10_000 });
      const listener = await session(reader);
      expect(listener?.channels).toEqual(channels(...runs));
      // The process's backends: the pool's (at most 3, none LISTENing) and the listener, one for all 50 readers.
      const { rows } = await admin.query<{ pid: number }>(BACKENDS, [name]);
      expect(rows.map((r) => r.pid)).toContain(listener!.pid);
      expect(rows.length).toBeLessThanOrEqual(3 + 1);
      for (const id of runs) await log.appendRunEvents(id, frames.get(id)!.slice(3));
      await Promise.all(done);
      for (const { id, frames: got } of seen) expect(plain(got)).toEqual(plain(frames.get(id)!));
      // Every run ended, every reader left: the same connection listens to nothing, until it idles out.
      await vi.waitFor(async () => expect(await session(reader)).toEqual({ pid: listener!.pid, channels: [] }));
    } finally {
      await reader.close();
      await readerPool.end();
    }
  });

  it("UNLISTENs a run's channel when its last reader leaves, while another run's readers continue", async () => {
    const a = scriptedRun('left', 1, 2);
    const b = scriptedRun('kept', 1, 2);
    await log.appendRunEvents('left', a.slice(0, 2));
    await log.appendRunEvents('kept', b.slice(0, 2));
    const seenA1: WireFrame[] = [];
    const seenA2: WireFrame[] = [];
    const a1 = log.runEvents('left').subscribe((f) => seenA1.push(f));
    const a2 = log.runEvents('left').subscribe((f) => seenA2.push(f));
    const kept = all(log.runEvents('kept'));
    await vi.waitFor(async () => expect((await session(log))?.channels).toEqual(channels('left', 'kept')));
    await vi.waitFor(() => expect([seenA1.length, seenA2.length]).toEqual([2, 2]));

    a1.unsubscribe(); // one reader of the run remains: still listened
    expect((await session(log))?.channels).toEqual(channels('left', 'kept'));
    a2.unsubscribe();
    await vi.waitFor(async () => expect((await session(log))?.channels).toEqual(channels('kept')));

    await log.appendRunEvents('left', a.slice(2, 4));
    await log.appendRunEvents('kept', b.slice(2));
    expect(plain(await kept)).toEqual(plain(b));
    expect([seenA1.length, seenA2.length]).toEqual([2, 2]); // nothing after unsubscribing
    // Followed again: LISTENed again, and read from where it asks.
    const again = all(log.runEvents('left', { after: 1 }));
    await log.appendRunEvents('left', a.slice(4));
    expect(plain(await again)).toEqual(plain(a.slice(1)));
  });

  it('keeps LISTEN and UNLISTEN of one channel in order while its readers come and go', async () => {
    const frames = scriptedRun('flap', 1, 30);
    const steady: Promise<WireFrame[]>[] = [];
    for (let i = 0; i < frames.length; i++) {
      // Readers that leave at once, after a turn, and after their first frame, around each append.
      log.runEvents('flap').subscribe().unsubscribe();
      const late = log.runEvents('flap').subscribe();
      setTimeout(() => late.unsubscribe(), i % 3);
      const once = firstValueFrom(log.runEvents('flap', { after: i }));
      if (i % 5 === 0) steady.push(all(log.runEvents('flap', { after: i })));
      await log.appendRunEvents('flap', [frames[i]!]);
      await once;
    }
    const results = await Promise.all(steady);
    results.forEach((seen, k) => expect(plain(seen), `reader ${k}`).toEqual(plain(frames.slice(k * 5))));
    await vi.waitFor(async () => expect((await session(log))?.channels).toEqual([]));
  });

  it('tells a reader its run is listened only once a LISTEN is acknowledged, even during its UNLISTEN', async () => {
    const listed: boolean[] = [];
    const check = (): Observable<WireFrame> =>
      (log as WithHooks).readRunEvents(
        'relisten',
        {},
        {
          afterListen: async () =>
            void listed.push((await session(log))!.channels.includes(channelOf(schema, 'relisten'))),
        },
      );
    for (let i = 0; i < 10; i++) {
      const first = check().subscribe();
      await vi.waitFor(() => expect(listed).toHaveLength(2 * i + 1));
      // The last reader leaves (UNLISTEN sent) and another comes at once: it waits for the LISTEN after it.
      first.unsubscribe();
      const second = check().subscribe();
      await vi.waitFor(() => expect(listed).toHaveLength(2 * i + 2));
      second.unsubscribe();
    }
    expect(listed).toEqual(Array.from({ length: 20 }, () => true));
  });

  it('stops reading when unsubscribed: nothing emitted after, its channel UNLISTENed, no pool connection held', async () => {
    const name = `reader_${schema.slice(-8)}`;
    const one = testPool({ max: 1, application_name: name });
    const reader = open({ pool: one, schema, listenerIdleMillis: 60_000 });
    const seen: WireFrame[] = [];
    const subscription = reader.runEvents('cancel').subscribe((frame) => seen.push(frame));
    try {
      const frames = scriptedRun('cancel', 1, 4);
      await log.appendRunEvents('cancel', frames.slice(0, 3));
      await vi.waitFor(() => expect(seen).toHaveLength(3));
      // Following: the pool's only connection is not held (it is free for appends); the listener LISTENs.
      await vi.waitFor(() => expect(one.totalCount - one.idleCount).toBe(0));
      const listener = await session(reader);
      expect(listener?.channels).toEqual(channels('cancel'));
      const { rows } = await admin.query<{ pid: number }>(BACKENDS, [name]);
      expect(rows.map((r) => r.pid)).toContain(listener!.pid);
      expect(rows.length).toBeLessThanOrEqual(1 + 1); // the pool's one and the listener

      subscription.unsubscribe();
      // The same connection stays (idle time 60 s) and listens to nothing; the pool's never LISTENed.
      await vi.waitFor(async () => expect(await session(reader)).toEqual({ pid: listener!.pid, channels: [] }));
      expect((await one.query('SELECT pg_listening_channels()')).rowCount).toBe(0);
      await log.appendRunEvents('cancel', frames.slice(3));
      await one.query('SELECT 1'); // a round trip after the append's commit (and its NOTIFY)
      expect(seen).toHaveLength(3);
      // close() ends it.
      await reader.close();
      expect(await session(reader)).toBeUndefined();
      await vi.waitFor(async () =>
        expect((await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [listener!.pid])).rowCount).toBe(0),
      );
      await expect(firstValueFrom(reader.runEvents('cancel'))).rejects.toMatchObject({ reason: 'database' });
    } finally {
      subscription.unsubscribe();
      await one.end();
    }
  });

  it('closes the listener with its last reader (idle time 0): unsubscribed before it connected, or completed', async () => {
    const one = testPool({ max: 1 });
    try {
      const reader = open({ pool: one, schema, listenerIdleMillis: 0 });
      reader.runEvents('nothing-yet').subscribe().unsubscribe();
      await vi.waitFor(() => expect(one.totalCount === 0 || one.idleCount === one.totalCount).toBe(true));
      expect(await session(reader)).toBeUndefined(); // never opened
      const frames = scriptedRun('whole', 1, 1);
      await log.appendRunEvents('whole', frames);
      expect(plain(await all(reader.runEvents('whole')))).toEqual(plain(frames));
      await vi.waitFor(async () => expect(await session(reader)).toBeUndefined());
      await vi.waitFor(() => expect(one.idleCount).toBe(one.totalCount));
      expect((await one.query('SELECT pg_listening_channels()')).rowCount).toBe(0);
      // A reader after that opens a new one.
      const live = reader.runEvents('later').subscribe();
      await vi.waitFor(async () => expect((await session(reader))?.channels).toEqual(channels('later')));
      live.unsubscribe();
      await vi.waitFor(async () => expect(await session(reader)).toBeUndefined());
    } finally {
      await one.end();
    }
  });

  it('reconnects a lost LISTEN connection: its readers read what was appended while nothing listened', async () => {
    const proxy = await startPgProxy();
    const viaProxy = testPool({ host: '127.0.0.1', port: proxy.port, max: 2 });
    const reader = open({ pool: viaProxy, schema, listenerReconnectMillis: 60_000 });
    try {
      const a = scriptedRun('cut-a', 1, 6);
      const b = scriptedRun('cut-b', 1, 6);
      await log.appendRunEvents('cut-a', a.slice(0, 3));
      await log.appendRunEvents('cut-b', b.slice(0, 3));
      const seenA: WireFrame[] = [];
      const doneA = new Promise<void>((resolve, reject) =>
        reader.runEvents('cut-a').subscribe({ next: (f) => seenA.push(f), error: reject, complete: resolve }),
      );
      const doneB = all(reader.runEvents('cut-b', { after: 1 }));
      await vi.waitFor(() => expect(seenA).toHaveLength(3));
      const before = await session(reader);
      expect(before?.channels).toEqual(channels('cut-a', 'cut-b'));

      // Its backend gone (waited for), and no new connection possible: the appends meanwhile notify nobody.
      proxy.refusing = true;
      await admin.query('SELECT pg_terminate_backend($1, 10000)', [before!.pid]);
      await log.appendRunEvents('cut-a', a.slice(3)); // the rest of run a, terminal frame included
      await log.appendRunEvents('cut-b', b.slice(3, 6));
      await vi.waitFor(async () => expect(await session(reader)).toBeUndefined());
      expect(seenA).toHaveLength(3);

      proxy.refusing = false;
      // Reconnected, LISTENing again, each reader reads `seq > last`: run a's end arrives without any later NOTIFY.
      await doneA;
      expect(plain(seenA)).toEqual(plain(a));
      const after = await vi.waitFor(async () => {
        const now = await session(reader);
        expect(now?.channels).toEqual(channels('cut-b'));
        return now!;
      });
      expect(after.pid).not.toBe(before!.pid);
      await log.appendRunEvents('cut-b', b.slice(6));
      expect(plain(await doneB)).toEqual(plain(b.slice(1)));
    } finally {
      await reader.close();
      await viaProxy.end();
      await proxy.close();
    }
  });

  it('fails every reader with RunEventLogError database when the LISTEN connection cannot come back', async () => {
    const proxy = await startPgProxy();
    const viaProxy = testPool({ host: '127.0.0.1', port: proxy.port, max: 2 });
    const reader = open({ pool: viaProxy, schema, listenerReconnectMillis: 300 });
    try {
      await log.appendRunEvents('gone-a', scriptedRun('gone-a', 1, 2).slice(0, 2));
      const failures = ['gone-a', 'gone-b'].map((id) =>
        lastValueFrom(reader.runEvents(id)).catch((error: unknown) => error),
      );
      const listener = await vi.waitFor(async () => {
        const now = await session(reader);
        expect(now?.channels).toEqual(channels('gone-a', 'gone-b'));
        return now!;
      });
      proxy.refusing = true;
      await admin.query('SELECT pg_terminate_backend($1, 10000)', [listener.pid]);
      const errors = await Promise.all(failures);
      for (const [i, error] of errors.entries()) {
        expect(error).toBeInstanceOf(RunEventLogError);
        expect(error).toMatchObject({ reason: 'database', runId: ['gone-a', 'gone-b'][i] });
      }
      expect(await session(reader)).toBeUndefined();
      // The database back, a new reader opens a new connection.
      proxy.refusing = false;
      const frames = scriptedRun('back', 1, 1);
      await log.appendRunEvents('back', frames);
      expect(plain(await all(reader.runEvents('back')))).toEqual(plain(frames));
    } finally {
      await reader.close();
      await viaProxy.end();
      await proxy.close();
    }
  });

  it('fails a reader with RunEventLogError database when its query fails, and stops following its run', async () => {
    const failure = lastValueFrom(log.runEvents('doomed')).catch((error: unknown) => error);
    await vi.waitFor(async () => expect((await session(log))?.channels).toEqual(channels('doomed')));
    // The table is gone: the reader's next query (woken by a NOTIFY on its channel) fails.
    await dropSchema(admin, schema);
    await admin.query('SELECT pg_notify($1, $2)', [channelOf(schema, 'doomed'), '1']);
    expect(await failure).toMatchObject({ reason: 'database', runId: 'doomed' });
    await vi.waitFor(async () => expect((await session(log))?.channels).toEqual([]));
  });

  it('deletes whole runs whose last frame is older than a date (retention)', async () => {
    await log.appendRunEvents('old', scriptedRun('old', 1, 2));
    await log.appendRunEvents('new', scriptedRun('new', 1, 2));
    await admin.query(
      `UPDATE "${schema}".cubepi_run_events_v3 SET appended_at = now() - interval '2 days' WHERE run_id = 'old'`,
    );
    // A run with one recent batch among old ones is kept whole.
    const mixed = scriptedRun('mixed', 1, 2);
    await log.appendRunEvents('mixed', mixed.slice(0, 2));
    await log.appendRunEvents('mixed', mixed.slice(2, 3));
    await admin.query(
      `UPDATE "${schema}".cubepi_run_events_v3 SET appended_at = now() - interval '2 days'
       WHERE run_id = 'mixed' AND last_seq < 3`,
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
