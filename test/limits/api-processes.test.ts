// Limits per principal across two API processes on the real PostgreSQL: two createQueueServer instances, each in a
// child process of its own (fixtures/api-process.ts: its own pg pool, run queue and PostgresLimitStore), and two
// workers in this process (each with its own pool, queue and store), all on one schema. Simultaneous starts split over
// both processes pass exactly `concurrentRuns` (the refused ones queue nothing and hold no slot); the slots the
// workers free when the runs end are free on both processes, and the limit then holds exactly again;
// `requestsPerMinute` holds across both processes, per principal.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPostgresLimitStore,
  createRunQueue,
  startWorker,
  type PostgresLimitStore,
  type RunQueue,
  type RunWorker,
} from 'cubepi/worker';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';
import { createEffectsTable, queueAgents } from '../worker/fixtures/queue-agents.js';
import { awayFromMinuteEdge, waitUntil } from './minute-window.js';
import { bundledScript } from '../bundled-script.js';

requirePostgres();

const root = fileURLToPath(new URL('../..', import.meta.url));
const apiScript = fileURLToPath(new URL('./fixtures/api-process.ts', import.meta.url));
/** `apiScript` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let apiScriptBundle: string;
beforeAll(async () => {
  apiScriptBundle = await bundledScript(apiScript);
});

const TOKENS = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789ab', carol: 'carol-token-0123456789' };
/** Alice may run 2 at once, carol start 3 per minute; bob has no limits. */
const CONFIG = {
  tokens: { [TOKENS.alice]: 'alice', [TOKENS.bob]: 'bob', [TOKENS.carol]: 'carol' },
  limits: { alice: { concurrentRuns: 2 }, carol: { requestsPerMinute: 3 } },
};

interface ApiProcess {
  readonly child: ChildProcess;
  readonly base: Promise<string>;
  readonly exited: Promise<number | null>;
}

