// The PII built-in against a table of positive and negative cases, its redaction, its check's verdicts, its options'
// validation, and 1 MB of hostile input through every detector (linear time: it must simply finish).
import { describe, expect, it } from 'vitest';
import { ConfigurationError, detectPii, ibanChecksumValid, luhnValid, piiCheck, redactPii, type PiiKind } from 'cubepi';

const ALL: PiiKind[] = ['email', 'phone', 'card', 'iban', 'us_ssn', 'uk_nino', 'ipv4'];
const context = () => ({ signal: new AbortController().signal });

// [text, the matches expected as `kind:text`, in order]; scanned with every kind on (ipv4 included).
const TABLE: readonly (readonly [string, readonly string[]])[] = [
  // Emails
  ['Write to jane.doe@example.com today', ['email:jane.doe@example.com']],
  ['From: Jane <jane+tag@mail.example.co.uk>', ['email:jane+tag@mail.example.co.uk']],
  ['«contact@société.example» and x@exämple.com', ['email:contact@société.example', 'email:x@exämple.com']],
  ['📧 support@cubepi.dev 🚀', ['email:support@cubepi.dev']],
  ['Übergabe an müller_k@firma.de bitte', ['email:müller_k@firma.de']],
  ['not an email: user@localhost or @handle or a@b', []],
  ['two: a@x.io,b@y.org.', ['email:a@x.io', 'email:b@y.org']],
  ['dots: .lead@x.com loses its dot, a..b@x.com is still taken', ['email:lead@x.com', 'email:a..b@x.com']],
  // Phones
  ['Call +14155552671 now', ['phone:+14155552671']],
  ['Tel. +44 20 7946 0958.', ['phone:+44 20 7946 0958']],
  ['Ring +49-30-1234567 (office)', ['phone:+49-30-1234567']],
  [
    'US: (415) 555-2671 or 415-555-2671 or 415.555.2671',
    ['phone:(415) 555-2671', 'phone:415-555-2671', 'phone:415.555.2671'],
  ],
  ['London 020 7946 0958, mobile 07700 900123', ['phone:020 7946 0958', 'phone:07700 900123']],
  ['Date 2024-01-15 and 15/01/2024 are not phones', []],
  ['Order #4155552671 and ORD-415-555-2671 are ids', []],
  ['A digit run 0123456789 is not a phone', []],
  ['Too short +12345 and too long +1234567890123456', []],
  ['Version 1.2.3 and 10:30 and 3.14159', []],
  // Cards
  ['Visa 4111 1111 1111 1111 exp 12/29', ['card:4111 1111 1111 1111']],
  ['MC 5555-5555-5555-4444', ['card:5555-5555-5555-4444']],
  ['Amex 378282246310005.', ['card:378282246310005']],
  ['Discover 6011111111111117', ['card:6011111111111117']],
  ['bad Luhn 4111 1111 1111 1112', []],
  ['too short 4111 1111 111', []],
  ['mixed separators 4111 1111-1111 1111', []],
  ['starts with 9: 9111111111111111 (Luhn-valid but no card network)', []],
  ['20 digits 41111111111111111111', []],
  // IBANs
  ['IBAN DE89 3704 0044 0532 0130 00 please', ['iban:DE89 3704 0044 0532 0130 00']],
  ['GB82WEST12345698765432', ['iban:GB82WEST12345698765432']],
  ['FR14 2004 1010 0505 0001 3M02 606 IS MINE', ['iban:FR14 2004 1010 0505 0001 3M02 606']],
  ['NL91ABNA0417164300.', ['iban:NL91ABNA0417164300']],
  ['bad checksum GB82 WEST 1234 5698 7654 33', []],
  ['wrong length DE89 3704 0044 0532 0130 0', []],
  ['unknown country ZZ12 3456 7890 1234 57', []],
  // US SSN
  ['SSN 123-45-6789', ['us_ssn:123-45-6789']],
  ['invalid areas 000-12-3456 666-12-3456 912-34-5678', []],
  ['invalid group/serial 123-00-4567 123-45-0000', []],
  ['the advert number 078-05-1120', []],
  ['nine digits 123456789 alone are not an SSN', []],
  // UK NINO
  ['NINO AB 12 34 56 C', ['uk_nino:AB 12 34 56 C']],
  ['NINO JG103759A', ['uk_nino:JG103759A']],
  ['never issued: GB123456A, BG123456A, DA123456A, QQ123456C, AB123456E', []],
  // IPv4
  ['host 192.168.1.20.', ['ipv4:192.168.1.20']],
  ['not an ip 256.1.1.1 or 1.2.3', []],
  // Mixed, unicode around
  [
    '«jane@example.com» — 4111111111111111 — +33 1 23 45 67 89',
    ['email:jane@example.com', 'card:4111111111111111', 'phone:+33 1 23 45 67 89'],
  ],
  ['Plain prose with no personal data at all.', []],
];

describe('detectPii: the table', () => {
  it('has at least 40 rows, positive and negative', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(40);
    expect(TABLE.filter(([, m]) => m.length === 0).length).toBeGreaterThanOrEqual(15);
  });
  it.each(TABLE)('%s', (text, expected) => {
    const matches = detectPii(text, { kinds: ALL });
    expect(matches.map((m) => `${m.kind}:${m.text}`)).toEqual(expected);
    for (const m of matches) expect(text.slice(m.start, m.end)).toBe(m.text);
  });
});

