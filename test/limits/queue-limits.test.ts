// Limits per principal across processes on the real PostgreSQL: two API nodes (two createQueueServer instances, each
// with its own pg pool, run queue and PostgresLimitStore) and two workers (each with its own pool, queue and store)
// share the counters. Simultaneous starts split over both nodes at the edge of `concurrentRuns` pass exactly as many
// as the limit; a run's slot is freed when it ends on a worker; requestsPerMinute holds across nodes; a worker stops
// a run that reaches its principal's tokens per minute in mid-run, and both nodes then answer 429 with Retry-After.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { lastValueFrom, toArray, type Observable } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent, AssistantMessage } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { LimitExceededError, fromAgentEvents, runEventsUrl, startRun } from 'cubepi/client';
import { bearerToken, createQueueServer, toNodeListener, type Limits, type QueueServer } from 'cubepi/server';
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
import { awayFromMinuteEdge } from './minute-window.js';

requirePostgres();

const collect = <T>(source: Observable<T>) => lastValueFrom(source.pipe(toArray()));
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

describe.skipIf(!pgAvailable)('limits across two API nodes and two workers (PostgreSQL)', () => {
  let schema: string;
  let admin: pg.Pool;
  const pools: pg.Pool[] = [];
  const queues: RunQueue[] = [];
  const stores: PostgresLimitStore[] = [];
  const workers: RunWorker[] = [];
  const opened: { server: QueueServer; http: Server }[] = [];

  beforeEach(async () => {
    schema = uniqueSchema('lim');
    admin = testPool({ max: 2 });
    await createEffectsTable(admin, schema);
  });
  afterEach(async () => {
    for (const { server, http } of opened.splice(0)) {
      server.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
    await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
    await Promise.all(queues.splice(0).map((q) => q.close()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await dropSchema(admin, schema);
    await dropSchema(admin, `${schema}_boss`);
    await Promise.all(pools.splice(0).map((p) => p.end()));
    await admin.end();
  });

  /** One process's share: its own pool, run queue and limit store on the shared schema. */
  function node(): { pool: pg.Pool; queue: RunQueue; store: PostgresLimitStore } {
    const pool = testPool({ max: 6 });
    const queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
    const store = createPostgresLimitStore({ pool, schema });
    pools.push(pool);
    queues.push(queue);
    stores.push(store);
    return { pool, queue, store };
  }

  async function apiNode(policy: Limits | ((p: { id: string }) => Limits)): Promise<string> {
    const { pool, queue, store } = node();
    const server = createQueueServer({
      queue,
      agent: 'notes',
      checkpointer: new PostgresCheckpointer(pool, { schema }),
      authenticate: bearerToken({ [ALICE]: 'alice', [BOB]: 'bob' }),
      limits: { policy, store },
    });
    const http = createServer(toNodeListener(server));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    opened.push({ server, http });
    return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  }

  async function worker(delayMs = 0): Promise<void> {
    const { pool, queue, store } = node();
    workers.push(
      await startWorker({
        queue,
        concurrency: 4,
        flushMs: 0,
        agents: queueAgents({ pool, schema, delayMs }),
        limits: store,
      }),
    );
  }

  const post = (base: string, token: string, thread: string, input = `note ${thread}`) =>
    fetch(`${base}/threads/${thread}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ input }),
    });

  it('lets exactly concurrentRuns of simultaneous starts over both nodes pass, and frees a slot when its run ends on a worker', async () => {
    const [a, b] = [await apiNode({ concurrentRuns: 2 }), await apiNode({ concurrentRuns: 2 })];
    // No worker yet: queued runs hold their slots, so nothing ends during the burst.
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => post(i % 2 === 0 ? a : b, ALICE, `t${i}`)),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
    const refused = responses.find((r) => r.status === 429)!;
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      error: {
        code: 'too_many_runs',
        message: 'too many runs at once: 2 of 2 running; retry when one ends',
        limit: 'concurrentRuns',
        used: 2,
        allowed: 2,
        retryAfterMs: 1000,
      },
    });
    // The other route that starts work, an approval's answer (behind a queued run: not checked against the store), too.
    const admittedThread = `t${statuses.indexOf(201)}`;
    const answer = await fetch(`${b}/threads/${admittedThread}/approvals/req-1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ALICE}` },
      body: JSON.stringify({ approve: true }),
    });
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await answer.json()).toMatchObject({ error: { code: 'too_many_runs' } });
    // Bob has slots of his own.
    expect((await post(b, BOB, 'bob-1')).status).toBe(201);
    // The client's Observable errors typed and retryable, from either node.
    const error = await collect(startRun(a, 'later', 'x', { token: ALICE })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error).toMatchObject({ code: 'too_many_runs', retryable: true, retryAfterMs: 1000 });

    // Two workers run the admitted runs to their end; then a slot is free again, on both nodes.
    await worker();
    await worker();
    const admitted = await Promise.all(
      responses.filter((r) => r.status === 201).map(async (r) => ((await r.json()) as { runId: string }).runId),
    );
    for (const runId of admitted) {
      const events = await collect(fromAgentEvents(runEventsUrl(a, runId), { token: ALICE }));
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    }
    // The workers stop first: a run they picked up and ended between the next posts would free its slot again.
    await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
    expect((await post(b, ALICE, 'after-1')).status).toBe(201);
    expect((await post(a, ALICE, 'after-2')).status).toBe(201);
    expect((await post(a, ALICE, 'after-3')).status).toBe(429);
  });

  it('frees the slot of a run that ended without a worker (cancelled while queued) and of one never queued', async () => {
    const [a, b] = [await apiNode({ concurrentRuns: 1 }), await apiNode({ concurrentRuns: 1 })];
    const first = (await (await post(a, ALICE, 'q1')).json()) as { runId: string };
    expect((await post(b, ALICE, 'q2')).status).toBe(429);
    // Cancelled while queued: it ends at once, no worker sees it; the next admission drops its slot.
    const cancel = await fetch(`${b}/runs/${first.runId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ALICE}` },
    });
    expect(await cancel.json()).toMatchObject({ cancelled: true });
    const second = await post(b, ALICE, 'q3');
    expect(second.status).toBe(201);
    const { runId } = (await second.json()) as { runId: string };
    // A slot whose run was never queued (its API node died in between) counts for 60 s, then no more.
    await admin.query(`DELETE FROM "${schema}".cubepi_runs WHERE run_id = $1`, [runId]);
    expect((await post(a, ALICE, 'q4')).status).toBe(429);
    await admin.query(
      `UPDATE "${schema}".cubepi_limit_slots SET created_at = created_at - interval '61 seconds' WHERE run_id = $1`,
      [runId],
    );
    expect((await post(a, ALICE, 'q5')).status).toBe(201);
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".cubepi_limit_slots`);
    expect(rows[0]).toEqual({ n: 1 });
  });

  it('holds requestsPerMinute across both nodes (one fixed minute on the database clock), per principal', async () => {
    await awayFromMinuteEdge(admin);
    const [a, b] = [await apiNode({ requestsPerMinute: 3 }), await apiNode({ requestsPerMinute: 3 })];
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(i % 2 === 0 ? a : b, ALICE, `r${i}`)).status);
    expect(statuses).toEqual([201, 201, 201, 429, 429, 429]);
    const refused = await post(b, ALICE, 'r7');
    const seconds = Number(refused.headers.get('retry-after'));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
    expect(await refused.json()).toMatchObject({
      error: { code: 'rate_limited', limit: 'requestsPerMinute', used: 3, allowed: 3 },
    });
    expect((await post(a, BOB, 'bob-1')).status).toBe(201);
  });

  it("stops a run on a worker once its principal's tokens per minute are spent, in mid-run; both nodes then refuse with 429", async () => {
    await awayFromMinuteEdge(admin);
    // The first model call (a tool call) spends more than 20 tokens: the run is cancelled before it answers.
    const [a, b] = [await apiNode({ tokensPerMinute: 20 }), await apiNode({ tokensPerMinute: 20 })];
    await worker(5);
    await worker(5);
    const auth = { token: ALICE };
    const events = await collect(startRun(a, 'spender', `note ${'many words '.repeat(20)}`, auth));
    const end = events.at(-1) as Extract<AgentEvent, { type: 'agent_end' }>;
    expect(end).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    const last = end.messages.at(-1) as AssistantMessage;
    expect(last.stopReason).toBe('aborted');
    expect(last.errorMessage).toMatch(
      /^Run aborted: rate limited: \d+ of 20 tokens spent this minute; retry in \d+ s$/,
    );
    // It never got to its answer: no assistant message of the run ended normally.
    expect(end.messages.filter((m) => m.role === 'assistant' && m.stopReason === 'stop')).toEqual([]);
    for (const base of [a, b]) {
      const refused = await post(base, ALICE, 'spender-2');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await refused.json()).toMatchObject({ error: { code: 'rate_limited', limit: 'tokensPerMinute' } });
    }
    expect((await post(b, BOB, 'bob-1')).status).toBe(201);
  });
});
