// The access matrix on createAgentServer (agents in this process): every route × {no credentials, another principal,
// the owner, the owner over a limit} over the Node adapters (SSE and WebSocket) and the Fetch handler; then the audit of those denials.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, MemoryCheckpointer, ToolGuard, type Message } from 'cubepi';
import {
  attachWebSocket,
  bearerToken,
  createAgentServer,
  MemoryLimitStore,
  toNodeListener,
  type AccessDenied,
  type AgentServer,
} from 'cubepi/server';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { headers, MATRIX, OVER_LIMIT, PRINCIPALS, type Harness } from './access-matrix.js';

const LONG = 'x'.repeat(4000);

function lastPrompt(messages: readonly Message[]): string {
  const user = messages.findLast((m) => m.role === 'user');
  return typeof user?.content === 'string' ? user.content : '';
}

/**
 * Alice's agents: "live" streams for a long time, "ask" suspends on a guarded call, anything else answers at once.
 * Each run makes one model call, counted per thread in `calls`.
 */
function agentFor(checkpointer: MemoryCheckpointer, calls: Map<string, number>) {
  const ask = defineTool({
    name: 'ask',
    description: 'needs approval',
    parameters: z.object({}),
    execute: () => 'asked',
  });
  return (threadId: string) =>
    new Agent({
      provider: new FauxProvider({
        delayMs: 5,
        chunkSize: 2,
        responses: Array.from({ length: 8 }, () => (messages: readonly Message[]) => {
          calls.set(threadId, (calls.get(threadId) ?? 0) + 1);
          if (messages.at(-1)?.role === 'toolResult') return fauxMessage('after approval');
          const prompt = lastPrompt(messages);
          if (prompt.startsWith('ask')) return fauxMessage([fauxToolCall('ask', {}, { id: `c${messages.length}` })]);
          return fauxMessage(prompt.startsWith('live') ? LONG : 'ok');
        }),
      }),
      model: 'faux',
      tools: [ask],
      checkpointer,
      threadId,
      middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['ask'] }) })],
    });
}

describe('createAgentServer: every route × every caller', () => {
  let server: AgentServer;
  let http: Server;
  let harness: Harness;
  const denied: AccessDenied[] = [];
  const calls = new Map<string, number>();

  beforeAll(async () => {
    const checkpointer = new MemoryCheckpointer();
    server = createAgentServer({
      agent: agentFor(checkpointer, calls),
      checkpointer,
      heartbeatMs: 1000,
      authenticate: bearerToken(PRINCIPALS),
      limits: { policy: OVER_LIMIT, store: new MemoryLimitStore() },
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
      frontEnds: true,
      metrics: () => server.metrics(),
      runsOf: (threadId) => Promise.resolve(calls.get(threadId) ?? 0),
      liveRun: (threadId) => start(threadId, 'live'),
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
    server.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });

  let n = 0;
  it.each(MATRIX)('%s — %s', async (_route, caller, routeCase) => {
    await routeCase.run(harness, caller, `t-${caller}-${++n}`);
  });

  it('counted and reported every denial with principal, action and resource, never message content', () => {
    const metrics = harness.metrics();
    expect(metrics.unauthenticated).toBe(denied.filter((d) => d.status === 401).length);
    expect(metrics.forbidden).toBe(denied.filter((d) => d.status === 404).length);
    expect(metrics.limited).toBe(denied.filter((d) => d.status === 429).length);
    expect(metrics.unauthenticated).toBeGreaterThan(0);
    expect(metrics.forbidden).toBeGreaterThan(0);
    // The over-limit column: one refusal per route that starts work (a prompt, an answer, /chat, /ag-ui).
    expect(denied.filter((d) => d.status === 429).map((d) => d.action)).toEqual([
      'start_run',
      'answer_approval',
      'chat',
      'ag_ui',
    ]);
    for (const event of denied) {
      if (event.status === 401)
        expect(event).toEqual({ principal: undefined, action: undefined, resource: undefined, status: 401 });
      else if (event.status === 429) expect(event.principal).toEqual({ id: 'alice', roles: ['spent'] });
      else {
        expect(event.principal).toEqual({ id: 'bob' });
        expect(event.action).toEqual(expect.any(String));
        expect(event.resource).toMatchObject({ owner: 'alice' });
      }
    }
    const actions = new Set(denied.map((d) => d.action));
    for (const action of ['start_run', 'read_thread', 'watch_run', 'cancel_run', 'answer_approval', 'chat', 'ag_ui']) {
      expect(actions).toContain(action);
    }
    expect(JSON.stringify(denied)).not.toMatch(/hello|ask please|live|more|after approval/);
  });
});