describe('checksums', () => {
  it('luhnValid', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(luhnValid('')).toBe(false);
  });
  it('ibanChecksumValid', () => {
    expect(ibanChecksumValid('DE89370400440532013000')).toBe(true);
    expect(ibanChecksumValid('DE89370400440532013001')).toBe(false);
  });
});

describe('kinds and custom patterns', () => {
  it('looks for the default kinds only (no ipv4) unless asked', () => {
    expect(detectPii('10.0.0.1 and a@b.io').map((m) => m.kind)).toEqual(['email']);
    expect(detectPii('10.0.0.1 and a@b.io', { kinds: ['ipv4'] }).map((m) => m.kind)).toEqual(['ipv4']);
  });
  it('finds a custom pattern, validated by its own function, and redacts it with its replacement', () => {
    const patterns = [
      { kind: 'employee', pattern: /EMP-\d{5}/, validate: (m: string) => m !== 'EMP-00000', replacement: '<EMP>' },
    ];
    expect(detectPii('EMP-12345 and EMP-00000', { kinds: [], patterns }).map((m) => m.text)).toEqual(['EMP-12345']);
    expect(redactPii('EMP-12345 mail a@b.io', { patterns }).text).toBe('<EMP> mail [EMAIL]');
  });
  it('rejects bad options with a ConfigurationError naming the problem', () => {
    expect(() => detectPii('x', { kinds: ['passport' as PiiKind] })).toThrow(/unknown kind "passport"/);
    expect(() => detectPii('x', { kinds: 'email' as unknown as PiiKind[] })).toThrow(ConfigurationError);
    expect(() => detectPii('x', { patterns: [{ kind: 'x', pattern: 'EMP' as unknown as RegExp }] })).toThrow(/RegExp/);
    expect(() => detectPii('x', { patterns: [{ kind: '', pattern: /x/ }] })).toThrow(/non-empty `kind`/);
    expect(() => piiCheck({ action: 'block' as 'trip' })).toThrow(ConfigurationError);
    expect(() => redactPii('x', { replacements: 'x' as unknown as Record<string, string> })).toThrow(
      ConfigurationError,
    );
  });
});

describe('redactPii', () => {
  it('replaces each kind with its default text and reports offsets in the original', () => {
    const text = 'Mail jane@example.com, card 4111 1111 1111 1111, SSN 123-45-6789, IBAN GB82WEST12345698765432.';
    const { text: redacted, matches } = redactPii(text);
    expect(redacted).toBe('Mail [EMAIL], card [CARD], SSN [SSN], IBAN [IBAN].');
    expect(matches.map((m) => [m.kind, m.start])).toEqual([
      ['email', 5],
      ['card', 28],
      ['us_ssn', 53],
      ['iban', 71],
    ]);
  });
  it('takes replacements per kind or as a function', () => {
    expect(redactPii('a@b.io +14155552671', { replacements: { email: '<e>' } }).text).toBe('<e> [PHONE]');
    expect(redactPii('a@b.io +14155552671', { replacements: (m) => `<${m.kind}:${m.text.length}>` }).text).toBe(
      '<email:6> <phone:12>',
    );
  });
});

describe('piiCheck', () => {
  it('passes text without personal data', () => {
    expect(piiCheck()('nothing here', context())).toBe('pass');
  });
  it('redacts by default: a rewrite whose info names the kinds, never the data', () => {
    const verdict = piiCheck()('me: jane@example.com, +44 20 7946 0958', context());
    expect(verdict).toEqual({
      rewrite: true,
      text: 'me: [EMAIL], [PHONE]',
      info: { kinds: ['email', 'phone'], count: 2 },
    });
    expect(JSON.stringify(verdict)).not.toContain('jane@');
  });
  it("trips with action 'trip', and looks only for the kinds asked", () => {
    const check = piiCheck({ action: 'trip', kinds: ['card'] });
    expect(check('4111111111111111', context())).toEqual({
      trip: true,
      reason: 'pii_detected',
      info: { kinds: ['card'], count: 1 },
    });
    expect(check('jane@example.com', context())).toBe('pass');
  });
  it('throws the reason of an already aborted signal', () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    expect(() => piiCheck()('a@b.io', { signal: controller.signal })).toThrow('gone');
  });
});

describe('hostile input (linear time: each of these simply finishes)', () => {
  const MB = 1 << 20;
  const hostile: Record<string, string> = {
    letters: 'a'.repeat(MB),
    digits: '1'.repeat(MB),
    'spaced digits': '1 '.repeat(MB / 2),
    'dashed digits': '4-'.repeat(MB / 2),
    'at signs': 'a@'.repeat(MB / 2),
    'dotted labels': 'a@' + 'a.'.repeat(MB / 2 - 1),
    'local parts': 'a.'.repeat(MB / 2) + '@',
    'plus digits': '+1 '.repeat(MB / 3),
    'iban-like': 'DE89 '.repeat(MB / 5),
    'ip-like': '1.'.repeat(MB / 2),
    'nino-like': 'AB 12 '.repeat(MB / 6),
  };
  it.each(Object.entries(hostile))('%s (1 MB)', (_name, text) => {
    expect(text.length).toBeGreaterThan(MB * 0.9);
    expect(Array.isArray(detectPii(text, { kinds: ALL }))).toBe(true);
  });
});
