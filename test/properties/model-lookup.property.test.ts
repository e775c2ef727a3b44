// Property: `lookupModel` (what the loop asks every turn for its model's facts: `modelIncapability`, the output plan)
// remembers the table's answers by id, and that cache answers exactly as the table does: for any sequence of ids —
// the table's own, their dated snapshots and regional aliases, ids the table does not know, repeated in any order, and
// more distinct ids than the cache keeps (so it is cleared mid-sequence) — each answer equals `findModel`'s for that
// id, a known id is the same frozen entry every time, and an unknown one is `undefined`.
//
// Cases per run (seeded, reproducible): 300 sequences of up to 400 ids each.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findModel, MODELS } from 'cubepi';
import { lookupModel } from '../../src/types/model-lookup.js';

const SEED = 0x35_0001;

const knownIds = MODELS.map((model) => model.id);
const idArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...knownIds) },
  // Dated snapshots of known models (found through their family) and of unknown ones.
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...knownIds, 'scripted-1', 'my-model'), fc.constantFrom('-20250929', '-2024-08-06'))
      .map(([id, suffix]) => id + suffix),
  },
  { weight: 1, arbitrary: fc.constantFrom('eu.anthropic.claude-opus-4-7', 'us.anthropic.claude-sonnet-4-5') },
  // Ids nobody knows, many distinct ones: more than the cache holds across a sequence.
  { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 12 }).map((text) => `x-${text}`) },
);

describe('lookupModel (the per-turn model facts, remembered by id)', () => {
  it('answers every id as findModel does, before and after the cache is cleared', () => {
    fc.assert(
      fc.property(fc.array(idArb, { maxLength: 400 }), (ids) => {
        for (const id of ids) {
          const answer = lookupModel(id);
          const oracle = findModel(id);
          if (oracle === undefined) {
            expect(answer).toBeUndefined();
          } else {
            expect(answer).toEqual(oracle);
            expect(Object.isFrozen(answer)).toBe(true);
            // Remembered: the same entry on the next ask.
            expect(lookupModel(id)).toBe(answer);
          }
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('keeps answering after more distinct ids than it remembers', () => {
    const known = knownIds[0]!;
    const first = lookupModel(known);
    expect(first).toEqual(findModel(known));
    for (let i = 0; i < 1000; i++) expect(lookupModel(`unknown-${i}`)).toBeUndefined();
    expect(lookupModel(known)).toEqual(findModel(known));
  });
});
