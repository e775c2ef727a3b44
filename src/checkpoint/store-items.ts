/**
 * What every store backend checks and computes the same way: namespaces and their encoding, keys, JSON values,
 * indexed text, embeddings, filters, cursors and the ranking of hits.
 * @module
 */
import { ConfigurationError, EmbeddingError, InvalidInputError } from '../types/errors.js';
import type {
  EmbedFunction,
  JsonValue,
  ListOptions,
  Namespace,
  PutOptions,
  SearchOptions,
  StoreOptions,
} from '../types/store.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_SEGMENTS = 16;
const MAX_SEGMENT = 1024;
const MAX_DEPTH = 64;

/** The store options, checked once at construction. */
export interface CheckedStoreOptions {
  readonly embed: EmbedFunction | undefined;
  readonly dimensions: number | undefined;
  readonly indexFields: readonly string[] | undefined;
  readonly now: () => number;
}

export function checkStoreOptions(options: StoreOptions, store: string): CheckedStoreOptions {
  const { embed, dimensions, indexFields, now } = options;
  if (embed !== undefined && typeof embed !== 'function')
    throw new ConfigurationError(`${store}: embed must be a function`);
  if (embed !== undefined && (!Number.isInteger(dimensions) || dimensions! < 1 || dimensions! > 65_536)) {
    throw new ConfigurationError(
      `${store}: embed needs dimensions, an integer from 1 to 65536, got ${String(dimensions)}`,
    );
  }
  if (indexFields !== undefined && (!Array.isArray(indexFields) || !indexFields.every((f) => typeof f === 'string'))) {
    throw new ConfigurationError(`${store}: indexFields must be a list of field names`);
  }
  if (now !== undefined && typeof now !== 'function') throw new ConfigurationError(`${store}: now must be a function`);
  return { embed, dimensions: embed === undefined ? undefined : dimensions, indexFields, now: now ?? Date.now };
}

function checkSegment(segment: unknown, what: string): void {
  if (typeof segment !== 'string' || segment === '')
    throw new InvalidInputError(`${what}: segments must be non-empty strings`);
  if (segment.length > MAX_SEGMENT)
    throw new InvalidInputError(`${what}: a segment is longer than ${MAX_SEGMENT} characters`);
  if (segment.includes('\0')) throw new InvalidInputError(`${what}: a segment contains NUL`);
  if (LONE_SURROGATE.test(segment)) throw new InvalidInputError(`${what}: a segment contains a lone surrogate`);
}

/** Checks a namespace (`prefix`: may be empty, meaning every namespace). */
export function checkNamespace(namespace: unknown, prefix = false): Namespace {
  const what = prefix ? 'namespace prefix' : 'namespace';
  if (!Array.isArray(namespace)) throw new InvalidInputError(`${what} must be an array of strings`);
  if (!prefix && namespace.length === 0) throw new InvalidInputError(`${what} must have at least one segment`);
  if (namespace.length > MAX_SEGMENTS) throw new InvalidInputError(`${what} has more than ${MAX_SEGMENTS} segments`);
  for (const segment of namespace) checkSegment(segment, what);
  return namespace as Namespace;
}

/**
 * A namespace as one string whose prefixes are exactly the encodings of its prefixes: each segment URI-encoded (so it
 * holds no `/`, ASCII only) and followed by `/`. Byte order of encodings is a total order; `ns >= p AND ns < upper(p)`
 * selects a prefix.
 */
export function encodeNamespace(namespace: Namespace): string {
  let text = '';
  for (const segment of namespace) text += encodeURIComponent(segment) + '/';
  return text;
}

/** The exclusive upper bound of the encodings starting with `encoded` (`/` is 0x2F, `0` is 0x30). */
export function prefixUpperBound(encoded: string): string {
  return encoded === '' ? '\u007f' : encoded.slice(0, -1) + '0';
}

export function decodeNamespace(encoded: string): Namespace {
  return encoded.slice(0, -1).split('/').map(decodeURIComponent);
}

export function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key === '') throw new InvalidInputError('key must be a non-empty string');
  if (key.length > MAX_SEGMENT) throw new InvalidInputError(`key is longer than ${MAX_SEGMENT} characters`);
  if (key.includes('\0')) throw new InvalidInputError('key contains NUL');
  if (LONE_SURROGATE.test(key)) throw new InvalidInputError('key contains a lone surrogate');
  return key;
}

