// A PostgreSQL connection terminated under the checkpointer (issue 15): every failure is a CheckpointError, the
// process survives, and the next call works. "Survives" is checked in process: an 'error' event nobody listens to is
// thrown from the socket callback, and that reaches `uncaughtException`, which in a plain Node process is the crash.
// Only the backends of a test's own pool are terminated (by its application_name): other files share the server.
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointError, type Message } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  pgConfig,
  requirePostgres,
  terminateBackendWhileWaiting,
  testPool,
  uniqueSchema,
} from './postgres-server.js';

requirePostgres();

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const admin = pgAvailable ? testPool({ max: 3 }) : undefined;
const schemas: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
// The schema doubles as the application_name of the test's pool: what the test terminates, and nothing else.
function schema(label: string): string {
  const name = uniqueSchema(label);
  schemas.push(name);
  return name;
}
/** A pool on the test server named `appName`, with an 'error' listener (as a careful owner adds). */
function victimPool(appName: string, options: pg.PoolConfig = {}): pg.Pool {
  const created = testPool({ ...options, application_name: appName });
  cleanups.push(() => created.end());
  return created;
}

// What would have crashed the process during the test (messages only: a pg error drags its whole client along).
const crashes: string[] = [];
const onCrash = (error: unknown) => crashes.push(error instanceof Error ? error.message : String(error));
beforeEach(() => {
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
});
afterEach(async () => {
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  crashes.length = 0;
  for (const cleanup of cleanups.splice(0)) await cleanup();
  for (const name of schemas.splice(0)) await dropSchema(admin!, name);
});
afterAll(async () => {
  await admin?.end();
});

/** Terminates every backend named `appName`; how many it terminated. */
async function terminate(appName: string): Promise<number> {
  const result = await admin!.query<{ n: number }>(
    `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
     WHERE application_name = $1 AND pid <> pg_backend_pid()`,
    [appName],
  );
  return result.rows[0]!.n;
}

