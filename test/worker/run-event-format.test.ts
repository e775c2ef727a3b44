// The run-event log's format 3 (one row per appended batch, its frames in one deflated payload) on the real
// PostgreSQL: round trips from every seq (mid-batch, through compact deltas), any split into batches (a property),
// the append function's refusals and its one NOTIFY per batch, and runs stored in the old format (one row per frame)
// read, continued and deleted by this version.
import fc from 'fast-check';
import type pg from 'pg';
import { lastValueFrom, timeout, toArray, type Observable } from 'rxjs';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRunEventLog, RunEventLogError, type RunEventLog, type WireFrame } from 'cubepi/worker';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';
import { decodeBatch, encodeBatch, type StoredFrame } from '../../src/worker/run-event-batch.js';
import { channelOf } from '../../src/worker/run-events-schema.js';
import { plain, scriptedRun } from './run-frames.js';

requirePostgres();

const all = (frames: Observable<WireFrame>): Promise<WireFrame[]> =>
  lastValueFrom(frames.pipe(timeout({ each: 10_000 }), toArray()));

describe('the batch payload', () => {
  it('round-trips frames and their flags, deflated when that is smaller, plain text when tiny', () => {
    const frames: StoredFrame[] = [
      { json: '{"type":"agent_start","runId":"r","seq":1}', compact: false, base: false },
      { json: '{"type":"message_update","x":"ü\\n"}', compact: true, base: false },
      { json: '{"type":"message_start"}', compact: false, base: true },
    ];
    const tiny = encodeBatch(frames.slice(0, 1));
    expect(tiny[0]).toBe(0);
    expect(decodeBatch(tiny)).toEqual(frames.slice(0, 1));
    const many = Array.from({ length: 20 }, () => frames).flat();
    const payload = encodeBatch(many);
    expect(payload[0]).toBe(1);
    expect(payload.length).toBeLessThan(JSON.stringify(many).length / 5);
    expect(decodeBatch(payload)).toEqual(many);
  });

  it('refuses a payload of a format it does not know', () => {
    expect(() => decodeBatch(Buffer.of(9, 1, 2))).toThrow(/unknown format/);
  });
});

