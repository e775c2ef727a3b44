// The client's SSE parser: however a stream is cut into chunks, and whichever line ends it uses (LF, CRLF, CR, a CRLF
// split across two chunks), it dispatches the same records — comments skipped, multi-line data joined with "\n",
// `event:` and `id:` applied, a record without data not dispatched.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser, type SseRecord } from '../../src/wire/sse-parser.js';

interface Spec {
  readonly event?: string;
  readonly id?: string;
  readonly data: readonly string[];
  readonly comment?: string;
}

// Field values never hold a line end; data may be empty or hold anything else, multi-byte characters included.
const value = fc.string({ unit: fc.constantFrom('a', 'b', ' ', ':', 'é', '😀', '{', '"', '\\', 'z') });
const spec: fc.Arbitrary<Spec> = fc.record(
  {
    event: fc.constantFrom('message', 'end', 'error'),
    id: fc.nat({ max: 1_000_000 }).map(String),
    data: fc.array(value, { minLength: 1, maxLength: 3 }),
    comment: value,
  },
  { requiredKeys: ['data'] },
);

function encode(records: readonly Spec[], eol: string): string {
  return records
    .map((r) => {
      const lines: string[] = [];
      if (r.comment !== undefined) lines.push(`:${r.comment}`);
      if (r.id !== undefined) lines.push(`id: ${r.id}`);
      if (r.event !== undefined) lines.push(`event: ${r.event}`);
      for (const line of r.data) lines.push(`data: ${line}`);
      return lines.map((line) => line + eol).join('') + eol;
    })
    .join('');
}

function expected(records: readonly Spec[]): SseRecord[] {
  let id: string | undefined;
  return records.map((r) => {
    if (r.id !== undefined) id = r.id;
    return { event: r.event ?? 'message', data: r.data.join('\n'), id };
  });
}

/** `text` cut at `cuts` (positions, any order, duplicates allowed). */
function chunks(text: string, cuts: readonly number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let start = 0;
  for (const cut of at) {
    out.push(text.slice(start, cut));
    start = cut;
  }
  out.push(text.slice(start));
  return out;
}

describe('SseParser', () => {
  it('dispatches the same records however the stream is chunked, with any line ends', () => {
    fc.assert(
      fc.property(
        fc.array(spec, { maxLength: 8 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.nat(), { maxLength: 12 }),
        (records, eol, cuts) => {
          const parser = new SseParser();
          const got = chunks(encode(records, eol), cuts).flatMap((chunk) => parser.push(chunk));
          expect(got).toEqual(expected(records));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('does not dispatch a record without data, nor one whose blank line has not arrived', () => {
    const parser = new SseParser();
    expect(parser.push('event: end\n\nid: 3\ndata: x\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ event: 'message', data: 'x', id: '3' }]);
  });
});
