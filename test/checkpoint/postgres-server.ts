// The PostgreSQL server the tests use: the standard PG* variables (from `scripts/pg-up.sh` in CI), defaulting to a
// local trust-auth server. In CI an unreachable server fails the run; locally the PostgreSQL tests skip, loudly.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { it } from 'vitest';

/** Connection settings from PG* (PGHOST may be a socket directory), with local defaults. */
export const pgConfig: pg.PoolConfig = {
  host: process.env.PGHOST || '127.0.0.1',
  port: Number(process.env.PGPORT || 5432),
  user: process.env.PGUSER || 'root',
  database: process.env.PGDATABASE || 'test',
  ...(process.env.PGPASSWORD ? { password: process.env.PGPASSWORD } : {}),
  connectionTimeoutMillis: 5_000,
};

/** The same settings as a connection string (for the connection-string constructor). */
export function connectionString(): string {
  const { host, port, user, database, password } = pgConfig;
  const auth = encodeURIComponent(user!) + (password ? `:${encodeURIComponent(String(password))}` : '');
  const hostPart = String(host).startsWith('/') ? `localhost:${port}` : `${host}:${port}`;
  const socket = String(host).startsWith('/') ? `?host=${encodeURIComponent(String(host))}` : '';
  return `postgresql://${auth}@${hostPart}/${database}${socket}`;
}

const inCI = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';

async function probe(): Promise<string | undefined> {
  const client = new pg.Client(pgConfig);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

const unreachable = await probe();

/** Whether a PostgreSQL server answered. */
export const pgAvailable = unreachable === undefined;

/**
 * Call once at the top of a PostgreSQL test file: when no server answers, registers a failing test in CI and prints
 * a warning otherwise (the file's suites use `describe.skipIf(!pgAvailable)`).
 */
export function requirePostgres(): void {
  if (pgAvailable) return;
  const where = `${pgConfig.host}:${pgConfig.port} (user ${pgConfig.user}, db ${pgConfig.database})`;
  if (inCI) {
    it('reaches the PostgreSQL server (required when CI is set)', () => {
      throw new Error(`No PostgreSQL server at ${where}: ${unreachable}. Start one with scripts/pg-up.sh.`);
    });
  } else {
    console.warn(`\n⚠ PostgreSQL tests SKIPPED: no server at ${where}: ${unreachable}. Run scripts/pg-up.sh.\n`);
  }
}

/** A schema name of our own, unique to this run. */
export function uniqueSchema(label: string): string {
  return `cubepi_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** A pool on the test server; errors of idle clients (a terminated backend) are expected in these tests. */
export function testPool(options: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ ...pgConfig, ...options });
  pool.on('error', () => {});
  return pool;
}

/** Drops a schema and everything in it. */
export async function dropSchema(admin: pg.Pool, schema: string): Promise<void> {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/**
 * Runs `operation` while a transaction of `admin`, begun with `lockSql`, holds a lock the operation needs; once a
 * backend named `appName` waits for it, terminates that backend. Returns what the operation rejected with
 * (`undefined` if it resolved).
 */
export async function terminateBackendWhileWaiting(
  admin: pg.Pool,
  appName: string,
  lockSql: string,
  operation: () => Promise<unknown>,
): Promise<unknown> {
  const blocker = await admin.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(lockSql);
    const outcome = operation().then(
      () => undefined,
      (error: unknown) => error,
    );
    for (let attempt = 0; ; attempt++) {
      const waiting = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [appName],
      );
      if (waiting.rows.length > 0) {
        await admin.query('SELECT pg_terminate_backend($1)', [waiting.rows[0]!.pid]);
        break;
      }
      if (attempt === 1000) throw new Error(`no backend of ${appName} ever waited for the lock`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return await outcome;
  } finally {
    await blocker.query('ROLLBACK');
    blocker.release();
  }
}
