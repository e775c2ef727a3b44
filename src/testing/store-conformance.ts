/**
 * The `Store` conformance suite: the contract of `docs/memory.md` as tests any store can run, under any test runner
 * with `describe` and `it`. Imports no test framework and no `node:` module.
 * @module
 */
import type { EmbedFunction, JsonValue, Namespace, Store, StoreOptions } from '../types/store.js';
import { assert } from './assert.js';

/** A store under test, and how to reach its storage again as another process would. */
export interface StoreFixture {
  /** The store under test. It must be empty. */
  readonly store: Store;
  /** Opens another store on the same storage with the same options, for "survives reopening". */
  reopen?(): Store | Promise<Store>;
  /** Releases the storage after the test. */
  dispose?(): void | Promise<void>;
}

/** Options of {@link storeConformance}. */
export interface StoreConformanceOptions {
  /** The title of the suite (default `Store conformance`). */
  readonly name?: string | undefined;
  readonly describe?: ((name: string, body: () => void) => unknown) | undefined;
  readonly it?: ((name: string, body: () => Promise<void>, timeout?: number) => unknown) | undefined;
  readonly timeoutMs?: number | undefined;
}

/** Makes an empty store with the options given (`embed`, `dimensions`, `now`: the suite's fake clock and embedder). */
export type MakeStore = (options: StoreOptions) => Store | StoreFixture | Promise<Store | StoreFixture>;

const VOCABULARY = ['red', 'green', 'blue', 'apple', 'sky', 'tea', 'coffee'];

/** The suite's embedder: a bag of words over a seven-word vocabulary, every other word in an eighth dimension. */
const bagOfWords: EmbedFunction = (texts) =>
  texts.map((text) => {
    const vector = Array.from({ length: 8 }, () => 0);
    for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
      const at = VOCABULARY.indexOf(word);
      vector[at === -1 ? 7 : at]! += 1;
    }
    return vector;
  });

const HOSTILE: readonly Namespace[] = [
  ['a/b'],
  ['a', 'b'],
  ['a%2Fb'],
  ['%'],
  ['_'],
  ['a', 'b/'],
  ["it's", '"quoted"'],
  ["'; DROP TABLE x; --"],
  ['back\\slash'],
  ['ünïcødé', '用户', '🙂'],
  ['a b', '\t\n'],
  ['a'],
  ['ab'],
];

/**
 * Registers the conformance tests of the `Store` contract for one backend. `make(options)` is called once per test
 * with the options it must pass to the store (a fake clock `now`, and for vector tests `embed` and `dimensions`) and
 * must give an **empty** store.
 *
 * Covered: JSON round trip and copies; replace (createdAt kept, updatedAt moved); delete; hostile namespace segments
 * (`/`, `%`, `_`, quotes, backslashes, unicode, whitespace) round trip, never collide and never reach a sibling
 * prefix; refused namespaces, keys and values (`InvalidInputError`, naming the key, nothing written); pagination with
 * a cursor; TTL expiry in get, list and search; text search and filters; exact cosine ranking with `embed`; every kind
 * of bad embedding (`EmbeddingError` naming the key, nothing written); with `reopen`, items surviving.
 *
 * @example
 * import { describe, it } from 'vitest';
 * import { MemoryStore } from 'cubepi';
 * import { storeConformance } from 'cubepi/testing';
 * storeConformance((options) => new MemoryStore(options), { name: 'MemoryStore', describe, it });
 */
