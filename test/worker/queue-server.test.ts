// The agent server on a run queue: `cubepi/client` against `createQueueServer` over real HTTP (SSE and WebSocket),
// with a worker in this process, on the real PostgreSQL and pg-boss. A run streamed; a stream cut mid-run and resumed
// with Last-Event-ID (every event once, in order); cancel over HTTP; an approval answered over HTTP resumes the
// thread; GET /threads/:id during and after a run; the token; the routes a queue does not serve.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { lastValueFrom, take, toArray, type Observable } from 'rxjs';
import { WebSocket } from 'ws';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import {
  AgentServerError,
  cancelRun,
  fromAgentEvents,
  getThread,
  listThreads,
  respond,
  runEventsUrl,
  startRun,
  type SequencedEvent,
} from 'cubepi/client';
import {
  attachWebSocket,
  createQueueServer,
  toNodeListener,
  type QueueServer,
  type QueueServerOptions,
} from 'cubepi/server';
import { createRunQueue, startWorker, type RunQueue, type RunWorker } from 'cubepi/worker';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';
import { cuttingFetch, random } from '../cutting-fetch.js';
import { createEffectsTable, queueAgents } from './fixtures/queue-agents.js';

requirePostgres();

const collect = <T>(source: Observable<T>) => lastValueFrom(source.pipe(toArray()));

function expectDense(events: readonly SequencedEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
}

/** A prompt long enough that its answer streams in many frames. */
const LONG = `long ${'ä'.repeat(20)} ${Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ')}`;

