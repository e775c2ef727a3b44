/**
 * A `Store` on PostgreSQL (pg): the checkpointer's own pool, or one of its own.
 * @module
 */
import pg from 'pg';
import { ConfigurationError, CubepiError, StoreError, type StoreOperation } from '../types/errors.js';
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
  embedTexts,
  encodeNamespace,
  indexTextOf,
  jsonOf,
  prefixUpperBound,
  type CheckedStoreOptions,
} from './store-items.js';

/** How {@link PostgresStore} scores a vector search. */
export type PostgresVectorSearch = 'auto' | 'exact' | 'pgvector';

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions extends StoreOptions {
  /** The schema holding the table; created if missing. Letters, digits and `_`; default `public`. */
  readonly schema?: string | undefined;
  /** Prefix of the table's name (`<prefix>store_items`). Letters, digits and `_`; default `cubepi_`. */
  readonly tablePrefix?: string | undefined;
  /**
   * `'auto'` (default): pgvector's `<=>` when the `vector` extension is installed in the database (detected at the
   * first call: `pg_extension`), else exact scoring in plain SQL. `'exact'`: plain SQL always. `'pgvector'`: require
   * the extension (a `ConfigurationError` at the first call if it is not installed).
   */
  readonly vectorSearch?: PostgresVectorSearch | undefined;
}

const IDENTIFIER = /^[A-Za-z0-9_]{1,40}$/;
const COLUMNS = 'ns, key, value::text, created_at, updated_at, expires_at';
type Row = [ns: string, key: string, value: string, createdAt: number, updatedAt: number, expiresAt: number | null];

/**
 * A `Store` in the table `<schema>.<prefix>store_items`, which it creates itself at the first call (under an advisory
 * lock, so processes starting together create it once). Connects lazily.
 *
 * - `new PostgresStore(pool | connectionString, options)`; `checkpointer.store(options)` of a `PostgresCheckpointer`
 *   is this on the checkpointer's pool and schema. A pool passed in is left open by `close()`.
 * - Values are `json` (their text kept as written); filters compare with `jsonb` containment of scalars, which is
 *   equality of top-level fields. Namespaces are kept encoded in a `COLLATE "C"` column, so a prefix is a range scan.
 * - Vectors (with `embed`) are `real[]` of unit length. `search({ query })` scores them in SQL: exact, O(items) without
 *   any extension (`sum(a * b)` over `unnest`), or with pgvector's cosine distance when the server has the extension
 *   (see `vectorSearch` and `vectorMode()`; add an HNSW expression index yourself for sub-linear search, docs/memory.md).
 *   Without `embed`, `query` is a case-insensitive substring match of every term (`strpos` on the lowercased text).
 *
 * Errors: bad arguments `InvalidInputError`, bad embeddings `EmbeddingError` (nothing written), a failed query or a
 * lost connection `StoreError` (the driver's error as `cause`).
 */
export class PostgresStore implements Store {
  readonly #pool: pg.Pool;
  readonly #owned: boolean;
  readonly #options: CheckedStoreOptions;
  readonly #schema: string;
  readonly #table: string;
  readonly #vectorSearch: PostgresVectorSearch;
  #ready: Promise<'exact' | 'pgvector'> | undefined;
  readonly #ignoreIdleClientError = (): void => {};

