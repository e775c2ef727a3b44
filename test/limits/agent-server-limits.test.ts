// Limits per principal on createAgentServer over real HTTP (toNodeListener, attachWebSocket): each route that starts
// work answers 429 with Retry-After and the typed body over a limit, nothing runs and nothing is stored; cubepi/client
// errors with a LimitExceededError carrying retryAfterMs; a run that reaches its principal's token or dollar budget is
// stopped in mid-run (outcome `cancelled`, the reason on its closing message) with its sub-agents; slots are released
// when runs end, however they end.
import { Observable, lastValueFrom, toArray } from 'rxjs';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  agentTool,
  computeUsage,
  defineTool,
  MemoryCheckpointer,
  ToolGuard,
  type AgentEvent,
  type AssistantMessage,
  type Provider,
  type StreamEvent,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { LimitExceededError, getThread, respond, startRun, type SequencedEvent } from 'cubepi/client';
import { bearerToken, MemoryLimitStore, type AccessDenied } from 'cubepi/server';
import { deferred } from '../helpers.js';
import { serve, type Served } from '../server/serve-helpers.js';

const FREE = 'free-token-0123456789';
const PAID = 'paid-token-0123456789';
const ADMIN = 'admin-token-012345678';

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

/** 10:15:20 UTC: 40 s left in the minute (a frozen clock: no window ends during a test). */
const T0 = Date.UTC(2026, 11, 2, 10, 15, 20);
const collect = <T>(source: Observable<T>) => lastValueFrom(source.pipe(toArray()));

/** Held until `release` (or its signal): keeps a run active. */
function holdTool() {
  const gate = deferred();
  const started = deferred();
  const signals: AbortSignal[] = [];
  const tool = defineTool({
    name: 'hold',
    description: 'Holds',
    parameters: z.object({}),
    execute: async (_id, _args, { signal }) => {
      signals.push(signal);
      started.resolve();
      await new Promise<void>((resolve, reject) => {
        void gate.promise.then(resolve);
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      });
      return 'held';
    },
  });
  return { tool, release: gate.resolve, started: started.promise, signals };
}

/**
 * Agents whose model calls `hold` on threads named `hold*`, asks for approval of `ask` on `ask*`, and answers at
 * once elsewhere; `calls` counts model calls on every thread.
 */
function agents(hold: ReturnType<typeof holdTool>) {
  const checkpointer = new MemoryCheckpointer();
  const calls = { count: 0 };
  const ask = defineTool({ name: 'ask', description: 'Asks', parameters: z.object({}), execute: () => 'asked' });
  const agent = (threadId: string) => {
    const respondTo = () => {
      calls.count++;
      return fauxMessage('answer');
    };
    const first = threadId.startsWith('hold')
      ? () => (calls.count++, fauxMessage([fauxToolCall('hold', {})]))
      : threadId.startsWith('ask')
        ? () => (calls.count++, fauxMessage([fauxToolCall('ask', {})]))
        : respondTo;
    return new Agent({
      provider: new FauxProvider({ responses: [first, respondTo, respondTo, respondTo] }),
      model: 'faux',
      tools: [hold.tool, ask],
      middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['ask'] }) })],
      checkpointer,
      threadId,
    });
  };
  return { agent, checkpointer, calls };
}