/** The JSON text of `value`, or an `InvalidInputError` naming the key and where the value stops being JSON. */
export function jsonOf(key: string, value: unknown): string {
  const seen = new Set<object>();
  const visit = (v: unknown, path: string, depth: number): void => {
    const fail = (why: string): never => {
      throw new InvalidInputError(`value of key ${JSON.stringify(key)} is not JSON: ${path} ${why}`);
    };
    if (v === null || typeof v === 'boolean') return;
    if (typeof v === 'string') {
      if (v.includes('\0') || LONE_SURROGATE.test(v)) fail('is a string with NUL or a lone surrogate');
      return;
    }
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) fail(`is ${String(v)}`);
      return;
    }
    if (typeof v !== 'object') fail(`is a ${typeof v}`);
    if (depth > MAX_DEPTH) fail(`is nested deeper than ${MAX_DEPTH}`);
    const object = v as object;
    if (seen.has(object)) fail('is a cycle');
    seen.add(object);
    if (Array.isArray(object)) object.forEach((item, i) => visit(item, `${path}[${i}]`, depth + 1));
    else {
      const proto = Object.getPrototypeOf(object) as unknown;
      if (proto !== Object.prototype && proto !== null) fail(`is a ${object.constructor?.name ?? 'class instance'}`);
      for (const [field, item] of Object.entries(object)) {
        if (field.includes('\0') || LONE_SURROGATE.test(field)) fail('has a field name with NUL or a lone surrogate');
        visit(item, `${path}.${field}`, depth + 1);
      }
    }
    seen.delete(object);
  };
  visit(value, 'value', 0);
  return JSON.stringify(value);
}

export function checkPutOptions(options: PutOptions | undefined): {
  ttl: number | undefined;
  index: PutOptions['index'];
} {
  if (options === undefined) return { ttl: undefined, index: undefined };
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('put options must be an object');
  const { ttl, index } = options;
  if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0)) {
    throw new InvalidInputError(`ttl must be a positive number of milliseconds, got ${String(ttl)}`);
  }
  if (index !== undefined && index !== false && (!Array.isArray(index) || !index.every((f) => typeof f === 'string'))) {
    throw new InvalidInputError('index must be false or a list of field names');
  }
  return { ttl, index };
}

function checkLimit(limit: unknown, fallback: number): number {
  if (limit === undefined) return fallback;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new InvalidInputError(
      `limit must be an integer from 1 to 1000, got ${JSON.stringify(limit) ?? typeof limit}`,
    );
  }
  return limit;
}

/** A cursor: where a page stopped (the encoded namespace and key of its last item). */
export interface ListPosition {
  readonly ns: string;
  readonly key: string;
}

export function checkListOptions(options: ListOptions | undefined): { limit: number; after: ListPosition | undefined } {
  const limit = checkLimit(options?.limit, 100);
  const cursor = options?.cursor;
  if (cursor === undefined) return { limit, after: undefined };
  let after: unknown;
  try {
    after = typeof cursor === 'string' ? JSON.parse(cursor) : undefined;
  } catch {
    after = undefined;
  }
  if (!Array.isArray(after) || after.length !== 2 || typeof after[0] !== 'string' || typeof after[1] !== 'string') {
    throw new InvalidInputError('cursor is not one this store returned');
  }
  return { limit, after: { ns: after[0], key: after[1] } };
}

export function cursorOf(ns: string, key: string): string {
  return JSON.stringify([ns, key]);
}

export interface CheckedSearch {
  readonly terms: readonly string[] | undefined;
  readonly query: string | undefined;
  readonly filter: readonly (readonly [string, string | number | boolean | null])[];
  readonly limit: number;
}

export function checkSearchOptions(options: SearchOptions | undefined): CheckedSearch {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new InvalidInputError('search options must be an object');
  }
  const limit = checkLimit(options?.limit, 10);
  const query = options?.query;
  if (query !== undefined && typeof query !== 'string') throw new InvalidInputError('query must be a string');
  const filter = options?.filter ?? {};
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    throw new InvalidInputError('filter must be an object of field values');
  }
  const entries = Object.entries(filter);
  for (const [field, value] of entries) {
    const scalar =
      value === null ||
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value));
    if (!scalar) throw new InvalidInputError(`filter.${field} must be a string, finite number, boolean or null`);
  }
  const terms =
    query === undefined
      ? undefined
      : query
          .toLowerCase()
          .split(/\s+/)
          .filter((t) => t !== '');
  return { terms, query, filter: entries, limit };
}