  /** Throws `ConfigurationError` for bad options. Nothing is sent before the first call. */
  constructor(poolOrConnectionString: pg.Pool | string, options: PostgresStoreOptions = {}) {
    this.#options = checkStoreOptions(options, 'PostgresStore');
    const schema = options.schema ?? 'public';
    const prefix = options.tablePrefix ?? 'cubepi_';
    for (const [name, value] of [
      ['schema', schema],
      ['tablePrefix', prefix],
    ] as const) {
      if (!IDENTIFIER.test(value)) {
        throw new ConfigurationError(`${name} must be letters, digits and _ (at most 40), got "${value}"`);
      }
    }
    const vectorSearch = options.vectorSearch ?? 'auto';
    if (!['auto', 'exact', 'pgvector'].includes(vectorSearch)) {
      throw new ConfigurationError(`vectorSearch must be 'auto', 'exact' or 'pgvector', got "${String(vectorSearch)}"`);
    }
    this.#vectorSearch = vectorSearch;
    this.#schema = schema;
    this.#table = `"${schema}"."${prefix}store_items"`;
    this.#owned = typeof poolOrConnectionString === 'string';
    this.#pool =
      typeof poolOrConnectionString === 'string'
        ? new pg.Pool({ connectionString: poolOrConnectionString })
        : poolOrConnectionString;
    this.#pool.on('error', this.#ignoreIdleClientError);
  }