export function storeConformance(make: MakeStore, options: StoreConformanceOptions = {}): void {
  const globals = globalThis as {
    describe?: StoreConformanceOptions['describe'] | undefined;
    it?: StoreConformanceOptions['it'] | undefined;
  };
  const describe = options.describe ?? globals.describe;
  const it = options.it ?? globals.it;
  if (typeof describe !== 'function' || typeof it !== 'function') {
    throw new TypeError('storeConformance needs describe and it: pass them in the options, or enable globals');
  }
  interface Context extends StoreFixture {
    clock: { now: number };
  }
  const test = (
    name: string,
    body: (fixture: Context) => Promise<void>,
    storeOptions: Omit<StoreOptions, 'now'> = {},
  ) => {
    const run = async () => {
      const clock = { now: 1_000_000 };
      const made = await make({ ...storeOptions, now: () => clock.now });
      const fixture: StoreFixture = 'put' in made ? { store: made } : made;
      try {
        await body({ ...fixture, clock });
      } finally {
        await fixture.dispose?.();
      }
    };
    if (options.timeoutMs === undefined) it(name, run);
    else it(name, run, options.timeoutMs);
  };
  const isCode =
    (code: string) =>
    (error: unknown): boolean => {
      assert.equal((error as { code?: unknown }).code, code, `a ${code} error: ${String(error)}`);
      return true;
    };
  const embedding = { embed: bagOfWords, dimensions: 8 };

  describe(options.name ?? 'Store conformance', () => {
    test('get returns the JSON value put (a copy), with its times; absent keys are undefined', async ({
      store,
      clock,
    }) => {
      const value = { text: 'héllo 🙂', n: 1.5, ok: true, none: null, list: [1, 'two', { three: [3] }] };
      await store.put(['users', 'u1'], 'k', value);
      const item = await store.get(['users', 'u1'], 'k');
      assert.deepEqual(item, {
        namespace: ['users', 'u1'],
        key: 'k',
        value,
        createdAt: clock.now,
        updatedAt: clock.now,
      });
      (item.value as { list: unknown[] }).list.push('mutated');
      assert.deepEqual((await store.get(['users', 'u1'], 'k'))?.value, value, 'a returned value is a copy');
      assert.equal(await store.get(['users', 'u1'], 'other'), undefined);
      assert.equal(await store.get(['users', 'u2'], 'k'), undefined);
      for (const scalar of ['text', 0, false, null, [] as JsonValue[]]) {
        await store.put(['scalars'], 'v', scalar);
        assert.deepEqual((await store.get(['scalars'], 'v'))?.value, scalar);
      }
    });

    test('a second put replaces the value: createdAt kept, updatedAt moved; delete removes it', async ({
      store,
      clock,
    }) => {
      await store.put(['ns'], 'k', { v: 1 });
      const created = clock.now;
      clock.now += 500;
      await store.put(['ns'], 'k', { v: 2 });
      assert.deepEqual(await store.get(['ns'], 'k'), {
        namespace: ['ns'],
        key: 'k',
        value: { v: 2 },
        createdAt: created,
        updatedAt: clock.now,
      });
      await store.delete(['ns'], 'k');
      await store.delete(['ns'], 'never-stored');
      assert.equal(await store.get(['ns'], 'k'), undefined);
      assert.deepEqual((await store.list(['ns'])).items, []);
    });

    test('hostile namespace segments round trip, never collide, and a prefix reaches only its own namespaces', async ({
      store,
    }) => {
      for (const [i, namespace] of HOSTILE.entries()) await store.put(namespace, `key-${i}`, { i });
      for (const [i, namespace] of HOSTILE.entries()) {
        const item = await store.get(namespace, `key-${i}`);
        assert.deepEqual(item?.namespace, namespace, `namespace ${JSON.stringify(namespace)} round trips`);
        assert.deepEqual(item?.value, { i });
        const listed = await store.list(namespace);
        const expected = HOSTILE.flatMap((other, j) =>
          other.length >= namespace.length && namespace.every((s, k) => other[k] === s) ? [j] : [],
        );
        assert.deepEqual(
          listed.items.map((it) => (it.value as { i: number }).i).sort((a, b) => a - b),
          expected,
          `list(${JSON.stringify(namespace)}) holds its own namespace and those below it only`,
        );
      }
      assert.equal((await store.list([])).items.length, HOSTILE.length, 'the empty prefix lists everything');
      const under = await store.search(['a']);
      assert.deepEqual(
        under.map((it) => it.key).sort(),
        ['key-1', 'key-11', 'key-5'],
        'search(["a"]) skips "ab", "a/b"',
      );
    });

    test('refuses bad namespaces and keys with InvalidInputError and writes nothing', async ({ store }) => {
      const bad: unknown[] = [
        [],
        [''],
        ['a', ''],
        ['a\0b'],
        ['\uD800'],
        [1],
        'users',
        Array.from({ length: 17 }, () => 'x'),
      ];
      for (const namespace of bad) {
        await assert.rejects(
          store.put(namespace as Namespace, 'k', 1),
          isCode('invalid_input'),
          JSON.stringify(namespace),
        );
        await assert.rejects(store.get(namespace as Namespace, 'k'), isCode('invalid_input'));
      }
      for (const key of ['', 'a\0b', '\uDC00x', 7]) {
        await assert.rejects(store.put(['ns'], key as string, 1), isCode('invalid_input'), JSON.stringify(key));
      }
      await assert.rejects(store.list(['ok', '']), isCode('invalid_input'));
      await assert.rejects(store.put(['ns'], 'k', 1, { ttl: -1 }), isCode('invalid_input'));
      await assert.rejects(store.search(['ns'], { limit: 0 }), isCode('invalid_input'));
      await assert.rejects(store.search(['ns'], { filter: { a: { nested: 1 } } as never }), isCode('invalid_input'));
      assert.deepEqual((await store.list([])).items, []);
    });

    test('refuses a value that is not JSON with InvalidInputError naming the key', async ({ store }) => {
      const cyclic: Record<string, unknown> = {};
      cyclic['self'] = cyclic;
      const bad: unknown[] = [
        undefined,
        Number.NaN,
        Infinity,
        () => 1,
        10n,
        new Date(0),
        new Map(),
        cyclic,
        { a: [undefined] },
        Symbol('s'),
      ];
      for (const [i, value] of bad.entries()) {
        await assert.rejects(
          store.put(['ns'], `bad-${i}`, value as JsonValue),
          (error) => isCode('invalid_input')(error) && (error as Error).message.includes(`"bad-${i}"`),
          `value ${i}`,
        );
      }
      assert.deepEqual((await store.list(['ns'])).items, []);
    });

    test('list pages by namespace then key with a cursor, each item once; a foreign cursor is refused', async ({
      store,
    }) => {
      for (let i = 0; i < 25; i++) await store.put(['p', `n${i % 3}`], `k${String(i).padStart(2, '0')}`, i);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.list(['p'], { limit: 10, ...(cursor === undefined ? {} : { cursor }) });
        seen.push(...page.items.map((it) => `${it.namespace[1]}/${it.key}`));
        cursor = page.cursor;
        pages++;
      } while (cursor !== undefined && pages < 10);
      assert.equal(pages, 3);
      assert.deepEqual(seen, [...seen].sort(), 'ordered by namespace, then key');
      assert.equal(new Set(seen).size, 25, 'every item exactly once');
      await assert.rejects(store.list(['p'], { cursor: 'not a cursor' }), isCode('invalid_input'));
    });

    test('an expired item is absent from get, list and search; a put revives the key', async ({ store, clock }) => {
      await store.put(['t'], 'short', { text: 'tea' }, { ttl: 1000 });
      await store.put(['t'], 'long', { text: 'tea' });
      assert.equal((await store.get(['t'], 'short'))?.expiresAt, clock.now + 1000);
      clock.now += 999;
      assert.equal((await store.search(['t'], { query: 'tea' })).length, 2);
      clock.now += 1;
      assert.equal(await store.get(['t'], 'short'), undefined);
      assert.deepEqual(
        (await store.list(['t'])).items.map((it) => it.key),
        ['long'],
      );
      assert.deepEqual(
        (await store.search(['t'], { query: 'tea' })).map((it) => it.key),
        ['long'],
      );
      await store.put(['t'], 'other', 1);
      await store.put(['t'], 'short', { text: 'again' });
      assert.deepEqual((await store.get(['t'], 'short'))?.createdAt, clock.now, 'an expired key comes back as new');
    });

    test('without embed, query keeps items containing every term (case-insensitive), newest first; filter is equality', async ({
      store,
      clock,
    }) => {
      await store.put(['s'], 'a', { text: 'Likes GREEN tea', kind: 'pref', n: 1, on: true });
      clock.now += 1;
      await store.put(['s'], 'b', { text: 'likes black coffee', kind: 'pref', n: '1', on: false });
      clock.now += 1;
      await store.put(['s'], 'c', { text: 'green tea is fine', kind: 'fact', n: null, tags: ['pref'] });
      clock.now += 1;
      await store.put(['s'], 'hidden', { text: 'green tea', kind: 'pref' }, { index: false });
      clock.now += 1;
      await store.put(['s'], 'fields', { text: 'nothing', note: 'green tea' }, { index: ['note'] });
      const keys = async (o: Parameters<Store['search']>[1]) => (await store.search(['s'], o)).map((it) => it.key);
      assert.deepEqual(await keys({ query: 'tea GREEN' }), ['fields', 'c', 'a']);
      assert.deepEqual(await keys({ query: 'green', limit: 2 }), ['fields', 'c']);
      assert.deepEqual(await keys({ query: 'nothing' }), [], 'only the indexed fields are searched');
      assert.deepEqual(await keys({ filter: { kind: 'pref' } }), ['hidden', 'b', 'a']);
      assert.deepEqual(await keys({ filter: { n: 1 } }), ['a'], 'a number is not its string');
      assert.deepEqual(await keys({ filter: { n: null } }), ['c'], 'null matches null, not a missing field');
      assert.deepEqual(await keys({ filter: { on: false } }), ['b']);
      assert.deepEqual(await keys({ filter: { tags: 'pref' } }), [], 'equality, not containment in an array');
      assert.deepEqual(await keys({ query: 'tea', filter: { kind: 'pref' } }), ['a']);
    });

    test(
      'with embed, query ranks indexed items by exact cosine similarity, within the prefix and the filter',
      async ({ store }) => {
        await store.put(['u', 'a'], 'red-apple', { text: 'red apple', kind: 'fruit' }, { index: ['text'] });
        await store.put(['u', 'a'], 'green-apple', { text: 'green apple', kind: 'fruit' }, { index: ['text'] });
        await store.put(['u', 'a'], 'blue-sky', { text: 'blue sky', kind: 'view' }, { index: ['text'] });
        await store.put(['u', 'a'], 'unindexed', { text: 'red apple' }, { index: false });
        await store.put(['u', 'b'], 'other-user', { text: 'red apple' });
        const hits = await store.search(['u', 'a'], { query: 'apple red' });
        assert.deepEqual(
          hits.map((h) => h.key),
          ['red-apple', 'green-apple', 'blue-sky'],
        );
        const close = (a: number | undefined, b: number) =>
          assert.ok(a !== undefined && Math.abs(a - b) < 1e-5, `${a} ≈ ${b}`);
        close(hits[0]!.score, 1);
        close(hits[1]!.score, 0.5);
        close(hits[2]!.score, 0);
        assert.deepEqual(
          (await store.search(['u', 'a'], { query: 'apple', filter: { kind: 'view' } })).map((h) => h.key),
          ['blue-sky'],
        );
        assert.deepEqual(
          (await store.search(['u', 'a'], { query: 'red', limit: 1 })).map((h) => h.key),
          ['red-apple'],
        );
        await store.delete(['u', 'a'], 'red-apple');
        assert.deepEqual(
          (await store.search(['u', 'a'], { query: 'red apple', limit: 1 })).map((h) => h.key),
          ['green-apple'],
        );
      },
      embedding,
    );

    test('a bad embedding is an EmbeddingError naming the key; nothing is written', async () => {
      const cases: [string, EmbedFunction][] = [
        ['wrong dimension', (texts) => texts.map(() => [1, 2, 3])],
        ['NaN', (texts) => texts.map(() => [1, Number.NaN, 0, 0, 0, 0, 0, 0])],
        ['Infinity', (texts) => texts.map(() => [Infinity, 0, 0, 0, 0, 0, 0, 0])],
        ['zero vector', (texts) => texts.map(() => [0, 0, 0, 0, 0, 0, 0, 0])],
        ['wrong count', () => []],
        ['not a list', () => 'nope' as never],
        [
          'throws',
          () => {
            throw new Error('model down');
          },
        ],
        ['rejects', () => Promise.reject(new Error('model down'))],
      ];
      for (const [label, embed] of cases) {
        const made = await make({ embed, dimensions: 8 });
        const fixture: StoreFixture = 'put' in made ? { store: made } : made;
        try {
          await assert.rejects(
            fixture.store.put(['e'], `key-${label}`, { text: 'red' }),
            (error) => {
              assert.equal((error as { code?: unknown }).code, 'embedding_error', label);
              assert.deepEqual((error as { keys?: unknown }).keys, [`key-${label}`], label);
              assert.ok((error as Error).message.includes(`"key-${label}"`), (error as Error).message);
              return true;
            },
            label,
          );
          assert.equal(await fixture.store.get(['e'], `key-${label}`), undefined, `${label}: nothing written`);
          await fixture.store.put(['e'], 'plain', { text: 'red' }, { index: false });
          await assert.rejects(fixture.store.search(['e'], { query: 'red' }), isCode('embedding_error'), label);
        } finally {
          await fixture.dispose?.();
        }
      }
    });

    test(
      'items survive reopening the storage',
      async (fixture) => {
        const { store } = fixture;
        await store.put(['keep', 'me'], 'k', { text: 'red apple' });
        if (fixture.reopen === undefined) return;
        const again = await fixture.reopen();
        assert.deepEqual((await again.get(['keep', 'me'], 'k'))?.value, { text: 'red apple' });
        assert.deepEqual(
          (await again.search(['keep'], { query: 'apple' })).map((h) => h.key),
          ['k'],
        );
      },
      embedding,
    );
  });
}
