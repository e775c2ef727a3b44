// The synchronous SHA-256 behind cache keys and hook-input hashes: byte-identical to node:crypto's, so cache keys did
// not change when the core stopped importing node:crypto (issue 16).
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
// Internal: not part of the public API.
import { sha256Hex } from '../src/middleware/sha256.js';

const reference = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('sha256Hex', () => {
  it('matches the FIPS 180-4 test vectors', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('equals node:crypto on every length around the block boundaries, and on random Unicode (seeded)', () => {
    for (let n = 0; n <= 200; n++)
      expect(sha256Hex('é'.repeat(n) + 'x'.repeat(n))).toBe(reference('é'.repeat(n) + 'x'.repeat(n)));
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        expect(sha256Hex(text)).toBe(reference(text));
      }),
      { seed: 0x16_0001, numRuns: 2_000 },
    );
    // Lone surrogates: both encode them as U+FFFD.
    expect(sha256Hex('a\ud800b')).toBe(reference('a\ud800b'));
  });
});
