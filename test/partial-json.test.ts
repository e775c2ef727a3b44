import { describe, expect, it } from 'vitest';
import { parsePartialJson, parseToolArguments } from 'cubepi/providers/kit';

describe('parsePartialJson (previews of streaming tool arguments)', () => {
  it.each([
    ['', undefined],
    ['{', {}],
    ['{"', {}],
    ['{"ci', {}],
    ['{"city"', {}],
    ['{"city":', {}],
    ['{"city": "Pa', { city: 'Pa' }],
    ['{"city":"Paris"', { city: 'Paris' }],
    ['{"city":"Paris",', { city: 'Paris' }],
    ['{"city":"Paris","n', { city: 'Paris' }],
    ['{"city":"Paris","n":1', { city: 'Paris', n: 1 }],
    ['{"city":"Paris","n":1.', { city: 'Paris' }],
    ['{"ok":tr', {}],
    ['{"ok":true', { ok: true }],
    ['{"xs":[1,2', { xs: [1, 2] }],
    ['{"xs":[1,{"a":"b', { xs: [1, { a: 'b' }] }],
    ['{"q":"say \\"hi', { q: 'say "hi' }],
    ['{"q":"trailing \\', { q: 'trailing ' }],
    ['{"q":"\\u00e', { q: '' }],
    // A backslash before `u` that is itself escaped is text, not the start of a `\uXXXX` escape to drop.
    ['{"path":"C:\\\\u', { path: 'C:\\u' }],
    ['"C:\\\\u00', 'C:\\u00'],
    ['{"a":{"b":{}},"c":nul', { a: { b: {} } }],
  ])('%j → %j', (text, expected) => {
    expect(parsePartialJson(text)).toEqual(expected);
  });

  it('returns complete JSON as JSON.parse does', () => {
    expect(parsePartialJson('{"a":[1,2,3],"b":null}')).toEqual({ a: [1, 2, 3], b: null });
  });
});

describe('parseToolArguments (the strict parse at toolcall_end)', () => {
  it('accepts a JSON object, and an empty text as no arguments', () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseToolArguments('')).toEqual({ ok: true, value: {} });
    expect(parseToolArguments('  {"a":1}  ')).toEqual({ ok: true, value: { a: 1 } });
  });

  it('rejects text that is not a complete JSON object, saying why', () => {
    const cut = parseToolArguments('{"a":1');
    expect(cut.ok).toBe(false);
    expect(parseToolArguments('[1]')).toEqual({ ok: false, error: 'expected a JSON object, got an array' });
    expect(parseToolArguments('null')).toEqual({ ok: false, error: 'expected a JSON object, got null' });
    expect(parseToolArguments('"x"')).toEqual({ ok: false, error: 'expected a JSON object, got string' });
    // Not JSON whitespace (String#trim would strip them), so not "no arguments" either.
    expect(parseToolArguments('\u00a0').ok).toBe(false);
    expect(parseToolArguments('\ufeff').ok).toBe(false);
  });
});
