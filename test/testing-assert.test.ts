// The testing kit's own assertions (cubepi/testing imports no node: module): node's strict rules, and messages that
// name the first difference.
import { describe, expect, it } from 'vitest';
import { createTestScheduler } from 'cubepi/testing';
import { assert, AssertionError } from '../src/testing/assert.js';

function failure(run: () => unknown): AssertionError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AssertionError);
    return error as AssertionError;
  }
  throw new Error('expected an AssertionError');
}

describe('assert.deepEqual', () => {
  it.each<[string, unknown, unknown]>([
    ['NaN', NaN, NaN],
    ['nested objects, whatever the key order', { a: [1, { b: 'x' }], c: null }, { c: null, a: [1, { b: 'x' }] }],
    ['Dates by time', new Date(5), new Date(5)],
    ['RegExps by source and flags', /a+/g, /a+/g],
    ['Maps by content', new Map<unknown, unknown>([[{ k: 1 }, 'v']]), new Map<unknown, unknown>([[{ k: 1 }, 'v']])],
    ['Sets by content', new Set([1, { a: 2 }]), new Set([{ a: 2 }, 1])],
    ['typed arrays by bytes', new Uint8Array([1, 2]), new Uint8Array([1, 2])],
    ['Errors by name and message', new TypeError('x'), new TypeError('x')],
  ])('holds for %s', (_, actual, expected) => {
    assert.deepEqual(actual, expected);
  });

  it('holds for cycles', () => {
    const a: Record<string, unknown> = { n: 1 };
    a.self = a;
    const b: Record<string, unknown> = { n: 1 };
    b.self = b;
    assert.deepEqual(a, b);
  });

  it.each<[string, unknown, unknown, string]>([
    [
      'a leaf',
      { m: [{ content: 'a' }, { content: 'b' }] },
      { m: [{ content: 'a' }, { content: 'c' }] },
      '$.m[1].content: expected "c", got "b"',
    ],
    ['-0 and 0', { n: -0 }, { n: 0 }, '$.n: expected 0, got -0'],
    ['a key set to undefined and a missing key', { a: 1, b: undefined }, { a: 1 }, '$.b: not expected, got undefined'],
    ['a missing key', { a: 1 }, { a: 1, 'b-c': 2 }, '$["b-c"]: expected 2, but it is missing'],
    ['arrays of other lengths', [1, 2], [1, 2, 3], '$: expected an array of 3, got 2 ([1,2])'],
    [
      'prototypes',
      new Date(0),
      {},
      '$: expected an instance of Object ({}), got an instance of Date (Date(1970-01-01T00:00:00.000Z))',
    ],
    ['a number and a string', 1, '1', '$: expected "1", got 1'],
    ['Errors by message', new Error('a'), new Error('b'), '$.message: expected "b", got "a"'],
    ['Sets', new Set([1, 2]), new Set([1, 3]), '$: the value 3 is missing'],
  ])('fails for %s, naming the first difference', (_, actual, expected, where) => {
    const error = failure(() => assert.deepEqual(actual, expected, 'message 2'));
    expect(error.message).toBe(`message 2: values differ at ${where}`);
    expect(error).toMatchObject({
      actual,
      expected,
      operator: 'deepStrictEqual',
      showDiff: true,
      code: 'ERR_ASSERTION',
    });
  });
});

describe('assert.ok, assert.equal, assert.rejects', () => {
  it('ok and equal: Object.is, with the values in the message', () => {
    assert.ok(1);
    assert.equal(NaN, NaN);
    expect(failure(() => assert.ok(0, 'saved')).message).toBe('saved: expected a truthy value, got 0');
    expect(failure(() => assert.equal(0, -0)).message).toBe('expected -0, got 0');
    expect(failure(() => assert.equal({ a: 1 }, { a: 1 })).message).toBe('expected {"a":1}, got {"a":1}');
  });

  it('rejects: a rejection passes, a resolution or a failed check fails, what the check throws propagates', async () => {
    await assert.rejects(Promise.reject(new Error('no')));
    await assert.rejects(
      () => Promise.reject(new Error('no')),
      (e) => (e as Error).message === 'no',
    );
    await expect(assert.rejects(Promise.resolve(1), 'limit 0 is refused')).rejects.toThrow(
      'limit 0 is refused: expected a rejection, but it resolved',
    );
    await expect(assert.rejects(Promise.reject(new Error('no')), () => false, 'id 3')).rejects.toThrow(
      'id 3: the rejection failed the check: Error: no',
    );
    await expect(
      assert.rejects(Promise.reject(new Error('no')), () => {
        throw new RangeError('from the check');
      }),
    ).rejects.toThrow(RangeError);
  });
});

describe('createTestScheduler without expect', () => {
  it('fails a marble mismatch with an AssertionError naming the first differing frame', () => {
    const error = failure(() =>
      createTestScheduler().run(({ cold, expectObservable }) => {
        expectObservable(cold('-a-b|')).toBe('-a--b|');
      }),
    );
    expect(error.message).toMatch(/^TestScheduler frames: values differ at \$\[1\]\.frame: expected 4, got 3$/);
    expect(error.actual).toEqual(expect.any(Array));
  });
});
