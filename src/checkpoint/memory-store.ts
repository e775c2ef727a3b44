/**
 * A `Store` in the process's memory.
 * @module
 */
import type {
  JsonValue,
  ListOptions,
  ListPage,
  Namespace,
  PutOptions,
  SearchItem,
  SearchOptions,
  Store,
  StoreItem,
  StoreOptions,
} from '../types/store.js';
import {
  checkKey,
  checkListOptions,
  checkNamespace,
  checkPutOptions,
  checkSearchOptions,
  checkStoreOptions,
  cursorOf,
  decodeNamespace,
  dot,
  embedTexts,
  encodeNamespace,
  indexTextOf,
  jsonOf,
  matchesFilter,
  matchesTerms,
  TopK,
  type CheckedStoreOptions,
} from './store-items.js';

interface Entry {
  readonly ns: string;
  readonly key: string;
  readonly json: string;
  /** Lowercased indexed text; `null` when not indexed. */
  readonly text: string | null;
  readonly vector: Float32Array | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly expiresAt: number | null;
}

/** Options of {@link MemoryStore}. */
export type MemoryStoreOptions = StoreOptions;

/**
 * A `Store` in memory: for tests and single-process programs (everything is lost with the process). Values are kept
 * as JSON text, so what `get` returns is always a fresh copy. Vector search (with `embed`) is exact: every indexed
 * item of the namespaces is scored. Browser-safe.
 *
 * @example
 * const store = new MemoryStore();
 * await store.put(['users', 'u1', 'facts'], 'diet', { text: 'vegetarian' });
 * (await store.search(['users', 'u1'], { query: 'vegetarian' }))[0]?.key; // 'diet'
 */
export class MemoryStore implements Store {
  readonly #options: CheckedStoreOptions;
  /** Encoded namespace → key → entry. */
  readonly #namespaces = new Map<string, Map<string, Entry>>();

  /** Throws `ConfigurationError` for bad options (`embed` without `dimensions`). */
  constructor(options: MemoryStoreOptions = {}) {
    this.#options = checkStoreOptions(options, 'MemoryStore');
  }

  /** {@inheritDoc Store.put} */
  async put(namespace: Namespace, key: string, value: JsonValue, options?: PutOptions): Promise<void> {
    checkNamespace(namespace);
    checkKey(key);
    const json = jsonOf(key, value);
    const { ttl, index } = checkPutOptions(options);
    const text = index === false ? null : indexTextOf(value, index ?? this.#options.indexFields);
    const { embed, dimensions } = this.#options;
    const vector =
      text === null || embed === undefined
        ? null
        : (await embedTexts(embed, dimensions!, [text], [key], namespace))[0]!;
    const now = this.#options.now();
    const ns = encodeNamespace(namespace);
    let items = this.#namespaces.get(ns);
    if (items === undefined) this.#namespaces.set(ns, (items = new Map<string, Entry>()));
    for (const [k, entry] of items) if (entry.expiresAt !== null && entry.expiresAt <= now) items.delete(k);
    const previous = items.get(key);
    items.set(key, {
      ns,
      key,
      json,
      text: text?.toLowerCase() ?? null,
      vector,
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
      expiresAt: ttl === undefined ? null : now + ttl,
    });
  }

  /** {@inheritDoc Store.get} */
  async get(namespace: Namespace, key: string): Promise<StoreItem | undefined> {
    checkNamespace(namespace);
    checkKey(key);
    const entry = this.#namespaces.get(encodeNamespace(namespace))?.get(key);
    return entry === undefined || this.#expired(entry) ? undefined : itemOf(entry);
  }

  /** {@inheritDoc Store.delete} */
  async delete(namespace: Namespace, key: string): Promise<void> {
    checkNamespace(namespace);
    checkKey(key);
    this.#namespaces.get(encodeNamespace(namespace))?.delete(key);
  }

  /** {@inheritDoc Store.list} */
  async list(namespacePrefix: Namespace, options?: ListOptions): Promise<ListPage> {
    checkNamespace(namespacePrefix, true);
    const { limit, after } = checkListOptions(options);
    const entries = this.#entries(encodeNamespace(namespacePrefix)).filter(
      (e) => after === undefined || e.ns > after.ns || (e.ns === after.ns && e.key > after.key),
    );
    entries.sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const page = entries.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(itemOf),
      ...(entries.length > limit && last !== undefined ? { cursor: cursorOf(last.ns, last.key) } : {}),
    };
  }

  /** {@inheritDoc Store.search} */
  async search(namespacePrefix: Namespace, options?: SearchOptions): Promise<readonly SearchItem[]> {
    checkNamespace(namespacePrefix, true);
    const search = checkSearchOptions(options);
    const { embed, dimensions } = this.#options;
    const ranked = embed !== undefined && search.terms !== undefined && search.terms.length > 0;
    const query = ranked ? (await embedTexts(embed, dimensions!, [search.query!], [], namespacePrefix))[0]! : undefined;
    const top = new TopK<SearchItem>(search.limit);
    for (const entry of this.#entries(encodeNamespace(namespacePrefix))) {
      if (search.terms !== undefined && search.terms.length > 0) {
        if (query !== undefined ? entry.vector === null : !matchesTerms(entry.text, search.terms)) continue;
      }
      const item = itemOf(entry);
      if (!matchesFilter(item.value, search.filter)) continue;
      if (query !== undefined) {
        const score = dot(query, entry.vector!);
        top.offer(score, entry.updatedAt, { ...item, score });
      } else top.offer(entry.updatedAt, entry.updatedAt, item);
    }
    return top.items;
  }

  #entries(prefix: string): Entry[] {
    const found: Entry[] = [];
    for (const [ns, items] of this.#namespaces) {
      if (!ns.startsWith(prefix)) continue;
      for (const entry of items.values()) if (!this.#expired(entry)) found.push(entry);
    }
    return found;
  }

  #expired(entry: Entry): boolean {
    return entry.expiresAt !== null && entry.expiresAt <= this.#options.now();
  }
}

function itemOf(entry: Entry): StoreItem {
  return {
    namespace: decodeNamespace(entry.ns),
    key: entry.key,
    value: JSON.parse(entry.json) as JsonValue,
    createdAt: entry.createdAt,
    updatedAt: entry.updatedAt,
    ...(entry.expiresAt === null ? {} : { expiresAt: entry.expiresAt }),
  };
}