async function post(base: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const chatBody = (id: string) => ({
  id,
  messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
});
const agUiBody = (threadId: string) => ({
  threadId,
  runId: 'x',
  messages: [{ id: 'm1', role: 'user', content: 'hi' }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: {},
});

async function until(predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('createAgentServer with limits', () => {
  it('answers 429 too_many_runs with Retry-After on every route that starts work, and runs and stores nothing', async () => {
    const hold = holdTool();
    const { agent, checkpointer, calls } = agents(hold);
    const store = new MemoryLimitStore({ now: () => T0 });
    served = await serve({ agent, flushMs: 0, limits: { policy: { concurrentRuns: 1 }, store } });
    // A suspended run (its approval pending) holds no slot: it has ended.
    const asked = await collect(startRun(served.base, 'ask-1', 'go'));
    expect(asked.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'suspended' });
    await until(() => store.activeRuns('anonymous') === 0);
    const requestId = (asked.find((e) => e.type === 'approval_requested') as { requestId: string }).requestId;
    const held = await post(served.base, '/threads/hold-1/runs', { input: 'hold on' });
    expect(held.status).toBe(201);
    await hold.started;
    const before = { calls: calls.count, threads: await checkpointer.listThreads() };

    const refused = [
      ['POST /threads/:id/runs', await post(served.base, '/threads/t2/runs', { input: 'hi' })],
      [
        'POST /threads/:id/approvals/:rid',
        await post(served.base, `/threads/ask-1/approvals/${requestId}`, { approve: true }),
      ],
      ['POST /chat', await post(served.base, '/chat', chatBody('t3'))],
      ['POST /ag-ui', await post(served.base, '/ag-ui', agUiBody('t4'))],
    ] as const;
    for (const [route, response] of refused) {
      expect({ route, status: response.status, retryAfter: response.headers.get('retry-after') }).toEqual({
        route,
        status: 429,
        retryAfter: '1',
      });
      expect(await response.json()).toEqual({
        error: {
          code: 'too_many_runs',
          message: 'too many runs at once: 1 of 1 running; retry when one ends',
          limit: 'concurrentRuns',
          used: 1,
          allowed: 1,
          retryAfterMs: 1000,
        },
      });
    }
    // Nothing ran, nothing was stored: no model call, no new thread, the approval still pending.
    expect(calls.count).toBe(before.calls);
    expect(await checkpointer.listThreads()).toEqual(before.threads);
    expect((await getThread(served.base, 'ask-1')).pending.map((r) => r.requestId)).toEqual([requestId]);

    // The held run ends: its slot is free, and the approval's run is admitted.
    hold.release();
    await until(() => store.activeRuns('anonymous') === 0);
    const resumed = await collect(respond(served.base, 'ask-1', requestId, { approve: true }));
    expect(resumed.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });

  it('lets exactly concurrentRuns of simultaneous starts pass', async () => {
    const hold = holdTool();
    const { agent } = agents(hold);
    const store = new MemoryLimitStore({ now: () => T0 });
    served = await serve({ agent, flushMs: 0, limits: { policy: { concurrentRuns: 2 }, store } });
    const statuses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        post(served!.base, `/threads/hold-${i}/runs`, { input: 'x' }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
    hold.release();
  });

  describe.each(['sse', 'websocket'] as const)('cubepi/client over %s', (transport) => {
    it('errors with a LimitExceededError (rate_limited, retryable, retryAfterMs) over requestsPerMinute', async () => {
      const { agent } = agents(holdTool());
      const store = new MemoryLimitStore({ now: () => T0 });
      served = await serve({ agent, flushMs: 0, limits: { policy: { requestsPerMinute: 2 }, store } });
      const options = { transport, WebSocket };
      await collect(startRun(served.base, 't1', 'one', options));
      await collect(startRun(served.base, 't1', 'two', options));
      const error = await collect(startRun(served.base, 't1', 'three', options)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LimitExceededError);
      expect(error).toMatchObject({
        status: 429,
        code: 'rate_limited',
        limit: 'requestsPerMinute',
        retryable: true,
        retryAfterMs: 40_000,
        message: 'rate limited: 2 of 2 runs started this minute; retry in 40 s',
      });
      const raw = await post(served.base, '/threads/t1/runs', { input: 'four' });
      expect(raw.headers.get('retry-after')).toBe('40');
    });
  });

  it('stops a run that reaches the principal\u2019s dollars per day in mid-run, then refuses the next (budget_exceeded until midnight UTC)', async () => {
    const hold = holdTool();
    const priced = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 }; // dollars per million tokens
    const spend = (content: AssistantMessage['content']): AssistantMessage => ({
      ...fauxMessage(content),
      usage: computeUsage({ input: 300_000, output: 200_000 }, { cost: priced }), // $0.70
    });
    const provider = new FauxProvider({
      responses: [spend([fauxToolCall('hold', {})]), spend([{ type: 'text', text: 'never' }])],
    });
    const store = new MemoryLimitStore({ now: () => T0 });
    served = await serve({
      agent: (threadId) => new Agent({ provider, model: 'faux', tools: [hold.tool], threadId }),
      flushMs: 0,
      limits: { policy: { usdPerDay: 0.5 }, store },
    });
    const events = await collect(startRun(served.base, 't1', 'spend'));
    const end = events.at(-1) as Extract<AgentEvent, { type: 'agent_end' }>;
    expect(end).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    // The held tool saw its signal fire with the budget's reason; the second model call never happened.
    expect(hold.signals[0]?.aborted).toBe(true);
    expect(provider.callCount).toBe(1);
    const last = end.messages.at(-1) as AssistantMessage;
    expect(last).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    expect(last.errorMessage).toBe('Run aborted: budget exceeded: $0.7000 of $0.5 spent today (UTC); retry in 49480 s');
    const next = await post(served.base, '/threads/t1/runs', { input: 'again' });
    expect(next.status).toBe(429);
    expect(next.headers.get('retry-after')).toBe(String((Date.UTC(2026, 11, 3) - T0) / 1000));
    expect(await next.json()).toMatchObject({ error: { code: 'budget_exceeded', limit: 'usdPerDay' } });
  });

  it("stops a run whose sub-agents reach the principal's tokens per minute, cancelling the sub-agent still running", async () => {
    // Sub-agent b spends 300 tokens, then its second request hangs (its signal recorded); a answers once b hangs,
    // with 10,000 tokens: the principal's minute crosses 8,000 while b's request is in flight.
    const hung: AbortSignal[] = [];
    const hanging = deferred();
    const fauxB = new FauxProvider({
      responses: [{ ...fauxMessage([fauxToolCall('noop', {})]), usage: computeUsage({ input: 200, output: 100 }) }],
    });
    const b: Provider = {
      id: 'faux',
      stream: (model, messages, request): Observable<StreamEvent> => {
        if (fauxB.callCount < 1) return fauxB.stream(model, messages, request);
        return new Observable<StreamEvent>(() => {
          hung.push(request!.options!.signal!);
          hanging.resolve();
        });
      },
    };
    const fauxA = new FauxProvider({
      responses: [{ ...fauxMessage('spent a lot'), usage: computeUsage({ input: 5000, output: 5000 }) }],
    });
    const a: Provider = {
      id: 'faux',
      stream: (model, messages, request) =>
        new Observable<StreamEvent>((subscriber) => {
          let inner: { unsubscribe(): void } | undefined;
          void hanging.promise.then(() => (inner = fauxA.stream(model, messages, request).subscribe(subscriber)));
          return () => inner?.unsubscribe();
        }),
    };
    const noop = defineTool({ name: 'noop', description: 'Nothing', parameters: z.object({}), execute: () => 'ok' });
    const research = agentTool({
      name: 'research',
      description: 'Researches',
      createAgent: ({ toolCallId }) =>
        new Agent({ provider: toolCallId === 'a' ? a : b, model: 'faux', tools: [noop] }),
    });
    const parent = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('research', { prompt: 'one' }, { id: 'a' }),
          fauxToolCall('research', { prompt: 'two' }, { id: 'b' }),
        ]),
        fauxMessage('never asked for'),
      ],
    });
    const store = new MemoryLimitStore({ now: () => T0 });
    served = await serve({
      agent: (threadId) => new Agent({ provider: parent, model: 'faux', tools: [research], threadId }),
      flushMs: 0,
      limits: { policy: { tokensPerMinute: 8000 }, store },
    });
    const events: SequencedEvent[] = await collect(startRun(served.base, 't1', 'research'));
    expect(hung).toHaveLength(1);
    expect(hung[0]!.aborted).toBe(true);
    expect(parent.callCount).toBe(1);
    const end = events.at(-1) as Extract<AgentEvent, { type: 'agent_end' }>;
    expect(end.outcome).toBe('cancelled');
    expect(end.usage.totalTokens).toBeGreaterThanOrEqual(10_300);
    const results = end.messages.filter((m) => m.role === 'toolResult');
    expect(results).toHaveLength(2); // every call has its one result
    await until(() => store.activeRuns('anonymous') === 0);
    const next = await post(served.base, '/threads/t2/runs', { input: 'more' });
    expect(next.status).toBe(429);
    expect(await next.json()).toMatchObject({ error: { code: 'rate_limited', limit: 'tokensPerMinute' } });
  });

  it('releases the slot of a run cancelled by DELETE /runs/:id, and of one that failed to start', async () => {
    const hold = holdTool();
    const { agent } = agents(hold);
    const store = new MemoryLimitStore({ now: () => T0 });
    served = await serve({ agent, flushMs: 0, limits: { policy: { concurrentRuns: 1 }, store } });
    const started = (await (await post(served.base, '/threads/hold-1/runs', { input: 'x' })).json()) as {
      runId: string;
    };
    await hold.started;
    expect(store.activeRuns('anonymous')).toBe(1);
    expect((await fetch(`${served.base}/runs/${started.runId}`, { method: 'DELETE' })).status).toBe(202);
    await until(() => store.activeRuns('anonymous') === 0);
    // Refused by the agent (a resume with nothing to resume: invalid input): admitted, then released.
    const bad = await post(served.base, '/threads/t9/runs', { input: 42 });
    expect(bad.status).toBe(400);
    expect(store.activeRuns('anonymous')).toBe(0);
    expect((await post(served.base, '/threads/t9/runs', { input: 'fine' })).status).toBe(201);
  });

  it('gives each principal the limits of its tier, counts each apart, and audits every 429 (metrics, onAccessDenied)', async () => {
    const { agent } = agents(holdTool());
    const denied: AccessDenied[] = [];
    served = await serve({
      agent,
      flushMs: 0,
      authenticate: bearerToken({
        [FREE]: { id: 'free-user', claims: { tier: 'free' } },
        [PAID]: { id: 'paid-user', claims: { tier: 'paid' } },
        [ADMIN]: { id: 'admin', roles: ['admin'] },
      }),
      onAccessDenied: (d) => denied.push(d),
      limits: {
        policy: (principal) =>
          principal.roles?.includes('admin') === true
            ? undefined
            : principal.claims?.tier === 'paid'
              ? { requestsPerMinute: 3 }
              : { requestsPerMinute: 1 },
        store: new MemoryLimitStore({ now: () => T0 }),
      },
    });
    const start = (token: string, thread: string) =>
      fetch(`${served!.base}/threads/${thread}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ input: 'hi' }),
      }).then((r) => r.status);
    const statuses: Record<string, number[]> = { free: [], paid: [], admin: [] };
    for (let i = 0; i < 4; i++) {
      statuses.free!.push(await start(FREE, `free-${i}`));
      statuses.paid!.push(await start(PAID, `paid-${i}`));
      statuses.admin!.push(await start(ADMIN, `admin-${i}`));
    }
    expect(statuses).toEqual({ free: [201, 429, 429, 429], paid: [201, 201, 201, 429], admin: [201, 201, 201, 201] });
    expect(served.server.metrics()).toMatchObject({ limited: 4 });
    expect(denied.map((d) => [d.principal?.id, d.action, d.status, d.resource])).toEqual([
      ['free-user', 'start_run', 429, { type: 'thread', threadId: 'free-1', owner: undefined }],
      ['free-user', 'start_run', 429, { type: 'thread', threadId: 'free-2', owner: undefined }],
      ['free-user', 'start_run', 429, { type: 'thread', threadId: 'free-3', owner: undefined }],
      ['paid-user', 'start_run', 429, { type: 'thread', threadId: 'paid-3', owner: undefined }],
    ]);
  });
});
