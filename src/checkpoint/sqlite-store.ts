/**
 * A `Store` on a SQLite file (better-sqlite3): the checkpointer's own file and connection, or one of its own.
 * @module
 */
import Database from 'better-sqlite3';
import { CheckpointError, ConfigurationError, CubepiError, StoreError, type StoreOperation } from '../types/errors.js';
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
import { retryWhileBusy } from './retry-while-busy.js';
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
  prefixUpperBound,
  TopK,
  vectorOfBytes,
  type CheckedStoreOptions,
} from './store-items.js';

/** Options of {@link SQLiteStore}. */
export interface SQLiteStoreOptions extends StoreOptions {
  /** Prefix of the table's name (`<prefix>store_items`). Letters, digits and `_`; default `cubepi_`. */
  readonly tablePrefix?: string | undefined;
  /** How long a call waits for a lock another connection holds, in ms (without blocking the event loop). Default 5000. */
  readonly busyTimeoutMs?: number | undefined;
}

type Row = [ns: string, key: string, value: string, createdAt: number, updatedAt: number, expiresAt: number | null];

const PREFIX = /^[A-Za-z0-9_]{0,40}$/;
const COLUMNS = 'ns, key, value, created_at, updated_at, expires_at';

/**
 * A `Store` in the table `<prefix>store_items` of a SQLite file, created if missing.
 *
 * - `new SQLiteStore('memory.db')` opens (or creates) the file and owns it (`close()` closes it);
 *   `new SQLiteStore(db)` uses an open better-sqlite3 `Database` (leaves it open); `checkpointer.store(options)` of a
 *   `SQLiteCheckpointer` is the latter on the checkpointer's own connection, so threads and memory share one file.
 * - Vectors (with `embed`) are stored as Float32 BLOBs of unit length; `search({ query })` is exact: it reads every
 *   indexed vector of the namespaces and scores them in JavaScript (O(items); see `docs/memory.md` for sizes).
 *   Without `embed`, `query` is a case-insensitive substring match of every term (`instr` on the lowercased text).
 * - Expired items are skipped by every read and deleted by the next `put` into their namespace.
 *
 * Errors: bad arguments are `InvalidInputError`s, bad embeddings `EmbeddingError`s (nothing written), a failing
 * statement or a lock held past `busyTimeoutMs` a `StoreError`.
 */
export class SQLiteStore implements Store {
  readonly #db: Database.Database;
  readonly #owned: boolean;
  readonly #options: CheckedStoreOptions;
  readonly #busyTimeoutMs: number;
  readonly #table: string;
  readonly #upsert: Database.Statement;
  readonly #sweep: Database.Statement<[string, number]>;
  readonly #get: Database.Statement<[string, string, number], Row>;
  readonly #delete: Database.Statement<[string, string]>;