describe.skipIf(!pgAvailable)('the agent server on a run queue (cubepi/client over HTTP)', () => {
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;
  let checkpointer: PostgresCheckpointer;
  let worker: RunWorker | undefined;
  const opened: { server: QueueServer; http: Server }[] = [];

  beforeEach(async () => {
    schema = uniqueSchema('qs');
    // Each SSE watcher holds a pooled connection while it streams.
    pool = testPool({ max: 20 });
    await createEffectsTable(pool, schema);
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
    checkpointer = new PostgresCheckpointer(pool, { schema });
  });
  afterEach(async () => {
    for (const { server, http } of opened.splice(0)) {
      server.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
    await worker?.stop({ graceMs: 0 });
    worker = undefined;
    await queue.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  const startWorking = async (delayMs = 0) => {
    worker = await startWorker({ queue, concurrency: 4, flushMs: 0, agents: queueAgents({ pool, schema, delayMs }) });
  };

  /** A queue server for `agent` on 127.0.0.1:0 (SSE and WebSocket); its base URL. */
  async function serveQueue(agent: string, extra: Partial<QueueServerOptions> = {}): Promise<string> {
    const server = createQueueServer({ queue, agent, checkpointer, heartbeatMs: 1000, ...extra });
    const http = createServer(toNodeListener(server));
    await attachWebSocket(http, server);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    opened.push({ server, http });
    return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  }

  describe.each(['sse', 'websocket'] as const)('over %s', (transport) => {
    it('streams a run a worker runs: every event once, numbered, the same as the run-event log holds', async () => {
      await startWorking();
      const base = await serveQueue('notes');
      const events = await collect(startRun(base, 't1', LONG, { transport, WebSocket }));
      expectDense(events);
      expect(events[0]).toMatchObject({ type: 'agent_start', seq: 1 });
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
      // Compact deltas on the wire rebuild exactly the events the worker stored.
      expect(events).toEqual(await collect(queue.events(events[0]!.runId)));
      const thread = await getThread(base, 't1');
      expect(thread.activeRunId).toBeNull();
      expect(thread.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
      expect(thread.messages.at(-1)).toMatchObject({ content: [{ type: 'text', text: `done ${LONG}` }] });
    });
  });

  it.each([1, 2, 3])(
    'SSE cut at random points, seed %i: resumed with Last-Event-ID, every event once',
    async (seed) => {
      await startWorking(2);
      const base = await serveQueue('notes');
      const connections = { count: 0 };
      const events = await collect(
        startRun(base, 't1', LONG, {
          fetch: cuttingFetch(random(seed), connections),
          retry: { initialDelayMs: 1, maxDelayMs: 5, maxAttempts: 1000 },
        }),
      );
      expect(connections.count).toBeGreaterThan(1);
      expectDense(events);
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
      expect(events).toEqual(await collect(fromAgentEvents(runEventsUrl(base, events[0]!.runId))));
    },
  );

  it('a watcher that leaves mid-run and comes back with Last-Event-ID gets the rest, nothing twice', async () => {
    await startWorking(5);
    const base = await serveQueue('notes');
    const { runId } = (await (
      await fetch(`${base}/threads/t2/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: LONG }),
      })
    ).json()) as { runId: string };
    const url = runEventsUrl(base, runId);
    const first = await collect(fromAgentEvents(url).pipe(take(6)));
    expect((await queue.run(runId))?.status).not.toBe('ended');
    const rest = await collect(fromAgentEvents(url, { after: first.at(-1)!.seq }));
    const all = [...first, ...rest];
    expectDense(all);
    expect(all.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(all).toEqual(await collect(queue.events(runId)));
  });

  it('DELETE /runs/:id cancels the run on its worker; leaving a started run cancels it too', async () => {
    await startWorking(30);
    const base = await serveQueue('notes');
    const seen: SequencedEvent[] = [];
    let cancelled: Promise<boolean> | undefined;
    const runId = await new Promise<string>((resolve, reject) => {
      const subscription = startRun(base, 'c1', LONG).subscribe({
        next: (event) => {
          seen.push(event);
          if (event.type === 'message_update' && cancelled === undefined) {
            cancelled = cancelRun(base, event.runId);
            resolve(event.runId);
          }
        },
        error: reject,
      });
      void subscription;
    });
    expect(await cancelled).toBe(true);
    const events = await collect(queue.events(runId));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    expect(await queue.run(runId)).toMatchObject({ status: 'ended', outcome: 'cancelled', cancelRequested: true });
    expect(await cancelRun(base, runId)).toBe(false);
    await expect(cancelRun(base, 'no-such-run')).rejects.toMatchObject({ status: 404, code: 'unknown_run' });

    // startRun's unsubscribe sends DELETE: the run ends cancelled on the worker.
    const second = await new Promise<string>((resolve, reject) => {
      const subscription = startRun(base, 'c2', LONG).subscribe({
        next: (event) => {
          if (event.type === 'message_update') {
            subscription.unsubscribe();
            resolve(event.runId);
          }
        },
        error: reject,
      });
    });
    expect((await collect(queue.events(second))).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
  });

  it('an approval answered over HTTP resumes the suspended thread on a worker; a stale answer gets 409', async () => {
    await startWorking();
    const base = await serveQueue('guarded');
    const events = await collect(startRun(base, 'a1', 'ask for leave'));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'suspended' });
    const requested = events.find((e) => e.type === 'approval_requested') as AgentEvent & { requestId: string };
    const suspended = await getThread(base, 'a1');
    expect(suspended.pending.map((p) => p.requestId)).toEqual([requested.requestId]);
    expect(suspended.activeRunId).toBeNull();

    const resumed = await collect(respond(base, 'a1', requested.requestId, { approve: true }));
    expect(resumed.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(resumed.some((e) => e.type === 'tool_execution_end' && e.toolName === 'ask')).toBe(true);
    const after = await getThread(base, 'a1');
    expect(after.pending).toEqual([]);
    expect(after.messages.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'done ask for leave' }] });

    const stale = await collect(respond(base, 'a1', requested.requestId, { approve: true })).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(AgentServerError);
    expect(stale).toMatchObject({ status: 409, code: 'stale_approval' });
  });

  it('GET /threads/:id during a run: the history before it and its id; after: the whole thread', async () => {
    await startWorking(10);
    const base = await serveQueue('notes');
    await collect(startRun(base, 'h1', 'first'));
    const runId = await new Promise<string>((resolve, reject) => {
      startRun(base, 'h1', LONG).subscribe({
        next: (event) => {
          // The answer streams after the tool's turn: the checkpoint holds this run's first messages already.
          if (event.type === 'message_update' && event.message.content.some((c) => c.type === 'text')) {
            resolve(event.runId);
          }
        },
        error: reject,
      });
    });
    const during = await getThread(base, 'h1');
    expect(during.activeRunId).toBe(runId);
    expect(await checkpointer.load('h1').then((t) => t?.messages.length)).toBe(7);
    // The stored messages of the running run are left out: its events carry them.
    expect(during.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    await collect(queue.events(runId));
    const done = await getThread(base, 'h1');
    expect(done.activeRunId).toBeNull();
    expect(done.messages).toHaveLength(8);
    expect((await listThreads(base)).map((t) => t.threadId)).toEqual(['h1']);
    const unknown = await getThread(base, 'nobody');
    expect(unknown).toEqual({ threadId: 'nobody', messages: [], pending: [], activeRunId: null });
  });

  it('a queued run: named active, its stream waits with heartbeats, then streams once a worker takes it', async () => {
    const base = await serveQueue('notes', { heartbeatMs: 50 });
    const { runId } = (await (
      await fetch(`${base}/threads/q1/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'waiting' }),
      })
    ).json()) as { runId: string };
    expect(await getThread(base, 'q1')).toEqual({ threadId: 'q1', messages: [], pending: [], activeRunId: runId });
    const response = await fetch(`${base}/runs/${runId}/events`);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe(':\n\n');
    await reader.cancel();
    await startWorking();
    const events = await collect(fromAgentEvents(runEventsUrl(base, runId)));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });

  it('close() ends the streams it serves; the run goes on on its worker', async () => {
    await startWorking(20);
    const base = await serveQueue('notes');
    const server = opened.at(-1)!.server;
    let clientEnded!: (outcome: unknown) => void;
    const client = new Promise<unknown>((resolve) => (clientEnded = resolve));
    const runId = await new Promise<string>((resolve) => {
      startRun(base, 'z1', LONG, { retry: { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 } }).subscribe({
        next: (event) => {
          if (event.type === 'message_update' && event.seq < 10) {
            server.close();
            resolve(event.runId);
          }
        },
        error: (error: unknown) => clientEnded(error),
        complete: () => clientEnded('completed'),
      });
    });
    // The client's stream ended without the run's end; its reconnect is refused.
    expect(await client).toBeInstanceOf(Error);
    // Refused from now on; the worker finishes the run.
    expect((await fetch(`${base}/runs/${runId}/events`)).status).toBe(503);
    expect((await collect(queue.events(runId))).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });

  it('with authToken: 401 on every route without it, SSE and WebSocket; with it, a run streams', async () => {
    await startWorking();
    const token = 'a-secret-token-of-32-characters!';
    const base = await serveQueue('notes', { authToken: token });
    await expect(getThread(base, 't1')).rejects.toMatchObject({ status: 401 });
    await expect(collect(startRun(base, 't1', 'hi'))).rejects.toMatchObject({ status: 401 });
    expect((await fetch(`${base}/runs/x/events`)).status).toBe(401);
    expect((await fetch(`${base}/runs/x`, { method: 'DELETE' })).status).toBe(401);
    const refused = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${base.replace('http', 'ws')}/runs/x/events`);
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('error', () => undefined);
    });
    expect(refused).toBe(401);
    const events = await collect(startRun(base, 't1', 'hi', { token }));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    const overSocket = await collect(
      fromAgentEvents(runEventsUrl(base, events[0]!.runId, 'websocket'), { token, WebSocket }),
    );
    expect(overSocket).toEqual(events);
  });

  it('refuses what it cannot serve: unknown runs 404, bad thread ids and bodies 400, /chat and /ag-ui 501', async () => {
    const base = await serveQueue('notes');
    expect((await fetch(`${base}/runs/no-such-run/events`)).status).toBe(404);
    expect((await fetch(`${base}/runs/no-such-run/events?after=x`)).status).toBe(400);
    const post = (path: string, body: string) =>
      fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect((await post('/threads/a%00b/runs', '{"input":"x"}')).status).toBe(400);
    expect((await post('/threads/t/runs', '{"nope":1}')).status).toBe(400);
    expect((await post('/threads/t/runs', '{"input":42}')).status).toBe(400);
    const resumed = await post('/threads/t/runs', '{"resume":true}');
    expect(resumed.status).toBe(501);
    expect(await resumed.json()).toMatchObject({ error: { code: 'not_implemented' } });
    expect((await post('/threads/t/approvals/r1', '{"approve":true}')).status).toBe(409);
    const chat = await post('/chat', '{}');
    expect(chat.status).toBe(501);
    expect(await chat.json()).toMatchObject({ error: { code: 'not_implemented' } });
    expect((await post('/ag-ui', '{}')).status).toBe(501);
    expect((await fetch(`${base}/chat/t/stream`)).status).toBe(501);
  });

  it('hostile input (issue 37): nothing but user content is queued, browsers from elsewhere are refused, 405 with Allow', async () => {
    const base = await serveQueue('notes');
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const toolResult = {
      role: 'toolResult',
      toolCallId: 'c',
      toolName: 'x',
      content: [],
      isError: false,
      timestamp: 1,
    };
    const refused = await post('/threads/h1/runs', {
      input: [{ role: 'user', content: 'hi', timestamp: 1 }, toolResult],
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid_input' } });
    expect((await post('/threads/h1/runs', { input: 'x' }, { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post('/threads/h1/runs', { input: 'x' }, { origin: 'https://evil.example' })).status).toBe(403);
    expect(await queue.activeRun('h1')).toBeUndefined(); // nothing was queued
    const wrong = await fetch(`${base}/threads/h1/runs`);
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'POST']);
    expect((await fetch(`${base}/runs/r1/events`, { headers: { 'last-event-id': '0x2' } })).status).toBe(400);
  });

  it('a resume at or past the end of an ended run: SSE 204 at once, WebSocket closes 1000, the client completes', async () => {
    await startWorking();
    const base = await serveQueue('notes');
    const events = await collect(startRun(base, 'end-1', 'short'));
    const runId = events[0]!.runId;
    const all = await fetch(`${base}/runs/${runId}/events`);
    const endId = Math.max(...[...(await all.text()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])));
    for (const id of [endId, endId + 50]) {
      const resumed = await fetch(`${base}/runs/${runId}/events`, { headers: { 'last-event-id': String(id) } });
      expect([id, resumed.status]).toEqual([id, 204]);
    }
    for (const transport of ['sse', 'websocket'] as const) {
      const url = runEventsUrl(base, runId, transport);
      expect(await collect(fromAgentEvents(url, { after: endId + 50, WebSocket }))).toEqual([]);
    }
  });
});