describe.skipIf(!pgAvailable)('run-event log format 3 (PostgreSQL)', () => {
  const admin = pgAvailable ? testPool({ max: 2 }) : (undefined as unknown as pg.Pool);
  let schema: string;
  let pool: pg.Pool;
  let log: RunEventLog;

  afterAll(async () => {
    await admin?.end();
  });
  beforeEach(async () => {
    schema = uniqueSchema('runformat');
    pool = testPool({ max: 6 });
    log = createRunEventLog({ pool, schema });
    await log.migrate();
  });
  afterEach(async () => {
    await log.close();
    await pool.end();
    await dropSchema(admin, schema);
  });

  /** Calls the append function as a writer does: frames `first`..`last` (payload `frames`). */
  const appendRaw = (
    runId: string,
    first: number,
    last: number,
    firstBase: number | null,
    terminal: boolean,
    frames: StoredFrame[],
  ) =>
    admin.query(`SELECT "${schema}".cubepi_append_run_events_v3($1, $2, $3, $4, $5, $6, $7)`, [
      runId,
      channelOf(schema, runId),
      first,
      last,
      firstBase,
      terminal,
      encodeBatch(frames),
    ]);
  const event = (runId: string, seq: number): StoredFrame => ({
    json: JSON.stringify({ type: 'agent_start', runId, seq }),
    compact: false,
    base: false,
  });

  it('stores one row per batch and reads from every seq, mid-batch and mid-message, as written', async () => {
    const frames = scriptedRun('r1', 2, 7);
    for (let i = 0; i < frames.length; i += 4) await log.appendRunEvents('r1', frames.slice(i, i + 4));
    const { rows } = await admin.query<{ first_seq: string; last_seq: string; terminal: boolean; payload: Buffer }>(
      `SELECT first_seq, last_seq, terminal, payload FROM "${schema}".cubepi_run_events_v3 ORDER BY last_seq`,
    );
    expect(rows).toHaveLength(Math.ceil(frames.length / 4));
    expect(rows.map((row) => row.terminal)).toEqual(rows.map((_, i) => i === rows.length - 1));
    // Compact deltas across batches: every text delta after a message's first, whichever batch holds it.
    const stored = rows.flatMap((row) => decodeBatch(row.payload));
    expect(stored).toHaveLength(frames.length);
    expect(stored.filter((frame) => frame.compact)).toHaveLength(2 * 7);
    for (let after = 0; after <= frames.length; after++) {
      expect(plain(await all(log.runEvents('r1', { after }))), `after ${after}`).toEqual(plain(frames.slice(after)));
    }
  });

  it('reads back any split of a run into batches, from any seq, as the frames appended (property)', async () => {
    const frames = scriptedRun('p', 2, 9);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: frames.length - 1 }), { maxLength: 12 }),
        fc.integer({ min: 0, max: frames.length }),
        fc.integer({ min: 1, max: 4 }),
        async (cuts, after, pageSize) => {
          const runId = `p${n++}`;
          const run = scriptedRun(runId, 2, 9);
          const bounds = [0, ...[...cuts].sort((a, b) => a - b), run.length];
          const reader = createRunEventLog({ pool, schema, pageSize });
          try {
            for (let i = 0; i + 1 < bounds.length; i++) {
              await log.appendRunEvents(runId, run.slice(bounds[i], bounds[i + 1]));
            }
            expect(plain(await all(reader.runEvents(runId, { after })))).toEqual(plain(run.slice(after)));
          } finally {
            await reader.close();
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('the append function refuses a gap, a batch after the terminal one and a malformed batch, writing nothing', async () => {
    const code = (promise: Promise<unknown>) =>
      promise.then(
        () => 'ok',
        (error: { code?: string }) => error.code,
      );
    expect(await code(appendRaw('f', 2, 2, null, false, [event('f', 2)]))).toBe('CP002'); // no seq 1
    await appendRaw('f', 1, 1, null, false, [event('f', 1)]);
    expect(await code(appendRaw('f', 1, 1, null, false, [event('f', 1)]))).toBe('CP002'); // again
    expect(await code(appendRaw('f', 3, 3, null, false, [event('f', 3)]))).toBe('CP002'); // a gap
    expect(await code(appendRaw('f', 2, 1, null, false, [event('f', 2)]))).toBe('CP002'); // last before first
    expect(await code(appendRaw('f', 2, 3, 5, false, [event('f', 2), event('f', 3)]))).toBe('CP002'); // base outside
    const end = { json: JSON.stringify({ type: 'run_end', runId: 'f', seq: 3 }), compact: false, base: false };
    await appendRaw('f', 2, 3, null, true, [event('f', 2), end]);
    expect(await code(appendRaw('f', 4, 4, null, false, [event('f', 4)]))).toBe('CP001'); // after the end
    expect(await log.lastSeq('f')).toBe(3);
    const { rows } = await admin.query(`SELECT 1 FROM "${schema}".cubepi_run_events_v3 WHERE run_id = 'f'`);
    expect(rows).toHaveLength(2);
  });

  it("notifies the run's channel once per batch, with the batch's last seq", async () => {
    const client = await admin.connect();
    const heard: string[] = [];
    client.on('notification', (message) => heard.push(message.payload ?? ''));
    try {
      await client.query(`LISTEN "${channelOf(schema, 'n')}"`);
      const frames = scriptedRun('n', 1, 6);
      await log.appendRunEvents('n', frames.slice(0, 5));
      await log.appendRunEvents('n', frames.slice(5));
      await expect.poll(() => heard, { timeout: 10_000 }).toEqual(['5', String(frames.length)]);
    } finally {
      await client.query('UNLISTEN *');
      client.release();
    }
  });

  describe('a run stored in the old format (one row per frame, by cubepi before format 3)', () => {
    /**
     * Moves run `runId`'s rows from the batch table into the old table, one row per frame with the very text, seq
     * and flags the old writer stored (the same as format 3 keeps in a payload), `appended_at` kept.
     */
    const toOldFormat = async (runId: string): Promise<void> => {
      const { rows } = await admin.query<{ first_seq: string; terminal: boolean; payload: Buffer; at: Date }>(
        `DELETE FROM "${schema}".cubepi_run_events_v3 WHERE run_id = $1
         RETURNING first_seq, terminal, payload, appended_at AS at`,
        [runId],
      );
      for (const row of rows) {
        const stored = decodeBatch(row.payload);
        for (let i = 0; i < stored.length; i++) {
          const frame = stored[i]!;
          await admin.query(
            `INSERT INTO "${schema}".cubepi_run_events (run_id, seq, frame, compact, base, terminal, appended_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
            [
              runId,
              Number(row.first_seq) + i,
              frame.json,
              frame.compact,
              frame.base,
              row.terminal && i === stored.length - 1,
              row.at,
            ],
          );
        }
      }
    };

    it('reads it from every seq, mid-message included, as it was written', async () => {
      const frames = scriptedRun('old', 2, 5);
      await log.appendRunEvents('old', frames.slice(0, 9));
      await log.appendRunEvents('old', frames.slice(9));
      await toOldFormat('old');
      const { rows } = await admin.query(`SELECT 1 FROM "${schema}".cubepi_run_events WHERE run_id = 'old'`);
      expect(rows).toHaveLength(frames.length);
      expect(await log.lastSeq('old')).toBe(frames.length);
      for (let after = 0; after <= frames.length; after++) {
        expect(plain(await all(log.runEvents('old', { after }))), `after ${after}`).toEqual(plain(frames.slice(after)));
      }
    });

    it('continues a run begun in the old format (refusing what does not follow it) and reads both parts', async () => {
      const frames = scriptedRun('both', 2, 5);
      const cut = 6; // mid-message: the new part's first update goes whole (a new writer has no snapshot)
      await log.appendRunEvents('both', frames.slice(0, cut));
      await toOldFormat('both');
      const next = createRunEventLog({ pool, schema });
      try {
        expect(await next.lastSeq('both')).toBe(cut);
        const restart = await next.appendRunEvents('both', frames.slice(0, 2)).catch((e: unknown) => e);
        expect(restart).toBeInstanceOf(RunEventLogError);
        expect(restart).toMatchObject({ reason: 'seq_order', runId: 'both' });
        await next.appendRunEvents('both', frames.slice(cut, cut + 3));
        await next.appendRunEvents('both', frames.slice(cut + 3));
        for (let after = 0; after <= frames.length; after++) {
          expect(plain(await all(next.runEvents('both', { after }))), `after ${after}`).toEqual(
            plain(frames.slice(after)),
          );
        }
      } finally {
        await next.close();
      }
    });

    it('refuses an append after its terminal frame, and retention deletes it whole', async () => {
      const frames = scriptedRun('done', 1, 2);
      await log.appendRunEvents('done', frames);
      await toOldFormat('done');
      const next = createRunEventLog({ pool, schema });
      try {
        const after = next
          .appendRunEvents('done', [{ kind: 'end', seq: frames.length + 1, runId: 'done' }])
          .catch((e: unknown) => e);
        expect(await after).toMatchObject({ reason: 'run_ended', runId: 'done' });
        await admin.query(
          `UPDATE "${schema}".cubepi_run_events SET appended_at = now() - interval '2 days' WHERE run_id = 'done'`,
        );
        await next.appendRunEvents('kept', scriptedRun('kept', 1, 1));
        expect(await next.deleteRunEventsBefore(new Date(Date.now() - 24 * 3600_000))).toBe(1);
        expect(await next.lastSeq('done')).toBe(0);
        expect(await next.lastSeq('kept')).toBe(scriptedRun('kept', 1, 1).length);
      } finally {
        await next.close();
      }
    });
  });
});
