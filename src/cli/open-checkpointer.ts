/**
 * Where the `cubepi` command keeps threads: `--db`, else `CUBEPI_DB`, else the configuration's `db`, else SQLite at
 * `.cubepi/threads.db` in the working directory (created on first use). `memory` keeps nothing; a `postgres://` or
 * `postgresql://` URL uses PostgreSQL. Drivers are loaded only for the store chosen.
 * @module
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { MemoryCheckpointer, type Checkpointer } from '../index.js';
import { CliError } from './cli-error.js';

/** The default SQLite file, relative to the working directory. */
export const DEFAULT_DB = '.cubepi/threads.db';

/** An open store and how to name it in messages. */
export interface OpenedStore {
  readonly checkpointer: Checkpointer;
  /** `SQLite at .cubepi/threads.db`, `PostgreSQL at host/db`, `memory (nothing is kept)`. */
  readonly description: string;
  /** Whether threads outlive the process (false for `memory`). */
  readonly persistent: boolean;
}

/** The store spec in force: `option`, else `CUBEPI_DB`, else `configured`, else {@link DEFAULT_DB}. */
export function storeSpec(option: string | undefined, env: NodeJS.ProcessEnv, configured?: string): string {
  return option ?? (env.CUBEPI_DB || undefined) ?? configured ?? DEFAULT_DB;
}

/**
 * Opens the store `spec` names (see {@link storeSpec}), relative paths against `cwd`. PostgreSQL is migrated at once,
 * so an unreachable server fails here. Every failure is a `CliError` saying what to do: an unreachable database, a
 * directory that cannot be created, a driver that is not installed.
 */
export async function openCheckpointer(spec: string, cwd: string): Promise<OpenedStore> {
  if (spec === 'memory')
    return { checkpointer: new MemoryCheckpointer(), description: 'memory (nothing is kept)', persistent: false };
  if (/^postgres(ql)?:\/\//.test(spec)) return openPostgres(spec);
  return openSqlite(resolve(cwd, spec), cwd);
}

async function openPostgres(spec: string): Promise<OpenedStore> {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new CliError(`--db ${spec} is not a valid PostgreSQL URL: use postgres://user@host:5432/database`, 2);
  }
  // `?schema=` is ours (the checkpointer's schema), not the driver's.
  const schema = url.searchParams.get('schema') ?? undefined;
  url.searchParams.delete('schema');
  const where = `${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  const { PostgresCheckpointer } = await importDriver(
    () => import('../checkpoint/postgres.js'),
    'pg',
    'PostgreSQL (--db postgres://…)',
  );
  const checkpointer = new PostgresCheckpointer(url.toString(), schema === undefined ? {} : { schema });
  try {
    await checkpointer.migrate();
  } catch (error) {
    await checkpointer.close();
    throw new CliError(
      `cannot use the PostgreSQL database at ${where} (${causeOf(error)}): start the server or fix --db / CUBEPI_DB`,
      1,
      { cause: error },
    );
  }
  return {
    checkpointer,
    description: `PostgreSQL at ${where}${schema === undefined ? '' : ` (schema ${schema})`}`,
    persistent: true,
  };
}

async function openSqlite(path: string, cwd: string): Promise<OpenedStore> {
  const shown = relative(cwd, path).startsWith('..') ? path : relative(cwd, path);
  const dir = dirname(path);
  try {
    const created = await mkdir(dir, { recursive: true });
    // A fresh `.cubepi/` keeps itself out of git.
    if (created !== undefined && dir === resolve(cwd, '.cubepi')) await writeFile(resolve(dir, '.gitignore'), '*\n');
  } catch (error) {
    throw new CliError(
      `cannot create ${relative(cwd, dir) || dir}/ for the thread store (${causeOf(error)}): ` +
        'run cubepi in a writable directory, or pass --db <file>, --db memory or --db postgres://…',
      1,
      { cause: error },
    );
  }
  const { SQLiteCheckpointer } = await importDriver(
    () => import('../checkpoint/sqlite.js'),
    'better-sqlite3',
    'the default thread store (SQLite)',
  );
  try {
    return { checkpointer: new SQLiteCheckpointer(path), description: `SQLite at ${shown}`, persistent: true };
  } catch (error) {
    const addon = addonProblem(error);
    if (addon !== undefined)
      throw new CliError(`the default thread store (SQLite) ${addon} (or pass --db memory)`, 1, { cause: error });
    throw new CliError(
      `cannot open the SQLite thread store ${shown} (${causeOf(error)}): check its permissions, ` +
        'or pass --db <another file> or --db memory',
      1,
      { cause: error },
    );
  }
}

/**
 * What is wrong with better-sqlite3's native addon, with the command that fixes it; undefined when `error` is about
 * something else (the file, its directory). npm 11 installs the package but skips the install script that builds the
 * addon until the project approves it: better-sqlite3 then throws the `bindings` package's "Could not locate the
 * bindings file" with every path it tried (some 900 characters).
 */
function addonProblem(error: unknown): string | undefined {
  for (let e = error; e instanceof Error; e = e.cause) {
    if (e.message.startsWith('Could not locate the bindings file')) {
      return (
        "needs better-sqlite3's native addon, which is not built (npm 11 skips its install script until you approve " +
        'it): npm install-scripts approve better-sqlite3 && npm rebuild better-sqlite3'
      );
    }
    if ((e as NodeJS.ErrnoException).code === 'ERR_DLOPEN_FAILED') {
      // The addon's path is long and says nothing the fix needs: its file name is enough.
      const why = e.message
        .replace(/\S*\/([^/\s]+\.node)/g, '$1')
        .replace(/\s+/g, ' ')
        .slice(0, 200);
      return `cannot load better-sqlite3's native addon (${why}): npm rebuild better-sqlite3`;
    }
  }
  return undefined;
}

async function importDriver<T>(load: () => Promise<T>, driver: string, what: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new CliError(`${what} needs the ${driver} package: npm install ${driver} (or pass --db memory)`, 1, {
      cause: error,
    });
  }
}

/** The innermost message of an error chain (the driver's, not our wrapper's). */
export function causeOf(error: unknown): string {
  let e = error;
  while (e instanceof Error && e.cause !== undefined) e = e.cause;
  const message = e instanceof Error ? e.message || (e as NodeJS.ErrnoException).code || e.name : String(e);
  return message.replace(/\s*\n\s*/g, ' ');
}
