/**
 * Finding and redacting personal data in text by pattern: emails, phone numbers, payment cards (Luhn-checked), IBANs
 * (mod-97-checked), US social security numbers, UK national insurance numbers and, when asked, IPv4 addresses.
 * Browser-safe. Every pattern has bounded repetition, so a scan is linear in the text's length, whatever the text.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { GuardrailVerdict, TextCheck } from './verdict.js';

// Not a type guard: `Array.isArray` would narrow a readonly array to `any[]`.
const isList = (value: unknown): boolean => Array.isArray(value);

/**
 * The kinds of personal data the built-in detectors find: `email`; `phone` (E.164 with or without separators, North
 * American numbers with separators, national numbers that start with a trunk `0` and have separators); `card` (13–19
 * digits, optionally grouped by spaces or dashes, Luhn-valid, starting 2–6); `iban` (a country's length, mod-97
 * valid, upper case, optionally grouped by spaces); `us_ssn` (`AAA-GG-SSSS` outside the ranges never issued);
 * `uk_nino` (UK national insurance number, prefixes never issued excluded); `ipv4` (dotted quad, off by default).
 */
export type PiiKind = 'email' | 'phone' | 'card' | 'iban' | 'us_ssn' | 'uk_nino' | 'ipv4';

/** The kinds a detector looks for when `kinds` is not given: all but `ipv4`. */
export const DEFAULT_PII_KINDS: readonly PiiKind[] = ['email', 'phone', 'card', 'iban', 'us_ssn', 'uk_nino'];

/** One piece of personal data found: its kind, where it is (`text.slice(start, end)`), and its text. */
export interface PiiMatch {
  readonly kind: PiiKind | (string & {});
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * A pattern of the caller's own, found beside the built-ins. `pattern` is used as a global regular expression (the
 * `g` flag is added); `validate` may reject a match (a checksum); `replacement` is its redaction text (default
 * `[KIND]`, the kind in upper case). Keep the pattern's repetition bounded: the linear-time promise covers only the
 * built-in patterns.
 */
export interface PiiPattern {
  readonly kind: string;
  readonly pattern: RegExp;
  readonly validate?: ((match: string) => boolean) | undefined;
  readonly replacement?: string | undefined;
}

/** What {@link detectPii} looks for. */
export interface PiiOptions {
  /** The built-in kinds to look for (default {@link DEFAULT_PII_KINDS}); `[]` with `patterns` uses only those. */
  readonly kinds?: readonly PiiKind[] | undefined;
  /** Patterns of the caller's own, looked for as well. */
  readonly patterns?: readonly PiiPattern[] | undefined;
}

/** What {@link redactPii} looks for, and what it writes instead. */
export interface RedactPiiOptions extends PiiOptions {
  /**
   * The text that replaces a match: per kind (missing kinds keep their default, `[EMAIL]`, `[PHONE]`, `[CARD]`,
   * `[IBAN]`, `[SSN]`, `[NINO]`, `[IP]`, or a custom pattern's `replacement`), or a function of the match.
   */
  readonly replacements?: Readonly<Partial<Record<string, string>>> | ((match: PiiMatch) => string) | undefined;
}

/** What {@link piiCheck} does on a match: stop the text (`trip`) or let it go on redacted (`redact`, the default). */
export interface PiiCheckOptions extends RedactPiiOptions {
  readonly action?: 'trip' | 'redact' | undefined;
}

const DEFAULT_REPLACEMENTS: Readonly<Record<PiiKind, string>> = {
  email: '[EMAIL]',
  phone: '[PHONE]',
  card: '[CARD]',
  iban: '[IBAN]',
  us_ssn: '[SSN]',
  uk_nino: '[NINO]',
  ipv4: '[IP]',
};

