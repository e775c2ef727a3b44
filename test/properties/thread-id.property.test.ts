// Property: every backend accepts exactly the well-formed thread ids, keeps each one apart from every other, lists
// them unaltered, and "delete what you list" leaves nothing (issue 15, defect 2).
//
// Cases per run (seeded, reproducible): 10,000 ids through the validation of MemoryCheckpointer and of
// SQLiteCheckpointer, 2,000 through PostgreSQL's (a load: refused before any I/O, or a real read); round trips of
// 2,500 ids through MemoryCheckpointer, 2,500 through SQLiteCheckpointer (50 batches of 50, ~40% of them valid) and
// 250 through PostgreSQL (5 batches of 50: each valid id costs the server two transactions). A failure prints the
// seed and the shrunk batch.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_THREAD_ID_LENGTH, MemoryCheckpointer, type Checkpointer, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';

requirePostgres();

const SEED = 0x15_0002;

/** The oracle, written independently of the code under test. */
const isValid = (id: string): boolean =>
  id.length >= 1 &&
  id.length <= MAX_THREAD_ID_LENGTH &&
  (id as string & { isWellFormed(): boolean }).isWellFormed() &&
  !id.includes('\u0000');

/** Thread ids as a hostile user would send them: lone surrogates, NUL, astral characters, lengths around the limit. */
const piece = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud83d\ude00', 'e\u0301', '\u00e9', '%', '_', "'", '"', '\\') },
);
const idArb = fc.oneof(
  { weight: 9, arbitrary: fc.array(piece, { maxLength: 6 }).map((parts) => parts.join('')) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: MAX_THREAD_ID_LENGTH - 2, max: MAX_THREAD_ID_LENGTH + 2 }), piece)
      .map(([length, tail]) => (tail + 'x'.repeat(length)).slice(0, length)),
  },
);

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });
const codeOf = (error: unknown) => (error as { code?: unknown }).code;

/** One batch against one store: refusal exactly as the oracle says, no collision, exact listing, delete-all. */
async function roundTrip(checkpointer: Checkpointer, ids: readonly string[]): Promise<void> {
  const valid: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const outcome = await checkpointer.append(id, [user(`#${i}`)]).then(
      () => 'ok',
      (error: unknown) => codeOf(error),
    );
    expect(outcome, `id ${JSON.stringify(id)}`).toBe(isValid(id) ? 'ok' : 'invalid_input');
    if (outcome === 'ok') valid.push(id);
  }
  for (const id of valid) {
    const stored = await checkpointer.load(id);
    expect(
      stored?.messages.map((m) => m.content),
      `id ${JSON.stringify(id)} kept apart`,
    ).toEqual([`#${ids.indexOf(id)}`]);
  }
  const listed = (await checkpointer.listThreads({ limit: 1000 })).map((info) => info.threadId);
  expect([...listed].sort()).toEqual([...valid].sort());
  for (const id of listed) await checkpointer.deleteThread(id);
  expect(await checkpointer.listThreads()).toEqual([]);
}

// Exactly 50 per batch (fast-check's own length bias would give ~6 on average).
const batches = fc.uniqueArray(idArb, { minLength: 50, maxLength: 50 });

/** A refusal exactly as the oracle says, for `numRuns` ids. */
async function refusesExactlyTheInvalid(checkpointer: Checkpointer, numRuns = 10_000): Promise<void> {
  await fc.assert(
    fc.asyncProperty(idArb, async (id) => {
      const outcome = await checkpointer.load(id).then(
        () => 'ok',
        (error: unknown) => codeOf(error),
      );
      expect(outcome).toBe(isValid(id) ? 'ok' : 'invalid_input');
    }),
    { seed: SEED, numRuns },
  );
}

const roundTrips = (checkpointer: Checkpointer, numRuns: number) =>
  fc.assert(
    fc.asyncProperty(batches, (ids) => roundTrip(checkpointer, ids)),
    { seed: SEED, numRuns },
  );

describe('thread ids (property)', () => {
  it('MemoryCheckpointer refuses exactly the invalid ids, keeps the rest apart and lists them unaltered', async () => {
    const checkpointer = new MemoryCheckpointer();
    await refusesExactlyTheInvalid(checkpointer);
    await roundTrips(checkpointer, 50);
  });

  it('SQLiteCheckpointer refuses exactly the invalid ids, keeps the rest apart and lists them unaltered', async () => {
    const checkpointer = new SQLiteCheckpointer(':memory:');
    try {
      await refusesExactlyTheInvalid(checkpointer);
      await roundTrips(checkpointer, 50);
    } finally {
      await checkpointer.close();
    }
  });

  describe.skipIf(!pgAvailable)('PostgreSQL', () => {
    const schema = uniqueSchema('ids');
    const pool = pgAvailable ? testPool({ max: 4 }) : undefined;
    afterAll(async () => {
      if (pool === undefined) return;
      await dropSchema(pool, schema);
      await pool.end();
    });

    it('PostgresCheckpointer refuses exactly the invalid ids, keeps the rest apart and lists them unaltered', async () => {
      const checkpointer = new PostgresCheckpointer(pool!, { schema });
      // 2,000 here: each valid id costs a round trip, and the check is the one the other backends ran 10,000 times.
      await refusesExactlyTheInvalid(checkpointer, 2_000);
      await roundTrips(checkpointer, 5);
      await checkpointer.close();
    });
  });
});