/** Equality of top-level fields. */
export function matchesFilter(value: JsonValue, filter: CheckedSearch['filter']): boolean {
  if (filter.length === 0) return true;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const record = value as Readonly<Record<string, JsonValue>>;
  return filter.every(([field, expected]) => Object.hasOwn(record, field) && record[field] === expected);
}

/** Every term occurs in the (lowercased) text. */
export function matchesTerms(text: string | null | undefined, terms: readonly string[]): boolean {
  if (text === null || text === undefined) return false;
  return terms.every((term) => text.includes(term));
}

/** The text indexed for `value`: the fields named (strings as they are, others as JSON), or every string in it. */
export function indexTextOf(value: JsonValue, fields: readonly string[] | undefined): string {
  if (fields !== undefined) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return '';
    const record = value as Readonly<Record<string, JsonValue>>;
    return fields
      .filter((f) => Object.hasOwn(record, f))
      .map((f) => (typeof record[f] === 'string' ? record[f] : JSON.stringify(record[f])))
      .join('\n');
  }
  const strings: string[] = [];
  const collect = (v: JsonValue): void => {
    if (typeof v === 'string') strings.push(v);
    else if (Array.isArray(v)) v.forEach(collect);
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(collect);
  };
  collect(value);
  return strings.join('\n');
}

/**
 * Embeds `texts` (one per key; `keys` empty for a query) and returns unit vectors, so cosine similarity is a dot
 * product. Every way the function can fail is an `EmbeddingError` naming the keys.
 */
export async function embedTexts(
  embed: EmbedFunction,
  dimensions: number,
  texts: readonly string[],
  keys: readonly string[],
  namespace: Namespace,
): Promise<Float32Array[]> {
  let vectors: readonly ArrayLike<number>[];
  try {
    vectors = await embed(texts);
  } catch (error) {
    throw new EmbeddingError(
      keys,
      namespace,
      `embed threw: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
  if (!Array.isArray(vectors) || vectors.length !== texts.length) {
    throw new EmbeddingError(
      keys,
      namespace,
      `embed returned ${Array.isArray(vectors) ? vectors.length : 'no list of'} vectors for ${texts.length} texts`,
    );
  }
  return (vectors as readonly unknown[]).map((entry, i) => {
    const vector = entry as ArrayLike<number> | null;
    const named = keys[i] === undefined ? keys : [keys[i]];
    if (vector === null || typeof vector !== 'object' || vector.length !== dimensions) {
      throw new EmbeddingError(
        named,
        namespace,
        `expected ${dimensions} dimensions, got ${String((vector as { length?: unknown } | null)?.length)}`,
      );
    }
    const unit = new Float32Array(dimensions);
    let norm = 0;
    for (let d = 0; d < dimensions; d++) {
      const x = vector[d];
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        throw new EmbeddingError(named, namespace, `component ${d} is ${String(x)}, not a finite number`);
      }
      norm += x * x;
    }
    norm = Math.sqrt(norm);
    if (norm === 0 || !Number.isFinite(norm))
      throw new EmbeddingError(named, namespace, 'the vector has no direction (all zeros or too large)');
    for (let d = 0; d < dimensions; d++) unit[d] = vector[d]! / norm;
    return unit;
  });
}

export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let d = 0; d < a.length; d++) sum += a[d]! * b[d]!;
  return sum;
}

/** Keeps the `limit` best of what it is offered (highest score; ties: newest, then first offered). */
export class TopK<T> {
  readonly #limit: number;
  readonly #hits: { score: number; updatedAt: number; item: T }[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Whether a hit of this score could still enter (to skip decoding values that cannot). */
  admits(score: number): boolean {
    return this.#hits.length < this.#limit || score > this.#hits[this.#hits.length - 1]!.score;
  }

  offer(score: number, updatedAt: number, item: T): void {
    const hits = this.#hits;
    if (hits.length === this.#limit) {
      const last = hits[hits.length - 1]!;
      if (score < last.score || (score === last.score && updatedAt <= last.updatedAt)) return;
      hits.pop();
    }
    let i = hits.length;
    while (
      i > 0 &&
      (hits[i - 1]!.score < score || (hits[i - 1]!.score === score && hits[i - 1]!.updatedAt < updatedAt))
    )
      i--;
    hits.splice(i, 0, { score, updatedAt, item });
  }

  get items(): T[] {
    return this.#hits.map((hit) => hit.item);
  }
}

/** The Float32 vector of a stored BLOB (copied: a Buffer's offset need not be 4-aligned). */
export function vectorOfBytes(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}