// IBAN lengths by country (the SWIFT IBAN registry).
const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18,
  GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32,
  LI: 21, LT: 20, LU: 20, LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24,
  PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, SA: 24, SC: 31, SE: 24, SI: 19, SK: 24, SM: 27, ST: 25, SV: 28,
  TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20,
}; // prettier-ignore

interface Detector {
  readonly kind: string;
  readonly pattern: RegExp;
  /** The match's extent once checked, or undefined to drop it. */
  readonly check: (match: string, index: number, text: string) => { start: number; end: number } | undefined;
}

const whole = (match: string, index: number) => ({ start: index, end: index + match.length });
const digitsOf = (text: string) => text.replace(/\D/g, '');

/** The Luhn checksum of a digit string. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/** Whether `iban` (no spaces, upper case) passes the ISO 13616 mod-97 check. */
export function ibanChecksumValid(iban: string): boolean {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const code = char.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : char;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

// Each pattern's repetition is bounded and its alternatives are told apart by a separator, so trying it at one
// position costs a bounded number of steps: a scan is linear in the text (test/guardrails/pii.test.ts runs 1 MB of
// hostile input through every detector).
const BUILT_INS: Readonly<Record<PiiKind, Detector>> = {
  email: {
    kind: 'email',
    pattern:
      /(?<![\p{L}\p{N}_.%+-])[\p{L}\p{N}_.%+-]{1,64}@(?:[\p{L}\p{N}-]{1,63}\.){1,8}\p{L}{2,24}(?![\p{L}\p{N}-])/gu,
    check: (match, index) => {
      // A sentence's dot before the address is not part of it; a redactor still takes a malformed local part.
      const lead = /^\.*/.exec(match)![0].length;
      return match[lead] === '@' ? undefined : { start: index + lead, end: index + match.length };
    },
  },
  phone: {
    kind: 'phone',
    pattern: new RegExp(
      [
        // E.164, optionally grouped: +44 20 7946 0958, +14155552671, +49-30-1234567.
        String.raw`(?<![\w+])\+[1-9]\d{0,14}(?:[ .-]\d{1,14}){0,5}(?![\d.-]?\d)`,
        // North American with separators: (415) 555-2671, 415-555-2671, 415.555.2671, 1 415 555 2671.
        String.raw`(?<![\w+-])(?:1[ .-]?)?(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[ .-])[2-9]\d{2}[ .-]\d{4}(?![\w-])`,
        // National with a trunk 0 and separators: 020 7946 0958, 07700 900123, 030-1234-5678.
        String.raw`(?<![\w+-])0\d{2,4}[ -]\d{3,6}(?:[ -]\d{3,4})?(?![\w-])`,
      ].join('|'),
      'g',
    ),
    check: (match, index) => {
      const digits = digitsOf(match).length;
      if (match.startsWith('+')) return digits >= 8 && digits <= 15 ? whole(match, index) : undefined;
      if (match.startsWith('0')) return digits >= 10 && digits <= 11 ? whole(match, index) : undefined;
      return whole(match, index);
    },
  },
  card: {
    kind: 'card',
    pattern: /(?<![\d-])[2-6](?:[ -]?\d){12,18}(?![ -]?\d)/g,
    check: (match, index) => {
      // One separator style (4111 1111 1111 1111 or 4111-1111-…), not a mix that would join unrelated numbers.
      if (match.includes(' ') && match.includes('-')) return undefined;
      return luhnValid(digitsOf(match)) ? whole(match, index) : undefined;
    },
  },
  iban: {
    kind: 'iban',
    pattern: /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}/g,
    check: (match, index, text) => {
      const length = IBAN_LENGTHS[match.slice(0, 2)];
      if (length === undefined) return undefined;
      // The greedy match may run into the next word (DE89 3704 0044 0532 0130 00 IS): keep the country's length.
      let count = 0;
      let end = 0;
      while (end < match.length && count < length) if (match[end++] !== ' ') count++;
      if (count < length) return undefined;
      const next = text.charAt(index + end);
      if (/[A-Za-z0-9]/.test(next)) return undefined;
      return ibanChecksumValid(match.slice(0, end).replace(/ /g, '')) ? { start: index, end: index + end } : undefined;
    },
  },
  us_ssn: {
    kind: 'us_ssn',
    pattern: /(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])/g,
    check: (match, index) => {
      const [area = '', group = '', serial = ''] = match.split('-');
      const a = Number(area);
      // Never issued: area 000, 666 and 900–999, group 00, serial 0000; and the two numbers printed in ads.
      if (a === 0 || a === 666 || a >= 900 || group === '00' || serial === '0000') return undefined;
      if (match === '078-05-1120' || match === '219-09-9999') return undefined;
      return whole(match, index);
    },
  },
  uk_nino: {
    kind: 'uk_nino',
    pattern: /(?<![A-Za-z0-9])[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])/g,
    check: (match, index) => (/^(?:BG|GB|NK|KN|TN|NT|ZZ)/.test(match) ? undefined : whole(match, index)),
  },
  ipv4: {
    kind: 'ipv4',
    pattern: /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\d|\.\d)/g,
    check: whole,
  },
};

