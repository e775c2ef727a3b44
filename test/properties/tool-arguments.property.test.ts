// Property tests of the strict parse of a finished tool call's arguments (parseToolArguments in
// src/providers/partial-json.ts): what it accepts is executed, so it must accept exactly one JSON object (or no text).
//
// Generated cases per run (fixed seeds; a failure prints its seed and the shrunk counterexample):
//   an object's whole text, compact and pretty-printed, and a cut of it   10,000 objects
//   any text: garbage, JSON of every kind, objects, whitespace            10,000 strings
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { parseToolArguments } from 'cubepi/providers/kit';
import { garbage, indent, textsOf, toolArguments } from './json-arbitraries.js';

const RUNS = 10_000;

const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

describe('parseToolArguments (the strict parse at toolcall_end)', () => {
  it('accepts the whole text of an object, returning it exactly, and rejects a cut of it, saying why', () => {
    fc.assert(
      fc.property(toolArguments, indent, fc.boolean(), fc.nat(), (value, space, pretty, at) => {
        const texts = textsOf(value, space);
        for (const json of texts) {
          const result = parseToolArguments(json);
          // As text: JSON.stringify(JSON.parse(compact)) is the compact text again (same key order, no -0).
          assert.ok(result.ok && JSON.stringify(result.value) === texts[0], `not ${json}`);
        }
        const json = texts[pretty ? 1 : 0]!;
        const cut = json.slice(0, 1 + (at % (json.length - 1))); // never empty, never whole
        const result = parseToolArguments(cut);
        assert.ok(!result.ok && /\S/.test(result.error), `accepted ${JSON.stringify(cut)}`);
      }),
      { seed: 1521, numRuns: RUNS },
    );
  });

  it('accepts a text only when it is one JSON object, or nothing but whitespace (no arguments)', () => {
    const texts = fc.oneof(
      garbage,
      fc.json({ maxDepth: 2 }),
      toolArguments.map((v) => JSON.stringify(v)),
      fc.string({ unit: fc.constantFrom(' ', '\t', '\n', '\r', '\u00a0', '\u2028', '\ufeff', '\u3000'), maxLength: 3 }),
    );
    fc.assert(
      fc.property(texts, (input) => {
        const result = parseToolArguments(input);
        if (/^[ \t\n\r]*$/.test(input)) return assert.deepStrictEqual(result, { ok: true, value: {} });
        let parsed: unknown;
        try {
          parsed = JSON.parse(input);
        } catch (error) {
          return assert.deepStrictEqual(result, { ok: false, error: (error as Error).message });
        }
        if (kindOf(parsed) === 'object') assert.deepStrictEqual(result, { ok: true, value: parsed });
        else assert.ok(!result.ok && result.error.startsWith('expected a JSON object, got '), 'accepted');
      }),
      { seed: 1522, numRuns: RUNS },
    );
  });
});
