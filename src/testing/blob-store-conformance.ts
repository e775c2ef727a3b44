/**
 * The `BlobStore` conformance suite: the contract of `docs/files-storage.md` as tests any store can run, under any test
 * runner with `describe` and `it`. Like the checkpointers' suite, it imports no test framework and no `node:` module.
 * @module
 */
import type { BlobStore } from '../types/blob.js';
import type { BlobRef } from '../types/content.js';
import { assert } from './assert.js';

/** A store under test: an empty store, and how to reach it again as another process would. */
export interface BlobStoreFixture {
  /** The store under test. It must be empty. */
  readonly store: BlobStore;
  /** Opens another store on the same storage (the same directory, file or database), for "survives reopening". */
  reopen?(): BlobStore | Promise<BlobStore>;
  /** Releases the storage after the test (close the database, delete the directory). */
  dispose?(): void | Promise<void>;
}

/** Options of {@link blobStoreConformance}. */
export interface BlobStoreConformanceOptions {
  /** The title of the suite (default `BlobStore conformance`). */
  readonly name?: string | undefined;
  /** The runner's `describe` (default: the global one). */
  readonly describe?: ((name: string, body: () => void) => unknown) | undefined;
  /** The runner's `it` (default: the global one). */
  readonly it?: ((name: string, body: () => Promise<void>, timeout?: number) => unknown) | undefined;
  /** A per-test timeout handed to `it` (vitest and jest take it). */
  readonly timeoutMs?: number | undefined;
}

type Make = () => BlobStore | BlobStoreFixture | Promise<BlobStore | BlobStoreFixture>;

const encoder = new TextEncoder();
// SHA-256 of "abc" (FIPS 180-2, appendix B.1).
const ABC = 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
// SHA-256 of the empty string.
const EMPTY = 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/**
 * Registers the conformance tests of the `BlobStore` contract for one store. `make` is called once per test and must
 * give an **empty** store, as is or as a {@link BlobStoreFixture}.
 *
 * Covered: the content address (`sha256:<hex>`, known vectors, the empty blob); bytes back identical (every byte
 * value, a 2 MiB blob); a second `put` of the same bytes (the same address, nothing more stored); concurrent puts of
 * the same bytes; `get` of an address never stored and `delete` of one (undefined, a no-op); `delete` then `get`,
 * then `put` again; copies, not aliases, both ways; a malformed address refused with a typed error (a `code`); and,
 * with `reopen`, blobs surviving a reopening.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { blobStoreConformance } from 'cubepi/testing';
 * blobStoreConformance(() => new MyBlobStore(freshBucket()), { name: 'MyBlobStore', describe, it });
 */
export function blobStoreConformance(make: Make, options: BlobStoreConformanceOptions = {}): void {
  const globals = globalThis as {
    describe?: BlobStoreConformanceOptions['describe'] | undefined;
    it?: BlobStoreConformanceOptions['it'] | undefined;
  };
  const describe = options.describe ?? globals.describe;
  const it = options.it ?? globals.it;
  if (typeof describe !== 'function' || typeof it !== 'function') {
    throw new TypeError('blobStoreConformance needs describe and it: pass them in the options, or enable globals');
  }
  const test = (name: string, body: (fixture: BlobStoreFixture) => Promise<void>) => {
    const run = async () => {
      const made = await make();
      const fixture: BlobStoreFixture = 'store' in made ? made : { store: made };
      try {
        await body(fixture);
      } finally {
        await fixture.dispose?.();
      }
    };
    if (options.timeoutMs === undefined) it(name, run);
    else it(name, run, options.timeoutMs);
  };

  describe(options.name ?? 'BlobStore conformance', () => {
    test('put resolves the content address: sha256: and the SHA-256 of the bytes in lowercase hex', async ({
      store,
    }) => {
      assert.equal(await store.put(encoder.encode('abc')), ABC);
      assert.equal(await store.put(new Uint8Array(0)), EMPTY);
      assert.ok(sameBytes(await store.get(EMPTY), new Uint8Array(0)), 'the empty blob comes back empty');
    });

    test('get returns the bytes put, identical: every byte value, and a 2 MiB blob', async ({ store }) => {
      const all = Uint8Array.from({ length: 256 }, (_, i) => i);
      const big = pattern(2 * 1024 * 1024);
      const [a, b] = [await store.put(all), await store.put(big)];
      assert.ok(sameBytes(await store.get(a), all), 'every byte value comes back');
      assert.ok(sameBytes(await store.get(b), big), 'the 2 MiB blob comes back byte for byte');
    });

    test('a second put of the same bytes (also concurrent ones) resolves the same address and keeps one blob', async ({
      store,
    }) => {
      const bytes = pattern(10_000);
      const first = await store.put(bytes);
      const again = await Promise.all([1, 2, 3, 4].map(() => store.put(bytes.slice())));
      assert.deepEqual(again, [first, first, first, first]);
      await store.delete(first);
      assert.equal(await store.get(first), undefined, 'one delete removes it: there was one blob');
    });

    test('get of an address never stored resolves undefined; delete of one is a no-op', async ({ store }) => {
      const never: BlobRef = `sha256:${'0'.repeat(64)}`;
      assert.equal(await store.get(never), undefined);
      await store.delete(never);
      assert.equal(await store.get(never), undefined);
    });

    test('delete removes the blob, and only it; a later put stores it again', async ({ store }) => {
      const [a, b] = [await store.put(encoder.encode('first')), await store.put(encoder.encode('second'))];
      await store.delete(a);
      assert.equal(await store.get(a), undefined);
      assert.ok(sameBytes(await store.get(b), encoder.encode('second')), 'the other blob stays');
      assert.equal(await store.put(encoder.encode('first')), a);
      assert.ok(sameBytes(await store.get(a), encoder.encode('first')), 'stored again');
    });

    test('copies, not aliases: changing the bytes given or returned never changes the store', async ({ store }) => {
      const bytes = encoder.encode('original');
      const ref = await store.put(bytes);
      bytes.fill(0);
      const got = await store.get(ref);
      assert.ok(sameBytes(got, encoder.encode('original')), 'changing the input after put changed nothing');
      got!.fill(0);
      assert.ok(sameBytes(await store.get(ref), encoder.encode('original')), 'changing a result changed nothing');
    });

    test('a malformed address is refused with a typed error (a code), by get and by delete', async ({ store }) => {
      const typed = (error: unknown) => typeof (error as { code?: unknown }).code === 'string';
      await assert.rejects(() => store.get('sha256:XYZ'), typed, 'get of a malformed address');
      await assert.rejects(() => store.delete('../../etc/passwd' as BlobRef), typed, 'delete of a path');
    });

    test('blobs survive reopening the store (when the fixture can reopen it)', async (fixture) => {
      if (fixture.reopen === undefined) return;
      const bytes = pattern(50_000);
      const ref = await fixture.store.put(bytes);
      const reopened = await fixture.reopen();
      assert.ok(sameBytes(await reopened.get(ref), bytes), 'the reopened store has the bytes');
    });
  });
}

function sameBytes(actual: Uint8Array | undefined, expected: Uint8Array): boolean {
  if (!(actual instanceof Uint8Array) || actual.length !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (actual[i] !== expected[i]) return false;
  return true;
}

/** `length` bytes that are not all alike (a linear congruential sequence). */
function pattern(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = 12345;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}