// Where two matches overlap, the one of the better-checked kind wins (a checksum beats a shape).
const PRIORITY: readonly string[] = ['card', 'iban', 'us_ssn', 'uk_nino', 'email', 'phone', 'ipv4'];

function detectorsOf(options: PiiOptions): Detector[] {
  const kinds = options.kinds ?? DEFAULT_PII_KINDS;
  if (!isList(kinds)) throw new ConfigurationError('PII: `kinds` must be an array of PII kinds');
  const detectors: Detector[] = [];
  for (const kind of kinds) {
    const detector = Object.hasOwn(BUILT_INS, kind) ? BUILT_INS[kind] : undefined;
    if (detector === undefined)
      throw new ConfigurationError(`PII: unknown kind "${String(kind)}" (known: ${Object.keys(BUILT_INS).join(', ')})`);
    detectors.push(detector);
  }
  for (const custom of options.patterns ?? []) {
    if (typeof custom?.kind !== 'string' || custom.kind === '')
      throw new ConfigurationError('PII: a custom pattern needs a non-empty `kind`');
    if (!(custom.pattern instanceof RegExp))
      throw new ConfigurationError(`PII: the custom pattern "${custom.kind}" needs a RegExp \`pattern\``);
    const flags = custom.pattern.flags.includes('g') ? custom.pattern.flags : `${custom.pattern.flags}g`;
    const validate = custom.validate;
    detectors.push({
      kind: custom.kind,
      pattern: new RegExp(custom.pattern.source, flags),
      check: (match, index) => (validate === undefined || validate(match) ? whole(match, index) : undefined),
    });
  }
  return detectors;
}

function rank(kind: string): number {
  const index = PRIORITY.indexOf(kind);
  return index === -1 ? -1 : index; // custom patterns first: the caller asked for them by name
}

/** Validates options once, for a check built from them. */
function compile(options: PiiOptions): (text: string) => PiiMatch[] {
  const detectors = detectorsOf(options);
  return (text) => {
    if (typeof text !== 'string') throw new ConfigurationError('PII: the text to scan must be a string');
    const found: PiiMatch[] = [];
    for (const detector of detectors) {
      const pattern = new RegExp(detector.pattern); // own lastIndex: detection is reentrant
      for (const match of text.matchAll(pattern)) {
        if (match[0] === '') continue;
        const extent = detector.check(match[0], match.index, text);
        if (extent !== undefined)
          found.push({ kind: detector.kind, ...extent, text: text.slice(extent.start, extent.end) });
      }
    }
    // Keep non-overlapping matches, the better-checked kind first, then the earlier and longer.
    found.sort((a, b) => rank(a.kind) - rank(b.kind) || a.start - b.start || b.end - a.end);
    const kept: PiiMatch[] = [];
    for (const match of found) if (!kept.some((k) => match.start < k.end && k.start < match.end)) kept.push(match);
    return kept.sort((a, b) => a.start - b.start);
  };
}

