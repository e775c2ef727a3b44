/**
 * The `Store` contract: JSON items under namespaces, kept across threads (a user's facts, preferences, decisions),
 * with optional vector search. Backends: `MemoryStore` (`cubepi`), `SQLiteStore` (`cubepi/checkpoint/sqlite`),
 * `PostgresStore` (`cubepi/checkpoint/postgres`). See `docs/memory.md`.
 * @module
 */

/**
 * A namespace: a non-empty tuple of non-empty strings (`['users', userId, 'facts']`). Any characters but NUL and lone
 * surrogates (`/`, `%`, quotes, unicode round trip and never collide); at most 16 segments of 1,024 characters.
 */
export type Namespace = readonly string[];

/** A JSON value: what a store keeps (no `undefined`, functions, `NaN`, class instances or cycles). */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * Embeds texts: one vector per text, in order, each of the store's `dimensions`, finite and not all zeros. May be
 * asynchronous. Anything else is an `EmbeddingError` naming the items.
 */
export type EmbedFunction = (
  texts: readonly string[],
) => readonly ArrayLike<number>[] | Promise<readonly ArrayLike<number>[]>;

/** The options every backend takes: how items are embedded and what clock TTLs run on. */
export interface StoreOptions {
  /** Turns on vector search: `search({ query })` ranks by cosine similarity of the query's embedding. */
  readonly embed?: EmbedFunction | undefined;
  /** The length of every vector `embed` returns; required with `embed`. */
  readonly dimensions?: number | undefined;
  /** The fields whose text is indexed when a `put` does not say (`index`); default: every string in the value. */
  readonly indexFields?: readonly string[] | undefined;
  /** The clock of TTLs (ms since the epoch); default `Date.now`. Tests pass a fake one. */
  readonly now?: (() => number) | undefined;
}

/** Options of {@link Store.put}. */
export interface PutOptions {
  /** Milliseconds the item lives; after that `get`, `list` and `search` no longer see it. Default: forever. */
  readonly ttl?: number | undefined;
  /**
   * What is indexed for `search({ query })`: `false` nothing (the item is found by `filter` only); a list of top-level
   * fields whose values are joined (strings as they are, other values as JSON); default the store's `indexFields`.
   */
  readonly index?: false | readonly string[] | undefined;
}

/** A stored item. */
export interface StoreItem {
  readonly namespace: Namespace;
  readonly key: string;
  readonly value: JsonValue;
  /** When it was first put, and last put (ms since the epoch, the store's clock). */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When its TTL ends, if it has one. */
  readonly expiresAt?: number | undefined;
}

/** A search hit: an item and, for a vector search, its cosine similarity to the query (in [-1, 1]). */
export interface SearchItem extends StoreItem {
  readonly score?: number | undefined;
}

/** Options of {@link Store.list}. */
export interface ListOptions {
  /** At most this many items (1 to 1,000); default 100. */
  readonly limit?: number | undefined;
  /** Where the previous page stopped (its `cursor`). */
  readonly cursor?: string | undefined;
}

/** A page of {@link Store.list}: items ordered by namespace then key; `cursor` when more may follow. */
export interface ListPage {
  readonly items: readonly StoreItem[];
  readonly cursor?: string | undefined;
}

/** Options of {@link Store.search}. */
export interface SearchOptions {
  /**
   * With `embed`: ranks indexed items by cosine similarity to the query's embedding (exact). Without: keeps the
   * indexed items whose text contains every whitespace-separated term of the query (case-insensitive substring),
   * newest first. Absent: every item, newest first.
   */
  readonly query?: string | undefined;
  /** Equality on top-level fields of the value (scalar values only: string, finite number, boolean, null). */
  readonly filter?: Readonly<Record<string, string | number | boolean | null>> | undefined;
  /** At most this many hits (1 to 1,000); default 10. */
  readonly limit?: number | undefined;
}

/**
 * Items under namespaces, shared by every thread that reaches the store: memory across threads. All methods are
 * asynchronous; none holds anything open between calls.
 *
 * - `put` stores (or replaces) `value` under `(namespace, key)`; `get` reads it back (a copy), `undefined` if absent
 *   or expired; `delete` removes it (absent is fine).
 * - `list(prefix)` pages through the items of every namespace starting with `prefix` (segment by segment:
 *   `['users', 'a']` does not reach `['users', 'ab']`).
 * - `search(prefix, options)` finds items of those namespaces by query and filter.
 * - An expired item is absent everywhere; backends delete expired rows lazily (on later writes to the namespace).
 *
 * Errors: a bad namespace, key, value (not JSON; the message names the key) or option is an `InvalidInputError`,
 * thrown before anything is written; a bad embedding an `EmbeddingError`; a failing backend a `StoreError`.
 */
export interface Store {
  put(namespace: Namespace, key: string, value: JsonValue, options?: PutOptions): Promise<void>;
  get(namespace: Namespace, key: string): Promise<StoreItem | undefined>;
  delete(namespace: Namespace, key: string): Promise<void>;
  list(namespacePrefix: Namespace, options?: ListOptions): Promise<ListPage>;
  search(namespacePrefix: Namespace, options?: SearchOptions): Promise<readonly SearchItem[]>;
}

/**
 * The key of a fact stored without one (the memory middleware's extraction, `rememberTool`): `fact-` and the 64-bit
 * FNV-1a, in hex, of its text trimmed and lower-cased, so the same fact is stored once whichever path stores it.
 */
export function factKey(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text.trim().toLowerCase())) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return `fact-${hash.toString(16).padStart(16, '0')}`;
}
