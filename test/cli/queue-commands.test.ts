// `cubepi worker` and `cubepi serve --queue`, spawned as a user runs them, on the real PostgreSQL: a prompt posted to
// the API process is run by the worker process and streamed back through the API over HTTP; SIGTERM mid-run lets the
// run finish and the worker exits 0. Plus the usage errors of the two options.
import type pg from 'pg';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getThread, startRun } from 'cubepi/client';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  requirePostgres,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';
import { cleanEnv, ensureBuilt, runCli, startCli, workdir, type RunningCli } from './cli-harness.js';

requirePostgres();

beforeAll(() => ensureBuilt(), 120_000);

/** The environment without a queue variable (so the usage tests see none). */
const env = () => {
  const clean = cleanEnv();
  delete clean.CUBEPI_QUEUE;
  delete clean.DATABASE_URL;
  return clean;
};

describe('cubepi worker and serve --queue: usage', () => {
  it('worker without a queue, or with a URL that is not PostgreSQL, is a usage error (exit 2)', async () => {
    const cwd = workdir();
    const none = await runCli(['worker'], { cwd, env: env() });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('worker: no queue: pass --queue postgres://');
    const mysql = await runCli(['worker', '--queue', 'mysql://localhost/db'], { cwd, env: env() });
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toContain('--queue must be a postgres:// URL');
  });

  it('serve --queue refuses the options of an in-process agent (exit 2)', async () => {
    const result = await runCli(['serve', '--queue', 'postgres://localhost/db', '--db', 'memory'], {
      cwd: workdir(),
      env: env(),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--db configures the agent, which runs in cubepi worker with --queue');
  });
});

describe.skipIf(!pgAvailable)('cubepi worker and serve --queue on PostgreSQL', () => {
  let pool: pg.Pool;
  const schema = uniqueSchema('cliq');
  const running: RunningCli[] = [];

  beforeAll(() => {
    pool = testPool();
  });
  afterAll(async () => {
    for (const cli of running) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    await Promise.all(running.map((cli) => cli.done));
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await dropSchema(pool, `${schema}_ag`);
    await dropSchema(pool, `${schema}_ag_boss`);
    await pool.end();
  });

  it('a prompt posted to the API process runs on the worker process and streams back; SIGTERM mid-run drains the worker, exit 0', async () => {
    const url = new URL(connectionString());
    url.searchParams.set('schema', schema);
    const cwd = workdir();
    const worker = startCli(['worker', '--queue', url.toString(), '--delay', '5', '--concurrency', '2'], {
      cwd,
      env: env(),
    });
    running.push(worker);
    const api = startCli(['serve', '--queue', url.toString(), '--port', '0'], { cwd, env: env() });
    running.push(api);
    await worker.waitFor('cubepi worker: running "default" runs from PostgreSQL');
    await api.waitFor(/cubepi serve: http:\/\/127\.0\.0\.1:\d+/);
    const origin = /http:\/\/127\.0\.0\.1:\d+/.exec(api.output.stdout)![0];
    // The token serve made at start, printed in the page's URL.
    const token = /#token=([\w-]+)/.exec(api.output.stdout)![1]!;

    const page = await fetch(`${origin}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');

    const base = `${origin}/api`;
    await expect(getThread(base, 'cli-1')).rejects.toMatchObject({ status: 401 });
    const events = await lastValueFrom(startRun(base, 'cli-1', 'cubes', { token }).pipe(toArray()));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.some((e) => e.type === 'tool_execution_end' && e.toolName === 'research')).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    const thread = await getThread(base, 'cli-1', { token });
    expect(thread.activeRunId).toBeNull();
    expect(thread.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    // The worker ran it: its run record names the worker process.
    const { rows } = await pool.query<{ worker: string }>(`SELECT worker FROM "${schema}".cubepi_runs`);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.worker).toContain(`:${worker.child.pid}:`);

    // SIGTERM mid-run: the worker takes no new run, lets this one finish (the default grace), then exits 0.
    let signalled = false;
    const drained = await lastValueFrom(
      startRun(base, 'cli-2', 'spheres', { token }).pipe(
        tap((event) => {
          if (event.type === 'message_update' && !signalled) signalled = worker.child.kill('SIGTERM');
        }),
        toArray(),
      ),
    );
    expect(drained.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    const stopped = await worker.done;
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toMatch(/stopping \(running runs get 30000 ms to finish\)\ncubepi worker: stopped\n/);
    api.child.kill('SIGTERM');
    expect((await api.done).code).toBe(0);
  }, 60_000);

  it('a worker takes only the runs of its --agent: with a "default" and a "demo" worker, six runs served as demo all run on the demo worker', async () => {
    const url = new URL(connectionString());
    url.searchParams.set('schema', `${schema}_ag`);
    const cwd = workdir();
    const other = startCli(['worker', '--queue', url.toString(), '--delay', '1'], { cwd, env: env() });
    running.push(other);
    const demo = startCli(['worker', '--queue', url.toString(), '--agent', 'demo', '--delay', '1'], {
      cwd,
      env: env(),
    });
    running.push(demo);
    const api = startCli(['serve', '--queue', url.toString(), '--agent', 'demo', '--port', '0'], { cwd, env: env() });
    running.push(api);
    await other.waitFor('cubepi worker: running "default" runs from PostgreSQL');
    await demo.waitFor('cubepi worker: running "demo" runs from PostgreSQL');
    await api.waitFor(/cubepi serve: http:\/\/127\.0\.0\.1:\d+/);
    const base = `${/http:\/\/127\.0\.0\.1:\d+/.exec(api.output.stdout)![0]}/api`;
    const token = /#token=([\w-]+)/.exec(api.output.stdout)![1]!;
    const ends = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        lastValueFrom(startRun(base, `demo-${i}`, `question ${i}`, { token }).pipe(toArray())).then((events) =>
          events.at(-1),
        ),
      ),
    );
    for (const end of ends) expect(end).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    const { rows } = await pool.query<{ worker: string; outcome: string }>(
      `SELECT worker, outcome FROM "${schema}_ag".cubepi_runs`,
    );
    expect(rows).toHaveLength(6);
    for (const row of rows) {
      expect(row.outcome).toBe('completed');
      expect(row.worker).toContain(`:${demo.child.pid}:`);
    }
    for (const cli of [other, demo, api]) cli.child.kill('SIGTERM');
    for (const cli of [other, demo, api]) expect((await cli.done).code).toBe(0);
  }, 90_000);
});