  /** Throws `ConfigurationError` for bad options, `StoreError` when the file cannot be opened or the table created. */
  constructor(pathOrDatabase: string | Database.Database, options: SQLiteStoreOptions = {}) {
    this.#options = checkStoreOptions(options, 'SQLiteStore');
    const prefix = options.tablePrefix ?? 'cubepi_';
    if (!PREFIX.test(prefix)) {
      throw new ConfigurationError(`tablePrefix must be letters, digits and _ (at most 40), got "${prefix}"`);
    }
    const busy = options.busyTimeoutMs ?? 5000;
    if (!Number.isInteger(busy) || busy < 0) throw new ConfigurationError(`busyTimeoutMs must be an integer >= 0`);
    this.#busyTimeoutMs = busy;
    this.#owned = typeof pathOrDatabase === 'string';
    const t = (this.#table = `"${prefix}store_items"`);
    let db: Database.Database | undefined;
    try {
      db = this.#db =
        typeof pathOrDatabase === 'string' ? new Database(pathOrDatabase, { timeout: busy }) : pathOrDatabase;
      if (this.#owned) this.#db.pragma('journal_mode = WAL');
      this.#db.exec(`CREATE TABLE IF NOT EXISTS ${t} (
        ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, text TEXT, vector BLOB,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER,
        PRIMARY KEY (ns, key))`);
      if (this.#owned) this.#db.pragma('busy_timeout = 0');
      this.#upsert = this.#db.prepare(
        `INSERT INTO ${t} (ns, key, value, text, vector, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, text = excluded.text, vector = excluded.vector,
           updated_at = excluded.updated_at, expires_at = excluded.expires_at,
           created_at = CASE WHEN ${t}.expires_at IS NOT NULL AND ${t}.expires_at <= excluded.updated_at
             THEN excluded.created_at ELSE ${t}.created_at END`,
      );
      this.#sweep = this.#db.prepare(`DELETE FROM ${t} WHERE ns = ? AND expires_at <= ?`);
      this.#get = this.#db
        .prepare<[string, string, number], Row>(
          `SELECT ${COLUMNS} FROM ${t} WHERE ns = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`,
        )
        .raw(true);
      this.#delete = this.#db.prepare(`DELETE FROM ${t} WHERE ns = ? AND key = ?`);
    } catch (error) {
      if (this.#owned && db?.open === true) db.close();
      throw new StoreError('open', error);
    }
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
    const ns = encodeNamespace(namespace);
    await this.#run('put', () => {
      const now = this.#options.now();
      const bytes = vector === null ? null : new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
      this.#db.transaction(() => {
        this.#sweep.run(ns, now);
        this.#upsert.run(
          ns,
          key,
          json,
          text?.toLowerCase() ?? null,
          bytes,
          now,
          now,
          ttl === undefined ? null : now + ttl,
        );
      })();
    });
  }

  /** {@inheritDoc Store.get} */
  async get(namespace: Namespace, key: string): Promise<StoreItem | undefined> {
    checkNamespace(namespace);
    checkKey(key);
    const ns = encodeNamespace(namespace);
    const row = await this.#run('get', () => this.#get.get(ns, key, this.#options.now()));
    return row === undefined ? undefined : itemOf(row);
  }

  /** {@inheritDoc Store.delete} */
  async delete(namespace: Namespace, key: string): Promise<void> {
    checkNamespace(namespace);
    checkKey(key);
    const ns = encodeNamespace(namespace);
    await this.#run('delete', () => void this.#delete.run(ns, key));
  }

  /** {@inheritDoc Store.list} */
  async list(namespacePrefix: Namespace, options?: ListOptions): Promise<ListPage> {
    checkNamespace(namespacePrefix, true);
    const { limit, after } = checkListOptions(options);
    const low = encodeNamespace(namespacePrefix);
    const rows = await this.#run('list', () =>
      this.#db
        .prepare<unknown[], Row>(
          `SELECT ${COLUMNS} FROM ${this.#table} WHERE ns >= ? AND ns < ? AND (expires_at IS NULL OR expires_at > ?)
           ${after === undefined ? '' : 'AND (ns, key) > (?, ?)'} ORDER BY ns, key LIMIT ?`,
        )
        .raw(true)
        .all(
          low,
          prefixUpperBound(low),
          this.#options.now(),
          ...(after === undefined ? [] : [after.ns, after.key]),
          limit + 1,
        ),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(itemOf),
      ...(rows.length > limit && last !== undefined ? { cursor: cursorOf(last[0], last[1]) } : {}),
    };
  }

  /** {@inheritDoc Store.search} */
  async search(namespacePrefix: Namespace, options?: SearchOptions): Promise<readonly SearchItem[]> {
    checkNamespace(namespacePrefix, true);
    const search = checkSearchOptions(options);
    const { embed, dimensions } = this.#options;
    const terms = search.terms ?? [];
    const query =
      embed !== undefined && terms.length > 0
        ? (await embedTexts(embed, dimensions!, [search.query!], [], namespacePrefix))[0]!
        : undefined;
    const low = encodeNamespace(namespacePrefix);
    const scope = `ns >= ? AND ns < ? AND (expires_at IS NULL OR expires_at > ?)`;
    return this.#run('search', () => {
      const params = [low, prefixUpperBound(low), this.#options.now()];
      if (query !== undefined) {
        // Scored in JavaScript over every indexed vector of the namespaces: exact, O(items). Values are read only for
        // a filter and for the hits.
        const filtered = search.filter.length > 0;
        const rows = this.#db
          .prepare<unknown[], [number, Buffer, number, string | null]>(
            `SELECT rowid, vector, updated_at${filtered ? ', value' : ''} FROM ${this.#table}
             WHERE ${scope} AND vector IS NOT NULL`,
          )
          .raw(true)
          .iterate(...params);
        const top = new TopK<number>(search.limit);
        for (const [rowid, bytes, updatedAt, value] of rows) {
          if (filtered && !matchesFilter(JSON.parse(value!) as JsonValue, search.filter)) continue;
          top.offer(dot(query, vectorOfBytes(bytes)), updatedAt, rowid);
        }
        const byRowid = this.#db
          .prepare<[number], Row>(`SELECT ${COLUMNS} FROM ${this.#table} WHERE rowid = ?`)
          .raw(true);
        return top.items.map((rowid) => {
          const row = byRowid.get(rowid)!;
          return { ...itemOf(row), score: dot(query, vectorOfBytes(this.#vectorOf(rowid))) };
        });
      }
      const textMatch = terms.map(() => ' AND instr(text, ?) > 0').join('');
      const rows = this.#db
        .prepare<unknown[], Row>(
          `SELECT ${COLUMNS} FROM ${this.#table} WHERE ${scope}${terms.length > 0 ? ' AND text IS NOT NULL' : ''}${textMatch}
           ORDER BY updated_at DESC, ns, key`,
        )
        .raw(true)
        .iterate(...params, ...terms);
      const hits: SearchItem[] = [];
      for (const row of rows) {
        const item = itemOf(row);
        if (!matchesFilter(item.value, search.filter)) continue;
        hits.push(item);
        if (hits.length === search.limit) break;
      }
      return hits;
    });
  }

  /** Closes the database if this store opened it (a `Database` passed in stays open). Idempotent. */
  async close(): Promise<void> {
    if (this.#owned && this.#db.open) this.#db.close();
  }

  #vectorOf(rowid: number): Buffer {
    return this.#db.prepare<[number], Buffer>(`SELECT vector FROM ${this.#table} WHERE rowid = ?`).pluck().get(rowid)!;
  }

  async #run<T>(operation: StoreOperation, statement: () => T): Promise<T> {
    try {
      return await retryWhileBusy(statement, {
        db: this.#db,
        limitMs: this.#busyTimeoutMs,
        operation: operation === 'put' || operation === 'delete' ? 'append' : 'load',
      });
    } catch (error) {
      if (error instanceof CheckpointError) throw new StoreError(operation, error.cause ?? error);
      if (error instanceof CubepiError) throw error;
      throw new StoreError(operation, error);
    }
  }
}

function itemOf(row: Row): StoreItem {
  const [ns, key, value, createdAt, updatedAt, expiresAt] = row;
  return {
    namespace: decodeNamespace(ns),
    key,
    value: JSON.parse(value) as JsonValue,
    createdAt,
    updatedAt,
    ...(expiresAt === null ? {} : { expiresAt }),
  };
}
