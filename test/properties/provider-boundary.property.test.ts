// Property: the provider boundary (issue 36, item 5). Whatever a provider emits — streams that drop, duplicate,
// reorder or re-index events, send a second terminal or none, values that are not events, a malformed final message,
// an Observable error, a throw in stream(), something that is not an Observable, a stream that never ends — with
// random tools and random cancellation, the run keeps its event grammar, stores only well-formed messages (a broken
// stream ends as an error message naming the broken rule), answers every tool call once, and settles; a clean prompt
// on the same agent and on a fresh one that restores the thread then works. See provider-faults.ts for the cases and
// the oracles.
//
// Cases per run (seeded): 1,000 in `npm test`. `FUZZ_PROVIDER_CASES=10000` (and optionally `FUZZ_PROVIDER_SEED`) runs
// that many and counts failures by category instead of stopping at the first: scripts/fuzz-provider-boundary.mjs.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anyCase, runCase } from './provider-faults.js';

const SEED = Number(process.env.FUZZ_PROVIDER_SEED ?? 0x36_0005);
const COUNT = process.env.FUZZ_PROVIDER_CASES === undefined ? undefined : Number(process.env.FUZZ_PROVIDER_CASES);

describe('the provider boundary (property)', () => {
  if (COUNT === undefined) {
    it('whatever a provider emits, the run keeps its grammar, stores well-formed messages and settles (1,000 cases)', async () => {
      await fc.assert(
        fc.asyncProperty(anyCase, async (c) => {
          const { problems } = await runCase(c);
          expect(problems).toEqual([]);
        }),
        { seed: SEED, numRuns: 1_000 },
      );
    }, 300_000);
  } else {
    it(`counts the failing cases among ${COUNT} (seed ${SEED})`, async () => {
      const started = performance.now();
      const byCategory = new Map<string, number>();
      const examples = new Map<string, string>();
      let failing = 0;
      const cases = fc.sample(anyCase, { seed: SEED, numRuns: COUNT });
      for (const c of cases) {
        const { problems } = await runCase(c);
        if (problems.length === 0) continue;
        failing++;
        for (const category of new Set(problems.map((p) => p.split(':')[0]!))) {
          byCategory.set(category, (byCategory.get(category) ?? 0) + 1);
          if (!examples.has(category)) {
            examples.set(
              category,
              `${problems.find((p) => p.startsWith(category))!.slice(0, 400)}\n    case: ${JSON.stringify(c, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`,
            );
          }
        }
      }
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      console.log(
        [
          `provider boundary fuzz: ${COUNT} cases, seed ${SEED}, ${failing} failing, ${seconds} s`,
          ...[...byCategory].map(([category, n]) => `  ${category}: ${n} cases — e.g. ${examples.get(category)}`),
        ].join('\n'),
      );
      expect(failing).toBe(0);
    }, 3_600_000);
  }
});