/** Terminates the backends named `appName` every 20 ms until stopped. */
function startKiller(appName: string): { readonly kills: number; stop(): Promise<void> } {
  let stopped = false;
  let kills = 0;
  const done = (async () => {
    while (!stopped) {
      kills += await terminate(appName);
      await sleep(20);
    }
  })();
  return {
    get kills() {
      return kills;
    },
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

/** {@link terminateBackendWhileWaiting} with the admin pool. */
function terminateWhileWaiting(appName: string, lockSql: string, operation: () => Promise<unknown>): Promise<unknown> {
  return terminateBackendWhileWaiting(admin!, appName, lockSql, operation);
}

describe.skipIf(!pgAvailable)('PostgresCheckpointer, connection terminated', () => {
  it('load in a loop under repeated termination (issue 15): each failure is a CheckpointError, the process lives, and the next load works', async () => {
    const name = schema('loadloop');
    // As in the issue: a checkpointer that owns its pool, from a connection string.
    const separator = connectionString().includes('?') ? '&' : '?';
    const checkpointer = new PostgresCheckpointer(`${connectionString()}${separator}application_name=${name}`, {
      schema: name,
    });
    cleanups.push(() => checkpointer.close());
    await checkpointer.append('t', [user('a')]);
    const failures: unknown[] = [];
    const killer = startKiller(name);
    try {
      while (killer.kills < 10) await checkpointer.load('t').catch((error: unknown) => failures.push(error));
    } finally {
      await killer.stop();
    }
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(CheckpointError);
      expect(failure).toMatchObject({ code: 'checkpoint_error', operation: 'load', threadId: 't' });
    }
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    expect(crashes).toEqual([]);
  });

  it('load terminated while its transaction waits: a CheckpointError, and the dead client goes back to be destroyed', async () => {
    const name = schema('load');
    const victims = victimPool(name, { max: 1 });
    const checkpointer = new PostgresCheckpointer(victims, { schema: name });
    await checkpointer.append('t', [user('a')]);
    const releases: unknown[] = [];
    victims.on('release', (error: unknown) => releases.push(error));
    const error = await terminateWhileWaiting(
      name,
      `LOCK TABLE "${name}".cubepi_threads IN ACCESS EXCLUSIVE MODE`,
      () => checkpointer.load('t'),
    );
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', operation: 'load', threadId: 't' });
    // Released with an error, which is what tells pg-pool to end the client rather than keep it.
    expect(releases).toEqual([expect.any(Error)]);
    // One client at most: had the dead one gone back to the pool, this load would get it and fail.
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    expect(crashes).toEqual([]);
  });

  it('deleteThread terminated while it waits for the thread: a CheckpointError, nothing deleted, a retry deletes', async () => {
    const name = schema('delete');
    const victims = victimPool(name, { max: 1 });
    const checkpointer = new PostgresCheckpointer(victims, { schema: name });
    await checkpointer.append('t', [user('a')]);
    const error = await terminateWhileWaiting(
      name,
      `SELECT 1 FROM "${name}".cubepi_threads WHERE thread_id = 't' FOR UPDATE`,
      () => checkpointer.deleteThread('t'),
    );
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', operation: 'deleteThread', threadId: 't' });
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    await checkpointer.deleteThread('t');
    expect(await checkpointer.load('t')).toBeNull();
    expect(crashes).toEqual([]);
  });

  it("a thread's first append terminated while it creates the thread: a CheckpointError, nothing written, a retry lands", async () => {
    const name = schema('create');
    const victims = victimPool(name, { max: 1 });
    const checkpointer = new PostgresCheckpointer(victims, { schema: name });
    await checkpointer.migrate();
    // Another writer is creating the thread (uncommitted): our insert of its row waits for that writer's outcome.
    const error = await terminateWhileWaiting(
      name,
      `INSERT INTO "${name}".cubepi_threads (thread_id, next_seq, extra, created_at, updated_at)
       VALUES ('new', 0, '{}', 0, 0)`,
      () => checkpointer.append('new', [user('a')], { expectedSeq: 0 }),
    );
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', operation: 'append', threadId: 'new' });
    expect(await checkpointer.load('new')).toBeNull();
    expect(await checkpointer.append('new', [user('a')], { expectedSeq: 0 })).toEqual({ seq: 1 });
    expect(crashes).toEqual([]);
  });

  it('the migration of a fresh checkpointer terminated: its first call fails with a CheckpointError, the next migrates', async () => {
    const name = schema('migrate');
    const victims = victimPool(name, { max: 1 });
    const checkpointer = new PostgresCheckpointer(victims, { schema: name });
    // Another process is creating the schema (uncommitted): the migration's CREATE SCHEMA waits for its outcome.
    const error = await terminateWhileWaiting(name, `CREATE SCHEMA "${name}"`, () => checkpointer.load('t'));
    expect(error).toBeInstanceOf(CheckpointError);
    expect(error).toMatchObject({ code: 'checkpoint_error', operation: 'load', threadId: 't' });
    expect(await checkpointer.append('t', [user('a')])).toEqual({ seq: 1 });
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    expect(crashes).toEqual([]);
  });

  it('a pool it was given, with no error listener of its own: an idle client terminated does not crash, until close()', async () => {
    const name = schema('given');
    const given = new pg.Pool({ ...pgConfig, application_name: name, max: 1 });
    cleanups.push(() => given.end());
    const checkpointer = new PostgresCheckpointer(given, { schema: name });
    await checkpointer.append('t', [user('a')]);
    expect(given.idleCount).toBe(1);
    // Not events.once: it listens for 'error' itself, which would hide the crash.
    const removed = new Promise((resolve) => given.once('remove', resolve));
    expect(await terminate(name)).toBe(1);
    await removed;
    expect(crashes).toEqual([]);
    expect(await checkpointer.load('t')).toEqual({ messages: [user('a')], extra: {}, seq: 1 });
    await checkpointer.close();
    expect(given.listenerCount('error')).toBe(0);
  });
});
