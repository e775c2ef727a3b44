/**
 * `createPostgresLimitStore`: per-principal limits whose counters live in PostgreSQL, so they hold across every API
 * node (`createQueueServer({ limits })`) and every worker (`startWorker({ limits })`). See `docs/limits.md`.
 * @module
 */
import pg from 'pg';
import { ConfigurationError } from '../types/errors.js';
import {
  runBudget,
  type Admission,
  type LimitCode,
  type LimitRefusal,
  type Limits,
  type LimitStore,
  type RunBudget,
  type Spend,
} from '../types/limits.js';
import { limitTables, migrateLimits, type LimitTables } from './limits-schema.js';
import { IDENTIFIER } from './run-events-schema.js';

/** Options of {@link createPostgresLimitStore}: a pool or a connection string (exactly one). */
export interface PostgresLimitStoreOptions {
  /** The pool to use (not ended by `close`). */
  readonly pool?: pg.Pool | undefined;
  /** A connection string: the store makes its own pool from it (ended by `close`). */
  readonly connectionString?: string | undefined;
  /** The run queue's schema (`createRunQueue({ schema })`; default `public`): a slot lasts while its run runs. */
  readonly schema?: string | undefined;
  /** Failures while a worker charges a run's spend (the run goes on); default `console.warn`. */
  readonly onError?: ((error: unknown) => void) | undefined;
}

/** A {@link LimitStore} on PostgreSQL, which a worker also asks for the budget of each run it runs. */
export interface PostgresLimitStore extends LimitStore {
  /**
   * The budget of a queued run, as its admission recorded it (principal and limits), or `undefined` for a run that
   * was queued without limits. `startWorker({ limits })` runs each run with it.
   */
  budgetFor(runId: string): Promise<RunBudget | undefined>;
  /** Creates the tables and the admit function now (optional: the first call does it). */
  migrate(): Promise<void>;
  /** Ends the store's own pool (one made from `connectionString`). */
  close(): Promise<void>;
}

/**
 * Limits on PostgreSQL. `admit` is one round trip (one call of the admit function, which locks the principal's row:
 * two admissions at the edge of a limit, on two nodes, cannot both pass); `charge` is one statement (an upsert of the
 * principal's windows). A run's slot is held until its run ends in the run queue's table — wherever it ends, a worker
 * that dies leaks nothing — so give it the queue's schema. Windows are fixed (a UTC wall-clock minute, a UTC day),
 * on the database's clock.
 *
 * @example
 * const limits = { policy: (p) => (p.claims?.tier === 'paid' ? paid : free), store: createPostgresLimitStore({ pool }) };
 * createQueueServer({ queue, agent: 'support', checkpointer, limits });
 * await startWorker({ queue, agents, limits: limits.store });
 */