describe.skipIf(!pgAvailable)('limits across two API processes and two workers (PostgreSQL)', () => {
  let schema: string;
  let admin: pg.Pool;
  const processes: ApiProcess[] = [];
  let a: string;
  let b: string;

  function spawnApi(): ApiProcess {
    const child = spawn(process.execPath, [apiScriptBundle, schema, `${schema}_boss`, JSON.stringify(CONFIG)], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const base = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const port = /^port (\d+)$/m.exec(output)?.[1];
        if (port !== undefined) resolve(`http://127.0.0.1:${port}`);
      });
      // A process that dies before it listens fails the suite with what it printed.
      void exited.then((code) =>
        reject(new Error(`API process exited (${String(code)}) before listening:\n${output}`)),
      );
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const api = { child, base, exited };
    processes.push(api);
    return api;
  }

  beforeAll(async () => {
    schema = uniqueSchema('limproc');
    admin = testPool({ max: 2 });
    await createEffectsTable(admin, schema);
    [a, b] = await Promise.all([spawnApi().base, spawnApi().base]);
  }, 60_000);
  afterAll(async () => {
    for (const api of processes) api.child.kill('SIGTERM');
    const codes = await Promise.all(processes.map((api) => api.exited));
    await dropSchema(admin, schema);
    await dropSchema(admin, `${schema}_boss`);
    await admin.end();
    // Each process shut down cleanly (its server, queue, store and pool closed).
    expect(codes).toEqual([0, 0]);
  }, 60_000);

  /** Two workers in this process, each with its own pool, run queue and limit store; `stop()` ends all of it. */
  async function twoWorkers(): Promise<{ stop(): Promise<void> }> {
    const owned: { pool: pg.Pool; queue: RunQueue; store: PostgresLimitStore; worker: RunWorker }[] = [];
    for (const id of ['w1', 'w2']) {
      const pool = testPool({ max: 6 });
      const queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
      const store = createPostgresLimitStore({ pool, schema });
      const agents = queueAgents({ pool, schema, delayMs: 1, workerId: id });
      const worker = await startWorker({ queue, workerId: id, concurrency: 4, flushMs: 0, agents, limits: store });
      owned.push({ pool, queue, store, worker });
    }
    return {
      async stop() {
        await Promise.all(owned.map((o) => o.worker.stop({ graceMs: 0 })));
        await Promise.all(owned.map((o) => o.queue.close()));
        await Promise.all(owned.map((o) => o.store.close()));
        await Promise.all(owned.map((o) => o.pool.end()));
      },
    };
  }

  const post = (base: string, token: string, thread: string) =>
    fetch(`${base}/threads/${thread}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ input: `note ${thread}` }),
    });

  /** `n` starts at once, alternating between the two processes: their responses, in order. */
  const burst = (token: string, prefix: string, n: number) =>
    Promise.all(Array.from({ length: n }, (_, i) => post(i % 2 === 0 ? a : b, token, `${prefix}${i}`)));

  async function count(sql: string, params: unknown[]): Promise<number> {
    const { rows } = await admin.query<{ n: number }>(sql, params);
    return rows[0]!.n;
  }
  const runsOf = (owner: string) =>
    count(`SELECT count(*)::int AS n FROM "${schema}".cubepi_runs WHERE owner = $1`, [owner]);
  const slotsOf = (principal: string) =>
    count(`SELECT count(*)::int AS n FROM "${schema}".cubepi_limit_slots WHERE principal = $1`, [principal]);
  const openRunsOf = (owner: string) =>
    count(`SELECT count(*)::int AS n FROM "${schema}".cubepi_runs WHERE owner = $1 AND status <> 'ended'`, [owner]);

  it('lets exactly concurrentRuns of simultaneous starts over both processes pass; slots freed on a worker are free on both', async () => {
    // No worker yet: queued runs hold their slots, so nothing ends during the burst.
    const first = await burst(TOKENS.alice, 'c', 10);
    const statuses = first.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
    for (const refused of first.filter((r) => r.status === 429)) {
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(await refused.json()).toMatchObject({
        error: { code: 'too_many_runs', limit: 'concurrentRuns', used: 2, allowed: 2 },
      });
    }
    // The refused starts queued nothing and hold no slot; bob, with no limits, is not held back by alice's.
    expect(await runsOf('alice')).toBe(2);
    expect(await slotsOf('alice')).toBe(2);
    expect((await post(b, TOKENS.bob, 'bob-1')).status).toBe(201);

    // The two workers run the admitted runs to their end, which frees alice's slots for both processes.
    const workers = await twoWorkers();
    await waitUntil('alice has no run open', async () => (await openRunsOf('alice')) === 0);
    await waitUntil("alice's slots are freed", async () => (await slotsOf('alice')) === 0);
    await workers.stop();

    // Again at the edge, over both processes: exactly 2 more.
    const second = await burst(TOKENS.alice, 'd', 6);
    expect(second.map((r) => r.status).filter((s) => s === 201)).toHaveLength(2);
    expect(second.map((r) => r.status).filter((s) => s === 429)).toHaveLength(4);
    expect(await runsOf('alice')).toBe(4);
    expect(await openRunsOf('alice')).toBe(2);
  }, 60_000);

  it('holds requestsPerMinute across both processes (one minute on the database clock), per principal', async () => {
    await awayFromMinuteEdge(admin);
    const responses = await burst(TOKENS.carol, 'r', 8);
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    for (const refused of responses.filter((r) => r.status === 429)) {
      const seconds = Number(refused.headers.get('retry-after'));
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(60);
      expect(await refused.json()).toMatchObject({
        error: { code: 'rate_limited', limit: 'requestsPerMinute', used: 3, allowed: 3 },
      });
    }
    // Both processes now refuse carol; the refusals queued nothing.
    expect((await post(a, TOKENS.carol, 'r-a')).status).toBe(429);
    expect((await post(b, TOKENS.carol, 'r-b')).status).toBe(429);
    expect(await runsOf('carol')).toBe(3);
    // Another principal's minute is his own.
    expect((await post(a, TOKENS.bob, 'bob-2')).status).toBe(201);
  }, 60_000);
});
