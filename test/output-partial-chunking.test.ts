// Properties of partialOutput() and elements(): any chunking of the same JSON answer (in text or tool mode) gives the
// same final value and the same element sequence; no emission repeats the one before; the values are typed from the
// schema.
import fc from 'fast-check';
import { from, type Observable } from 'rxjs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from 'cubepi';
import { elements, partialOutput } from 'cubepi/operators';
import { args, attempt, callStart, end, start, text } from './output-partial-events.js';
import { jsonValue } from './properties/json-arbitraries.js';

const answer = fc.record({ title: fc.string({ maxLength: 8 }), items: fc.array(jsonValue, { maxLength: 6 }) });

/** `json` cut into deltas of 1–16 characters (`sizes` cycled). */
function deltas(json: string, sizes: readonly number[]): string[] {
  const out: string[] = [];
  for (let i = 0, k = 0; i < json.length; k++) {
    const size = sizes.length === 0 ? 16 : sizes[k % sizes.length]!;
    out.push(json.slice(i, i + size));
    i += size;
  }
  return out;
}

function events(mode: 'native' | 'prompt' | 'tool', pieces: readonly string[], output?: unknown): AgentEvent[] {
  if (mode === 'tool')
    return [attempt('tool', 'answer'), start(), callStart('answer'), ...pieces.map((p) => args(p)), end(output)];
  const fenced = mode === 'prompt' ? ['```json\n', ...pieces, '\n```'] : pieces;
  return [attempt(mode), start(), ...fenced.map((p) => text(p)), end(output)];
}

function collect<T>(source: Observable<T>): T[] {
  const out: T[] = [];
  source.subscribe({ next: (value) => out.push(value) });
  return out;
}

describe('partialOutput() over any chunking', () => {
  it('the same final value and element sequence for every cut; never the same value twice in a row', () => {
    fc.assert(
      fc.property(
        answer,
        fc.array(fc.integer({ min: 1, max: 16 }), { maxLength: 8 }),
        fc.constantFrom('native' as const, 'prompt' as const, 'tool' as const),
        fc.boolean(),
        (value, sizes, mode, validated) => {
          const json = JSON.stringify(value);
          const expected = JSON.parse(json) as typeof value;
          const input = events(mode, deltas(json, sizes), validated ? expected : undefined);
          const values = collect(from(input).pipe(partialOutput()));
          expect(values.at(-1)).toEqual(expected);
          for (let i = 1; i < values.length; i++) expect(values[i]).not.toEqual(values[i - 1]);
          expect(collect(from(input).pipe(partialOutput(), elements('items')))).toEqual(expected.items);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('one character a delta: a value for every change of the shown value, and no other', () => {
    const json = '{"a":"xy","b":[1,true]}';
    const values = collect(from(events('native', [...json])).pipe(partialOutput()));
    expect(values).toEqual([
      {},
      { a: '' },
      { a: 'x' },
      { a: 'xy' },
      { a: 'xy', b: [] },
      { a: 'xy', b: [1] },
      { a: 'xy', b: [1, true] },
    ]);
  });

  it('a wide open array spaces the values by its width (O(n) in total); the message’s last value still comes', () => {
    const items = [...Array.from({ length: 640 }, (_, i) => i), 'x'.repeat(200)];
    const json = JSON.stringify({ items });
    const input = [attempt('native'), start(), ...[...json].map((c) => text(c)), end()];
    const values = collect(from(input).pipe(partialOutput()));
    expect(values.at(-1)).toEqual(JSON.parse(json));
    for (let i = 1; i < values.length; i++) expect(values[i]).not.toEqual(values[i - 1]);
    // While the last item is written, the open array holds 640 complete items: a value per 20 characters of it (the
    // copy of 640 items per value), not one per character.
    const writing = values.filter((v) => (v as { items?: unknown[] }).items?.length === 641);
    expect(writing.length).toBeGreaterThan(1);
    expect(writing.length).toBeLessThanOrEqual(Math.ceil(202 / 20) + 1);
    expect(collect(from(input).pipe(partialOutput(), elements('items')))).toEqual(items);
  });

  it('types the values from the schema, and elements() from the path', () => {
    const Books = z.object({ title: z.string(), books: z.array(z.object({ name: z.string(), year: z.number() })) });
    const events$ = from([] as AgentEvent[]);
    const partial$ = events$.pipe(partialOutput(Books));
    partial$.subscribe((value) => {
      expectTypeOf(value.title).toEqualTypeOf<string | undefined>();
      expectTypeOf(value.books?.[0]?.year).toEqualTypeOf<number | undefined>();
    });
    const books$ = partial$.pipe(elements('books'));
    expectTypeOf(books$).toEqualTypeOf<Observable<{ name: string; year: number }>>();
    expectTypeOf(events$.pipe(partialOutput({ schema: Books, name: 'books' }), elements('books'))).toEqualTypeOf<
      Observable<{ name: string; year: number }>
    >();
    expectTypeOf(events$.pipe(partialOutput())).toEqualTypeOf<Observable<unknown>>();
    expectTypeOf(events$.pipe(partialOutput<{ n: number }>())).toMatchTypeOf<Observable<{ readonly n?: number }>>();
  });
});