export function createPostgresLimitStore(options: PostgresLimitStoreOptions): PostgresLimitStore {
  if (typeof options !== 'object' || options === null)
    throw new ConfigurationError('createPostgresLimitStore: options needed');
  if ((options.pool === undefined) === (options.connectionString === undefined)) {
    throw new ConfigurationError('createPostgresLimitStore needs exactly one of pool and connectionString');
  }
  const schema = options.schema ?? 'public';
  if (!IDENTIFIER.test(schema)) {
    throw new ConfigurationError(`createPostgresLimitStore: schema must be letters, digits and _, got "${schema}"`);
  }
  const owned = options.pool === undefined;
  const pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString });
  const tables: LimitTables = limitTables(schema);
  const onError = options.onError ?? ((error: unknown) => console.warn('cubepi limits:', error));
  let migrated: Promise<void> | undefined;
  const ready = (): Promise<void> => {
    migrated ??= migrateLimits(pool, tables).catch((error: unknown) => {
      migrated = undefined;
      throw error;
    });
    return migrated;
  };

  const store: PostgresLimitStore = {
    async admit(principalId: string, runId: string, limits: Limits): Promise<Admission> {
      await ready();
      // A named (prepared) statement: parsed and planned once per connection, not at every start. The name carries
      // the schema (at most 40 characters: within PostgreSQL's 63), so two stores on one pool never share one.
      const { rows } = await pool.query<RefusalRow>({
        name: `cubepi_admit_${schema}`,
        text: `SELECT * FROM ${tables.admit}($1, $2, $3)`,
        values: [principalId, runId, JSON.stringify(limits)],
      });
      const row = rows[0];
      if (row === undefined || row.code === null) return { admitted: true };
      return { admitted: false, refusal: refusalOf(row) };
    },

    async charge(principalId: string, spend: Spend, limits: Limits): Promise<LimitRefusal | undefined> {
      await ready();
      // One upsert: a new window starts from this spend; the old row's values are what SET reads.
      const { rows } = await pool.query<ChargeRow>(
        `WITH now AS (SELECT clock_timestamp() AS t)
         INSERT INTO ${tables.counters} AS c (principal, minute_start, minute_tokens, day_start, day_usd)
           SELECT $1, date_trunc('minute', t), $2, (t AT TIME ZONE 'UTC')::date, $3 FROM now
         ON CONFLICT (principal) DO UPDATE SET
           minute_requests = CASE WHEN c.minute_start = EXCLUDED.minute_start THEN c.minute_requests ELSE 0 END,
           minute_tokens = CASE WHEN c.minute_start = EXCLUDED.minute_start
             THEN c.minute_tokens + EXCLUDED.minute_tokens ELSE EXCLUDED.minute_tokens END,
           minute_start = EXCLUDED.minute_start,
           day_usd = CASE WHEN c.day_start = EXCLUDED.day_start THEN c.day_usd + EXCLUDED.day_usd
             ELSE EXCLUDED.day_usd END,
           day_start = EXCLUDED.day_start
         RETURNING minute_tokens::double precision AS tokens, day_usd AS usd,
           ceil(extract(epoch FROM (minute_start + interval '1 minute' - (SELECT t FROM now))) * 1000)::bigint
             AS minute_left,
           ceil(extract(epoch FROM (((day_start + 1)::timestamp AT TIME ZONE 'UTC') - (SELECT t FROM now))) * 1000)::bigint
             AS day_left`,
        [principalId, Math.round(spend.tokens), spend.usd],
      );
      const row = rows[0]!;
      if (limits.usdPerDay !== undefined && row.usd >= limits.usdPerDay) {
        return refusal('budget_exceeded', 'usdPerDay', row.usd, limits.usdPerDay, row.day_left);
      }
      if (limits.tokensPerMinute !== undefined && row.tokens >= limits.tokensPerMinute) {
        return refusal('rate_limited', 'tokensPerMinute', row.tokens, limits.tokensPerMinute, row.minute_left);
      }
      return undefined;
    },

    async release(runId: string): Promise<void> {
      await ready();
      await pool.query(`DELETE FROM ${tables.slots} WHERE run_id = $1`, [runId]);
    },

    async budgetFor(runId: string): Promise<RunBudget | undefined> {
      await ready();
      const { rows } = await pool.query<{ principal: string; limits: Limits }>(
        `SELECT principal, limits FROM ${tables.slots} WHERE run_id = $1`,
        [runId],
      );
      const row = rows[0];
      return row === undefined ? undefined : runBudget(store, row.principal, runId, row.limits, onError);
    },

    migrate: ready,

    async close() {
      if (owned) await pool.end();
    },
  };
  return store;
}

interface RefusalRow {
  readonly code: LimitCode | null;
  readonly limit_name: keyof Limits;
  readonly used: number;
  readonly allowed: number;
  readonly retry_after_ms: string;
}

interface ChargeRow {
  readonly tokens: number;
  readonly usd: number;
  readonly minute_left: string;
  readonly day_left: string;
}

function refusalOf(row: RefusalRow): LimitRefusal {
  return refusal(row.code!, row.limit_name, row.used, row.allowed, row.retry_after_ms);
}

function refusal(
  code: LimitCode,
  limit: keyof Limits,
  used: number,
  allowed: number,
  retryAfterMs: string,
): LimitRefusal {
  return { code, limit, used, allowed, retryAfterMs: Math.max(0, Number(retryAfterMs)) };
}
