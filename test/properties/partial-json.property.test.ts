// Property tests of the partial-JSON parser (src/providers/partial-json.ts). It reads tool-argument text as a model
// streams it, and a model may stream anything: every prefix of every JSON text, and any garbage, must be safe to hand
// it, and its previews must never show what the final arguments will not hold.
//
// Generated cases per run (fixed seeds; a failure prints its seed and the shrunk counterexample):
//   at every prefix of a value's compact and pretty-printed text   10,000 values (424,408 prefixes)
//   on garbage                                                      10,000 strings
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { parsePartialJson } from 'cubepi/providers/kit';
import { garbage, indent, jsonValue, textsOf } from './json-arbitraries.js';

const RUNS = 10_000;

// ---------------------------------------------------------------------------------------------------------------------
// What a preview may be.

/**
 * Equality of two values JSON.parse made from texts of one value: their texts are equal (same key order, no -0, no
 * undefined), and comparing them is several times cheaper than a deep comparison, which matters at 400,000 prefixes.
 */
const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

const kindOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** A JSON number, whole. */
const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

const numberPrefixCache = new Map<number, readonly number[]>();

/** The numbers a prefix of `n`'s JSON text reads as (`-1.5e+30`: -1, -1.5, -1.5e+3 and itself). */
function numberPrefixes(n: number): readonly number[] {
  let prefixes = numberPrefixCache.get(n);
  if (prefixes === undefined) {
    const source = JSON.stringify(n);
    const found: number[] = [];
    for (let end = 1; end <= source.length; end++) {
      if (NUMBER.test(source.slice(0, end))) found.push(Number(source.slice(0, end)));
    }
    numberPrefixCache.set(n, (prefixes = found));
  }
  return prefixes;
}

/**
 * Why `preview` is not a preview of `final` read from a prefix of its text, or undefined when it is one.
 * "Prefix-consistent", from the parser's contract (open strings, arrays and objects closed; a trailing incomplete
 * token dropped): only the last element of each open container can be unfinished, so going down that path only,
 *
 * - an object has the first keys of `final`, in order (a key never shows before its value has started), every value
 *   but the last equal to `final`'s, the last one a preview of `final`'s;
 * - an array has the first elements of `final`, all but the last equal, the last one a preview;
 * - a string is a prefix of `final`'s (in UTF-16 code units: a cut may fall between the halves of a surrogate pair);
 * - a number is what a prefix of `final`'s JSON text reads as (`12` while `123` arrives, `1.5` while `1.5e+30` does);
 * - `true`, `false` and `null` are whole.
 */
function previewMismatch(preview: unknown, final: unknown, path = '$'): string | undefined {
  if (preview === final) return undefined;
  if (kindOf(preview) !== kindOf(final)) return `${path} is ${kindOf(preview)}, the value is ${kindOf(final)}`;
  if (typeof final === 'string') {
    return final.startsWith(preview as string) ? undefined : `${path}: ${JSON.stringify(preview)} is no prefix`;
  }
  if (typeof final === 'number') {
    return numberPrefixes(final).includes(preview as number) ? undefined : `${path}: ${String(preview)} is no prefix`;
  }
  if (Array.isArray(final)) {
    const items = preview as unknown[];
    if (items.length > final.length) return `${path} has ${items.length} elements, the value ${final.length}`;
    for (let i = 0; i < items.length - 1; i++) {
      if (!same(items[i], final[i])) return `${path}[${i}] is closed but differs`;
    }
    const last = items.length - 1;
    return last < 0 ? undefined : previewMismatch(items[last], final[last], `${path}[${last}]`);
  }
  if (final !== null && typeof final === 'object') {
    const members = preview as Record<string, unknown>;
    const finalMembers = final as Record<string, unknown>;
    const keys = Object.keys(members);
    const finalKeys = Object.keys(finalMembers);
    if (keys.some((key, i) => key !== finalKeys[i])) {
      return `${path} has keys ${JSON.stringify(keys)}, not the first of ${JSON.stringify(finalKeys)}`;
    }
    for (let i = 0; i < keys.length - 1; i++) {
      if (!same(members[keys[i]!], finalMembers[keys[i]!])) return `${path}.${keys[i]} is closed but differs`;
    }
    const last = keys.at(-1);
    return last === undefined ? undefined : previewMismatch(members[last], finalMembers[last], `${path}.${last}`);
  }
  return `${path}: ${String(preview)} is not ${String(final)}`;
}

/** A token of a well-formed JSON text, and the closers of the containers open after it. */
interface Token {
  readonly kind: 'open' | 'close' | 'punctuation' | 'key' | 'string' | 'scalar';
  readonly start: number;
  readonly end: number;
  readonly closers: string;
}