/**
 * The personal data in `text`, in order of position, never overlapping (where two kinds claim the same characters the
 * better-checked one wins: card, IBAN, SSN, NINO, email, phone, IPv4; custom patterns before all). Options are
 * validated: an unknown kind or a custom pattern without a RegExp is a `ConfigurationError`.
 *
 * It finds data by shape and checksum, so it misses what has neither (names, addresses, dates of birth) and can flag
 * a number that merely looks right (one random 16-digit number in ten passes Luhn). See `docs/guardrails-builtins.md`.
 *
 * @example
 * detectPii('Mail jane@example.com'); // [{ kind: 'email', start: 5, end: 21, text: 'jane@example.com' }]
 */
export function detectPii(text: string, options: PiiOptions = {}): PiiMatch[] {
  return compile(options)(text);
}

function replacer(options: RedactPiiOptions): (match: PiiMatch) => string {
  const { replacements, patterns = [] } = options;
  if (typeof replacements === 'function') return replacements;
  if (replacements !== undefined && (typeof replacements !== 'object' || replacements === null))
    throw new ConfigurationError('PII: `replacements` must be an object of strings or a function');
  const own = new Map(patterns.map((p) => [p.kind, p.replacement ?? `[${p.kind.toUpperCase()}]`]));
  return (match) =>
    replacements?.[match.kind] ?? own.get(match.kind) ?? DEFAULT_REPLACEMENTS[match.kind as PiiKind] ?? '[PII]';
}

function redactWith(text: string, matches: readonly PiiMatch[], replace: (match: PiiMatch) => string): string {
  let out = '';
  let at = 0;
  for (const match of matches) {
    out += text.slice(at, match.start) + replace(match);
    at = match.end;
  }
  return out + text.slice(at);
}

/**
 * `text` with every match of {@link detectPii} replaced (by default `[EMAIL]`, `[PHONE]`, `[CARD]`, `[IBAN]`,
 * `[SSN]`, `[NINO]`, `[IP]`), and the matches (their offsets in the original text).
 *
 * @example
 * redactPii('Card 4111 1111 1111 1111').text; // 'Card [CARD]'
 */
export function redactPii(text: string, options: RedactPiiOptions = {}): { text: string; matches: PiiMatch[] } {
  const matches = compile(options)(text);
  return { text: redactWith(text, matches, replacer(options)), matches };
}

/**
 * A {@link TextCheck} over personal data: `pass` when none is found; else, with `action: 'redact'` (the default), a
 * rewrite to the redacted text, or with `action: 'trip'` a trip with reason `pii_detected`. `info` is
 * `{ kinds, count }` (the kinds found, never the data itself: events and spans carry `info`). Options are validated
 * when the check is built (`ConfigurationError`). A check whose signal is already aborted throws its reason.
 *
 * @example
 * const check = piiCheck({ kinds: ['email', 'card'], replacements: { email: '<email>' } });
 */
export function piiCheck(options: PiiCheckOptions = {}): TextCheck {
  const action = options.action ?? 'redact';
  if (action !== 'trip' && action !== 'redact')
    throw new ConfigurationError(`PII: \`action\` must be 'trip' or 'redact', not ${JSON.stringify(action)}`);
  const detect = compile(options);
  const replace = replacer(options);
  return (text, context): GuardrailVerdict => {
    context.signal.throwIfAborted();
    const matches = detect(text);
    if (matches.length === 0) return 'pass';
    const info = { kinds: [...new Set(matches.map((m) => m.kind))], count: matches.length };
    if (action === 'trip') return { trip: true, reason: 'pii_detected', info };
    return { rewrite: true, text: redactWith(text, matches, replace), info };
  };
}
