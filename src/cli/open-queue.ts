/**
 * The run queue of `cubepi worker` and `cubepi serve --queue`: `--queue postgres://…` (else `CUBEPI_QUEUE`, else
 * `DATABASE_URL` for the worker), the queue and the threads in one database. `?schema=<name>` puts the queue's tables
 * and the threads in that schema and pg-boss's in `<name>_boss`; without it, `public` and `pgboss`.
 * @module
 */
import type { createRunQueue as CreateRunQueue, RunQueue } from '../worker/index.js';
import { CliError, usageError } from './cli-error.js';
import { causeOf, openCheckpointer, type OpenedStore } from './open-checkpointer.js';

/** An open queue, the thread store on the same database, and how to name them in messages. */
export interface OpenedQueue {
  readonly queue: RunQueue;
  readonly store: OpenedStore;
  /** `PostgreSQL at host:5432/db (schema s)`. */
  readonly description: string;
  /** Closes the queue, then the store. */
  close(): Promise<void>;
}

/** The queue URL in force: `option`, else `CUBEPI_QUEUE`, else (`worker` only) `DATABASE_URL`. */
export function queueSpec(option: string | undefined, env: NodeJS.ProcessEnv, useDatabaseUrl: boolean) {
  return option ?? (env.CUBEPI_QUEUE || undefined) ?? (useDatabaseUrl ? env.DATABASE_URL || undefined : undefined);
}

/**
 * Opens the queue at `spec` (a `postgres://` URL) and starts it (creating its tables and pg-boss's schema), then the
 * PostgreSQL thread store on the same database. Throws a usage error for a URL that is not PostgreSQL's, a
 * `CliError` saying what to do when the database cannot be used or a package is missing.
 */
export async function openQueue(command: string, spec: string, cwd: string): Promise<OpenedQueue> {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw usageError(`${command}: --queue must be a postgres:// URL, got ${JSON.stringify(spec)}`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw usageError(`${command}: --queue must be a postgres:// URL, got ${JSON.stringify(spec)}`);
  }
  const schema = url.searchParams.get('schema') ?? undefined;
  url.searchParams.delete('schema');
  const where = `${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  let createRunQueue: typeof CreateRunQueue;
  try {
    ({ createRunQueue } = await import('../worker/index.js'));
  } catch (error) {
    throw new CliError(`${command} --queue needs the pg package: npm install pg pg-boss`, 1, { cause: error });
  }
  const queue = createRunQueue({
    connectionString: url.toString(),
    ...(schema === undefined ? {} : { schema, bossSchema: `${schema}_boss` }),
  });
  try {
    await queue.start();
  } catch (error) {
    await queue.close().catch(() => {});
    // pg-boss not installed: its message says what to install.
    if ((error as { code?: unknown }).code === 'configuration') throw new CliError((error as Error).message, 1);
    throw new CliError(
      `cannot use the run queue at ${where} (${causeOf(error)}): start PostgreSQL or fix --queue / CUBEPI_QUEUE`,
      1,
      { cause: error },
    );
  }
  let store: OpenedStore;
  try {
    store = await openCheckpointer(spec, cwd);
  } catch (error) {
    await queue.close().catch(() => {});
    throw error;
  }
  return {
    queue,
    store,
    description: `PostgreSQL at ${where}${schema === undefined ? '' : ` (schema ${schema})`}`,
    close: async () => {
      await queue.close().catch(() => {});
      await store.checkpointer.close?.();
    },
  };
}
