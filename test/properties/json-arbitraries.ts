// JSON inputs for the property tests of the partial-JSON parser and of the strict parse of tool arguments. Values are
// kept small (short strings, shallow nesting): every prefix of a text gets parsed, so a value of n characters costs
// O(n²), and small values find the same bugs as large ones.
import fc from 'fast-check';

/**
 * One character of a string: mostly what stresses JSON's string encoding (quotes, backslashes, a backslash before `u`,
 * control characters, astral characters and lone surrogates), else any printable ASCII or any code point. (Cheaper to
 * generate than fast-check's grapheme units, which would cost more than the parsing.)
 */
export const unit = fc.oneof(
  fc.constantFrom(
    ...['"', '\\', '\\u', '\\u00e9', '/', 'u', 'e', '0', '\b', '\f', '\n', '\r', '\t', '\u0000', '\u001f', '\u007f'],
    ...['\u2028', '\u00a0', 'é', '中', '😀', '\ud83d', '\ude00', ' '],
  ),
  fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
  fc.integer({ min: 0, max: 0x10ffff }).map((code) => String.fromCodePoint(code)),
);
const text = fc.string({ unit, maxLength: 2 });
const number = fc.oneof(
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0.5, -2.5e-7, 1e21, -1.7976931348623157e308, 123456789012),
);
/** Objects shaped like tool arguments: string keys, nested objects and arrays, strings, numbers, booleans, null. */
export const { toolArguments } = fc.letrec<{ value: unknown; toolArguments: Record<string, unknown> }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'xsmall', maxDepth: 2 },
    text,
    number,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    tie('toolArguments'),
  ),
  toolArguments: fc.dictionary(text, tie('value'), { maxKeys: 3 }),
}));
/** Tool arguments, or any JSON value (fast-check's, kept to short texts: scalars, arrays and objects at the top). */
export const jsonValue = fc.oneof(
  toolArguments,
  fc.jsonValue({ maxDepth: 2, depthSize: 'xsmall', stringUnit: unit }).filter((v) => JSON.stringify(v).length <= 40),
);
/** The indentation of the pretty-printed text: one space, tab or CR a level (with JSON.stringify's LF and `: `). */
export const indent = fc.constantFrom<string | number>(1, '\t', '\r');

/** The compact and the pretty-printed text of a value. */
export const textsOf = (value: unknown, space: string | number) => [
  JSON.stringify(value),
  JSON.stringify(value, null, space),
];

/** A JSON-ish token soup (brackets, quotes, escapes, numbers, literals, whitespace), and arbitrary text. */
export const garbage = fc.oneof(
  fc
    .array(
      fc.oneof(
        fc.constantFrom(...['{', '}', '[', ']', ',', ':', '"', '\\', '\\u', '\\ud83d', '"a"', '-', '.', 'e', '1', '0']),
        fc.constantFrom(...['12', 'tr', 'true', 'nul', 'null', ' ', '\n', '\u00a0', '\ufeff', '😀', '\ud800']),
      ),
      { maxLength: 20 },
    )
    .map((tokens) => tokens.join('')),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit, maxLength: 20 }),
);