  /**
   * Creates the table if missing and says how vector searches are scored: `'pgvector'` when the extension is used,
   * `'exact'` otherwise. Optional (every call does it first); a way to fail at startup.
   */
  vectorMode(): Promise<'exact' | 'pgvector'> {
    this.#ready ??= this.#migrate().catch((error: unknown) => {
      this.#ready = undefined;
      throw error instanceof CubepiError ? error : new StoreError('open', error);
    });
    return this.#ready;
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
    const t = this.#table;
    await this.#query('put', async () => {
      const now = this.#options.now();
      // One statement: the sweep of the namespace's expired rows and the upsert commit together.
      await this.#pool.query(
        `WITH swept AS (DELETE FROM ${t} WHERE ns = $1 AND expires_at <= $6 AND key <> $2)
         INSERT INTO ${t} AS old (ns, key, value, text, vector, created_at, updated_at, expires_at)
         VALUES ($1, $2, $3::json, $4, $5::real[], $6, $6, $7)
         ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, text = excluded.text, vector = excluded.vector,
           updated_at = excluded.updated_at, expires_at = excluded.expires_at,
           created_at = CASE WHEN old.expires_at IS NOT NULL AND old.expires_at <= excluded.updated_at
             THEN excluded.created_at ELSE old.created_at END`,
        [
          ns,
          key,
          json,
          text?.toLowerCase() ?? null,
          vector === null ? null : Array.from(vector),
          now,
          ttl === undefined ? null : now + ttl,
        ],
      );
    });
  }

  /** {@inheritDoc Store.get} */
  async get(namespace: Namespace, key: string): Promise<StoreItem | undefined> {
    checkNamespace(namespace);
    checkKey(key);
    const ns = encodeNamespace(namespace);
    const rows = await this.#query('get', () =>
      this.#rows(
        `SELECT ${COLUMNS} FROM ${this.#table} WHERE ns = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`,
        [ns, key, this.#options.now()],
      ),
    );
    return rows[0] === undefined ? undefined : itemOf(rows[0]);
  }

  /** {@inheritDoc Store.delete} */
  async delete(namespace: Namespace, key: string): Promise<void> {
    checkNamespace(namespace);
    checkKey(key);
    const ns = encodeNamespace(namespace);
    await this.#query('delete', () =>
      this.#pool.query(`DELETE FROM ${this.#table} WHERE ns = $1 AND key = $2`, [ns, key]),
    );
  }

  /** {@inheritDoc Store.list} */
  async list(namespacePrefix: Namespace, options?: ListOptions): Promise<ListPage> {
    checkNamespace(namespacePrefix, true);
    const { limit, after } = checkListOptions(options);
    const low = encodeNamespace(namespacePrefix);
    const rows = await this.#query('list', () =>
      this.#rows(
        `SELECT ${COLUMNS} FROM ${this.#table} WHERE ns >= $1 AND ns < $2 AND (expires_at IS NULL OR expires_at > $3)
         ${after === undefined ? '' : 'AND (ns, key) > ($5, $6)'} ORDER BY ns, key LIMIT $4`,
        [
          low,
          prefixUpperBound(low),
          this.#options.now(),
          limit + 1,
          ...(after === undefined ? [] : [after.ns, after.key]),
        ],
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
    const params: unknown[] = [low, prefixUpperBound(low), this.#options.now(), search.limit];
    const where = [`ns >= $1`, `ns < $2`, `(expires_at IS NULL OR expires_at > $3)`];
    if (search.filter.length > 0) {
      params.push(JSON.stringify(Object.fromEntries(search.filter)));
      where.push(`value::jsonb @> $${params.length}::jsonb`);
    }
    return this.#query('search', async () => {
      if (query !== undefined) {
        const mode = await this.vectorMode();
        params.push(Array.from(query));
        const q = `$${params.length}`;
        where.push('vector IS NOT NULL');
        const score =
          mode === 'pgvector'
            ? `1 - (vector::vector <=> ${q}::real[]::vector)`
            : `(SELECT sum(a::float8 * b::float8) FROM unnest(vector, ${q}::real[]) AS v(a, b))`;
        const rows = await this.#rows(
          `SELECT ${COLUMNS}, ${score} AS score FROM ${this.#table} WHERE ${where.join(' AND ')}
           ORDER BY score DESC, updated_at DESC LIMIT $4`,
          params,
        );
        return rows.map((row) => ({ ...itemOf(row), score: Number(row[6]) }));
      }
      for (const term of terms) {
        params.push(term);
        where.push(`strpos(text, $${params.length}) > 0`);
      }
      const rows = await this.#rows(
        `SELECT ${COLUMNS} FROM ${this.#table} WHERE ${where.join(' AND ')} ORDER BY updated_at DESC, ns, key LIMIT $4`,
        params,
      );
      return rows.map(itemOf);
    });
  }

  /** Ends the pool if this store created it; a pool passed in stays open, without this store's listener. Idempotent. */
  async close(): Promise<void> {
    this.#pool.off('error', this.#ignoreIdleClientError);
    if (this.#owned && !this.#pool.ending && !this.#pool.ended) await this.#pool.end();
  }

  async #rows(text: string, values: unknown[]): Promise<(Row & unknown[])[]> {
    const result = await this.#pool.query<Row & unknown[]>({ text, values, rowMode: 'array' });
    return result.rows;
  }

  async #query<T>(operation: StoreOperation, run: () => Promise<T>): Promise<T> {
    try {
      await this.vectorMode();
      return await run();
    } catch (error) {
      throw error instanceof CubepiError ? error : new StoreError(operation, error);
    }
  }

  async #migrate(): Promise<'exact' | 'pgvector'> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`cubepi_store:${this.#schema}`]);
      const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.#schema]);
      if (exists.rowCount === 0) await client.query(`CREATE SCHEMA "${this.#schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.#table} (
        ns text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value json NOT NULL, text text, vector real[],
        created_at double precision NOT NULL, updated_at double precision NOT NULL, expires_at double precision,
        PRIMARY KEY (ns, key))`);
      const extension = await client.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`);
      await client.query('COMMIT');
      const installed = (extension.rowCount ?? 0) > 0;
      if (this.#vectorSearch === 'pgvector' && !installed) {
        throw new ConfigurationError(
          `PostgresStore: vectorSearch 'pgvector' but the vector extension is not installed in this database`,
        );
      }
      return this.#vectorSearch !== 'exact' && installed ? 'pgvector' : 'exact';
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

function itemOf(row: Row | (Row & unknown[])): StoreItem {
  const [ns, key, value, createdAt, updatedAt, expiresAt] = row;
  return {
    namespace: decodeNamespace(ns),
    key,
    value: JSON.parse(value) as JsonValue,
    createdAt: Number(createdAt),
    updatedAt: Number(updatedAt),
    ...(expiresAt === null ? {} : { expiresAt: Number(expiresAt) }),
  };
}
