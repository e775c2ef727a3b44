// The access matrix on createQueueServer (a run queue on the real PostgreSQL, a worker in this process): every route
// × {no credentials, another principal, the owner, the owner over a limit} over the Node adapters (SSE and WebSocket) and the Fetch handler;
// the owner and principal stored with each run; the worker handing the principal to the agent and its tools.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import {
  attachWebSocket,
  bearerToken,
  createQueueServer,
  toNodeListener,
  type AccessDenied,
  type QueueServer,
} from 'cubepi/server';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
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
import { headers, MATRIX, OVER_LIMIT, PRINCIPALS, TOKENS, type Harness } from './access-matrix.js';

requirePostgres();

const LONG = `live ${Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ')}`;

describe.skipIf(!pgAvailable)('createQueueServer: every route × every caller', () => {
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;
  let worker: RunWorker;
  let store: PostgresLimitStore;
  let server: QueueServer;
  let http: Server;
  let harness: Harness;
  const toolSaw: string[] = [];
  const denied: AccessDenied[] = [];

  beforeAll(async () => {
    schema = uniqueSchema('qacl');
    pool = testPool({ max: 30 });
    await createEffectsTable(pool, schema);
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
    const checkpointer = new PostgresCheckpointer(pool, { schema });
    store = createPostgresLimitStore({ pool, schema });
    const agents = queueAgents({ pool, schema, delayMs: 20 });
    worker = await startWorker({
      queue,
      concurrency: 8,
      flushMs: 0,
      agents: {
        ...agents,
        // Tells which principal its tool ran for, so the test sees the worker pass it on.
        whoami: (threadId, principal) => {
          expect(principal?.id).toBeTruthy();
          return new Agent({
            provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('who', {})]), fauxMessage('done')] }),
            model: 'faux',
            checkpointer,
            threadId,
            tools: [
              defineTool({
                name: 'who',
                description: 'who',
                parameters: z.object({}),
                execute: (_id, _args, ctx) => (toolSaw.push(`${principal?.id}/${ctx.principal?.id}`), 'ok'),
              }),
            ],
          });
        },
      },
    });
    server = createQueueServer({
      queue,
      agent: 'guarded',
      checkpointer,
      heartbeatMs: 1000,
      authenticate: bearerToken(PRINCIPALS),
      limits: { policy: OVER_LIMIT, store },
      onAccessDenied: (event) => denied.push(event),
    });
    http = createServer(toNodeListener(server));
    await attachWebSocket(http, server);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const start = async (threadId: string, input: string) => {
      const response = await fetch(`${base}/threads/${threadId}/runs`, {
        method: 'POST',
        headers: headers('owner', { 'content-type': 'application/json' }),
        body: JSON.stringify({ input }),
      });
      expect(response.status).toBe(201);
      return ((await response.json()) as { runId: string }).runId;
    };
    const untilEnd = async (runId: string) => {
      const text = await (await fetch(`${base}/runs/${runId}/events`, { headers: headers('owner') })).text();
      expect(text).toContain('event: end');
    };
    harness = {
      base,
      fetch: (request) => server.fetch(request),
      frontEnds: false,
      metrics: () => server.metrics(),
      async runsOf(threadId) {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".cubepi_runs WHERE thread_id = $1`,
          [threadId],
        );
        return rows[0]!.n;
      },
      async liveRun(threadId) {
        const runId = await start(threadId, LONG);
        // Live means a worker has it (so the thread's activeRunId is this run).
        const deadline = Date.now() + 10_000;
        while ((await queue.run(runId))?.status !== 'running') {
          if (Date.now() > deadline) throw new Error('the run never started');
        }
        return runId;
      },
      async finishedThread(threadId) {
        const runId = await start(threadId, 'hello');
        await untilEnd(runId);
        return runId;
      },
      async suspendedThread(threadId) {
        await untilEnd(await start(threadId, 'ask please'));
        const thread = await fetch(`${base}/threads/${threadId}`, { headers: headers('owner') });
        return ((await thread.json()) as { pending: { requestId: string }[] }).pending[0]!.requestId;
      },
    };
  });
  afterAll(async () => {
    server?.close();
    http?.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
    await worker?.stop({ graceMs: 0 });
    await queue?.close();
    await store?.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  let n = 0;
  it.each(MATRIX)(
    '%s — %s',
    async (_route, caller, routeCase) => {
      await routeCase.run(harness, caller, `q-${caller}-${++n}`);
    },
    30_000,
  );

  it('counted and reported every denial of the matrix, never message content', () => {
    const metrics = harness.metrics();
    expect(metrics.unauthenticated).toBe(denied.filter((d) => d.status === 401).length);
    expect(metrics.forbidden).toBe(denied.filter((d) => d.status === 404).length);
    expect(metrics.limited).toBe(denied.filter((d) => d.status === 429).length);
    expect(metrics.forbidden).toBeGreaterThan(0);
    // The over-limit column: one refusal per route that starts work (/chat and /ag-ui are not served: 501).
    expect(denied.filter((d) => d.status === 429).map((d) => d.action)).toEqual(['start_run', 'answer_approval']);
    for (const event of denied.filter((d) => d.status === 429)) {
      expect(event.principal).toEqual({ id: 'alice', roles: ['spent'] });
    }
    const actions = new Set(denied.map((d) => d.action));
    for (const action of ['start_run', 'read_thread', 'watch_run', 'cancel_run', 'answer_approval']) {
      expect(actions).toContain(action);
    }
    for (const event of denied.filter((d) => d.status === 404)) {
      expect(event).toMatchObject({ principal: { id: 'bob' }, resource: { owner: 'alice' } });
    }
    expect(JSON.stringify(denied)).not.toMatch(/hello|ask please|word1/);
  });

  it('stores the owner and principal with each run; the worker passes the principal to the factory and tools', async () => {
    const alt = createQueueServer({
      queue,
      agent: 'whoami',
      checkpointer: new PostgresCheckpointer(pool, { schema }),
      authenticate: bearerToken({ [TOKENS.alice]: { id: 'alice', roles: ['member'] } }),
    });
    const response = await alt.fetch(
      new Request('http://api.test/threads/who-1/runs', {
        method: 'POST',
        headers: headers('owner', { 'content-type': 'application/json' }),
        body: JSON.stringify({ input: 'who am I' }),
      }),
    );
    expect(response.status).toBe(201);
    const { runId } = (await response.json()) as { runId: string };
    const stream = await alt.fetch(new Request(`http://api.test/runs/${runId}/events`, { headers: headers('owner') }));
    expect(await stream.text()).toContain('event: end');
    expect(await queue.run(runId)).toMatchObject({ owner: 'alice', principal: { id: 'alice', roles: ['member'] } });
    expect(toolSaw).toEqual(['alice/alice']);
    alt.close();
  });
});