/** The tokens of a well-formed JSON text (the output of JSON.stringify: no need to reject anything). */
function tokenize(json: string): Token[] {
  const tokens: Token[] = [];
  const open: string[] = [];
  const closers = () => [...open].reverse().join('');
  let i = 0;
  while (i < json.length) {
    const ch = json[i]!;
    if (' \t\r\n'.includes(ch)) {
      i++;
    } else if (ch === '{' || ch === '[') {
      open.push(ch === '{' ? '}' : ']');
      tokens.push({ kind: 'open', start: i, end: ++i, closers: closers() });
    } else if (ch === '}' || ch === ']') {
      open.pop();
      tokens.push({ kind: 'close', start: i, end: ++i, closers: closers() });
    } else if (ch === ',' || ch === ':') {
      tokens.push({ kind: 'punctuation', start: i, end: ++i, closers: closers() });
    } else if (ch === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      const before = tokens.at(-1);
      const isKey = open.at(-1) === '}' && (before?.kind === 'open' || json[before!.start] === ',');
      tokens.push({ kind: isKey ? 'key' : 'string', start: i, end: (i = j + 1), closers: closers() });
    } else {
      let j = i;
      while (j < json.length && !' \t\r\n,:]}'.includes(json[j]!)) j++;
      tokens.push({ kind: 'scalar', start: i, end: (i = j), closers: closers() });
    }
  }
  return tokens;
}

/**
 * The preview the contract gives for each prefix `json.slice(0, cut)` of the well-formed text `json`, as compact JSON
 * text (undefined when no value has started): the text up to the last complete value (a string value cut mid-way
 * counts, without an escape the cut split; a number counts once its text is a valid number), with the open containers
 * closed. Compact (tokens without the whitespace between them), it is JSON.stringify of the preview except where a
 * cut number is not in canonical form (`1e+2`, `-0`): {@link samePreview} compares the two.
 */
function expectedPreviews(json: string): (string | undefined)[] {
  const tokens = tokenize(json);
  const out: (string | undefined)[] = [];
  let compact = ''; // the tokens that ended before the cut, without whitespace
  let last: string | undefined; // the compact text up to the last complete value, with its closers
  let next = 0;
  for (let cut = 0; cut < json.length; cut++) {
    for (; next < tokens.length && tokens[next]!.end <= cut; next++) {
      const token = tokens[next]!;
      compact += json.slice(token.start, token.end);
      if (token.kind !== 'punctuation' && token.kind !== 'key') last = compact + token.closers;
    }
    const token = tokens[next];
    let expected = last;
    if (token !== undefined && token.start < cut && token.kind === 'string') {
      let end = cut;
      // Without an escape the cut split: a lone `\`, or `\u` with fewer than four hex digits.
      for (let k = token.start + 1; k < cut; k += json[k] === '\\' ? 2 : 1) {
        if (json[k] === '\\' && k + (json[k + 1] === 'u' ? 6 : 2) > cut) end = k;
      }
      expected = compact + json.slice(token.start, end) + '"' + token.closers;
    } else if (token !== undefined && token.start < cut && token.kind === 'scalar') {
      if (NUMBER.test(json.slice(token.start, cut))) expected = compact + json.slice(token.start, cut) + token.closers;
    }
    out.push(expected);
  }
  return out;
}

/** Whether `preview` is the value of the compact JSON text `expected` (see {@link expectedPreviews}). */
function samePreview(preview: unknown, expected: string | undefined): boolean {
  const text = JSON.stringify(preview) as string | undefined;
  if (text === expected) return true;
  return text !== undefined && expected !== undefined && text === JSON.stringify(JSON.parse(expected));
}

/** Parses every prefix of `json` (and the whole), failing with the first prefix whose preview `check` rejects. */
function everyPrefix(json: string, check: (preview: unknown, cut: number) => string | undefined): void {
  for (let cut = 0; cut <= json.length; cut++) {
    const why = check(parsePartialJson(json.slice(0, cut)), cut);
    if (why !== undefined) throw new Error(`prefix ${JSON.stringify(json.slice(0, cut))}: ${why}`);
  }
}

describe('parsePartialJson on every prefix of a JSON text (compact and pretty-printed)', () => {
  it('never throws, previews every prefix consistently and exactly, and reads the whole text as JSON.parse does', () => {
    fc.assert(
      fc.property(jsonValue, indent, (value, space) => {
        const final = JSON.parse(JSON.stringify(value)) as unknown;
        for (const json of textsOf(value, space)) {
          const expected = expectedPreviews(json);
          const opening = json.search(/\S/);
          everyPrefix(json, (preview, cut) => {
            if (cut === json.length) return isDeepStrictEqual(preview, final) ? undefined : 'not the value';
            // Undefined is for "nothing yet": once a string, an array or an object has opened, there is a preview.
            if (preview === undefined) return cut > opening && '"[{'.includes(json[opening]!) ? 'undefined' : undefined;
            const why = previewMismatch(preview, final);
            if (why !== undefined) return why;
            return samePreview(preview, expected[cut]) ? undefined : `expected ${expected[cut]}`;
          });
        }
      }),
      { seed: 1501, numRuns: RUNS },
    );
  });
});

/** Whether `v` is a value JSON.parse can return (what a preview must be, whatever the text). */
function isJsonValue(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJsonValue);
  return typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype && Object.values(v).every(isJsonValue);
}

describe('parsePartialJson on garbage', () => {
  it('never throws; returns undefined or a JSON value, and what JSON.parse returns when the text is JSON', () => {
    fc.assert(
      fc.property(garbage, (input) => {
        const preview = parsePartialJson(input);
        assert.ok(preview === undefined || isJsonValue(preview), 'not a JSON value');
        let parsed: unknown;
        try {
          parsed = JSON.parse(input);
        } catch {
          return;
        }
        assert.deepStrictEqual(preview, parsed);
      }),
      { seed: 1502, numRuns: RUNS },
    );
  });
});
