// The incremental partial-JSON parser behind partialOutput(): the same value as parsePartialJson on every prefix of
// valid JSON however the text is cut, JSON.parse's value on the complete text, values that share what closed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePartialJson, PartialJsonParser } from 'cubepi/providers/kit';
import { completeElementCount } from '../operators/partial-json-parser.js';
import { garbage, indent, jsonValue, textsOf } from './properties/json-arbitraries.js';

/** Cuts `text` at the given points (sorted, deduplicated, inside the text). */
function cut(text: string, points: readonly number[]): string[] {
  const at = [...new Set(points.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  const chunks: string[] = [];
  let from = 0;
  for (const p of at) {
    chunks.push(text.slice(from, p));
    from = p;
  }
  chunks.push(text.slice(from));
  return chunks;
}

describe('PartialJsonParser', () => {
  it('agrees with parsePartialJson on every prefix, and with JSON.parse on the whole text, however it is cut', () => {
    fc.assert(
      fc.property(jsonValue, indent, fc.array(fc.nat(), { maxLength: 12 }), (value, space, points) => {
        for (const text of textsOf(value, space)) {
          const parser = new PartialJsonParser();
          let read = '';
          for (const chunk of cut(text, points)) {
            parser.push(chunk);
            read += chunk;
            expect(parser.value).toEqual(parsePartialJson(read));
          }
          expect(parser.error).toBeUndefined();
          expect(parser.value).toEqual(JSON.parse(text));
          // A number or literal at the root ends where something follows it (more digits may come); anything else
          // ends with its closing quote or bracket.
          expect(parser.done).toBe(typeof value === 'string' || (typeof value === 'object' && value !== null));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('one character at a time: the value of every prefix is the one parsePartialJson gives it', () => {
    fc.assert(
      fc.property(jsonValue, indent, (value, space) => {
        for (const text of textsOf(value, space)) {
          const parser = new PartialJsonParser();
          for (let i = 0; i < text.length; i++) {
            parser.push(text[i]!);
            expect(parser.value).toEqual(parsePartialJson(text.slice(0, i + 1)));
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('reports a change exactly when the value differs structurally; no change keeps the same object', () => {
    fc.assert(
      fc.property(jsonValue, indent, fc.array(fc.nat(), { maxLength: 12 }), (value, space, points) => {
        for (const text of textsOf(value, space)) {
          const parser = new PartialJsonParser();
          let before = parser.value;
          for (const chunk of cut(text, points)) {
            const count = parser.changes;
            const changed = parser.push(chunk);
            expect(changed).toBe(parser.changes !== count);
            if (changed) expect(parser.value).not.toEqual(before);
            else expect(parser.value).toBe(before);
            before = parser.value;
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a number that shows the same value again after a push is no change (`1`, then `.0`)', () => {
    const parser = new PartialJsonParser();
    parser.push('[1');
    const one = parser.value;
    expect(parser.push('.0')).toBe(false);
    expect(parser.value).toBe(one);
    expect(parser.push('.')).toBe(true); // `1.0.` is no number: left out
    expect(parser.value).toEqual([]);
    expect(parser.push(']')).toBe(false); // ends it: not JSON, the parser stops where it was
    expect(parser.error).toBe('Not JSON at offset 1: expected a number, found "1.0."');
    expect(parser.value).toEqual([]);
    const cutNumber = new PartialJsonParser();
    cutNumber.push('[-');
    expect(cutNumber.changes).toBe(1); // the array; a lone `-` shows nothing
    expect(cutNumber.push('2')).toBe(true);
    expect(cutNumber.push('e')).toBe(true); // `-2e` is left out until its exponent comes
    expect(cutNumber.value).toEqual([]);
    expect(cutNumber.push('0]')).toBe(true);
    expect(cutNumber.value).toEqual([-2]);
  });

  it('never throws on text that is not JSON; JSON.parse-able garbage gets JSON.parse’s value', () => {
    fc.assert(
      fc.property(garbage, fc.array(fc.nat(), { maxLength: 6 }), (text, points) => {
        const parser = new PartialJsonParser();
        for (const chunk of cut(text, points)) parser.push(chunk);
        let parsed: { value: unknown } | undefined;
        try {
          parsed = { value: JSON.parse(text) };
        } catch {
          parsed = undefined;
        }
        if (parsed !== undefined) expect(parser.value).toEqual(parsed.value);
      }),
      { numRuns: 500 },
    );
  });

  it('stops at text that is not JSON, naming the offset, and keeps the value read before it', () => {
    const parser = new PartialJsonParser();
    parser.push('{"a":"x');
    parser.push('y", "b" 1}');
    expect(parser.error).toBe('Not JSON at offset 15: expected ":", found "1"');
    expect(parser.value).toEqual({ a: 'xy' });
    expect(parser.push(',"c":2}')).toBe(false);
    expect(parser.value).toEqual({ a: 'xy' });

    const escape = new PartialJsonParser();
    escape.push('["ab\\x"]');
    expect(escape.error).toBe('Not JSON at offset 4: expected an escape, found "\\\\x"');
    expect(escape.value).toEqual(['ab']);
  });

  it('ignores what follows the root value (a closing fence), and reads `__proto__` as an own key', () => {
    const parser = new PartialJsonParser();
    parser.push('{"__proto__":{"x":1},"a":[1]}\n```');
    expect(parser.done).toBe(true);
    expect(parser.error).toBeUndefined();
    const value = parser.value as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'a']);
    expect(value).toEqual(JSON.parse('{"__proto__":{"x":1},"a":[1]}'));
  });

  it('values are frozen and share what closed; an open array knows how many of its elements are complete', () => {
    const parser = new PartialJsonParser();
    parser.push('{"items":[{"n":"a"},{"n":"b');
    const first = parser.value as { items: { n: string }[] };
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.items)).toBe(true);
    expect(completeElementCount(first.items)).toBe(1);
    parser.push('c"},3');
    const second = parser.value as { items: unknown[] };
    expect(second.items).toEqual([{ n: 'a' }, { n: 'bc' }, 3]);
    expect(second.items[0]).toBe(first.items[0]);
    expect(completeElementCount(second.items)).toBe(2);
    parser.push(']}');
    const last = parser.value as { items: unknown[] };
    // Closing changed nothing shown: the same value, now known to hold three complete elements.
    expect(last).toBe(second);
    expect(completeElementCount(last.items)).toBe(3);
    expect(completeElementCount([1, 2])).toBeUndefined();
  });
});
