// The Node adapters make the same access decision as the server's fetch: toNodeListener's fan-out route and
// attachWebSocket's upgrades run authenticate and authorize, and a fetch the application wrapped (to deny a caller)
// decides on them too. Each adapter: a denied caller gets nothing, an allowed one gets the run.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, MemoryCheckpointer } from 'cubepi';
import {
  attachWebSocket,
  bearerToken,
  createAgentServer,
  toNodeListener,
  type AgentServer,
  type Authorize,
  type HttpAgentServer,
} from 'cubepi/server';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { headers, openSocket, TOKENS } from './access-matrix.js';

let http: Server | undefined;
let server: AgentServer | undefined;
afterEach(async () => {
  server?.close();
  http?.closeAllConnections();
  if (http !== undefined) await new Promise<void>((resolve) => http!.close(() => resolve()));
  http = server = undefined;
});

async function mount(authorize?: Authorize, wrap?: (inner: HttpAgentServer) => HttpAgentServer) {
  const checkpointer = new MemoryCheckpointer();
  server = createAgentServer({
    agent: (threadId) =>
      new Agent({
        provider: new FauxProvider({ chunkSize: 3, responses: [fauxMessage('a fairly long answer, in frames')] }),
        model: 'faux',
        checkpointer,
        threadId,
      }),
    checkpointer,
    authenticate: bearerToken({ [TOKENS.alice]: 'alice', [TOKENS.bob]: 'bob' }),
    ...(authorize === undefined ? {} : { authorize }),
  });
  const served = wrap === undefined ? server : wrap(server);
  http = createServer(toNodeListener(served));
  await attachWebSocket(http, served);
  await new Promise<void>((resolve) => http!.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const started = await fetch(`${base}/threads/t1/runs`, {
    method: 'POST',
    headers: headers('owner', { 'content-type': 'application/json' }),
    body: JSON.stringify({ input: 'hi' }),
  });
  const { runId } = (await started.json()) as { runId: string };
  return { base, runId };
}

describe('the Node adapters decide as fetch does', () => {
  it('a fetch wrapped to deny a caller: the SSE route and the WebSocket upgrade give that caller nothing', async () => {
    // The application's own rule, in front of the server: bob is refused everything with 403.
    const { base, runId } = await mount(undefined, (inner) => ({
      ...inner,
      fetch: (request) =>
        request.headers.get('authorization') === `Bearer ${TOKENS.bob}` ||
        new URL(request.url).searchParams.get('access_token') === TOKENS.bob
          ? Promise.resolve(new Response('no', { status: 403 }))
          : inner.fetch(request),
    }));
    const denied = await fetch(`${base}/runs/${runId}/events`, { headers: headers('other') });
    expect(denied.status).toBe(403);
    expect(await denied.text()).toBe('no');
    expect(await openSocket(base, runId, 'other')).toEqual({ status: 403, frames: [] });
    const allowed = await fetch(`${base}/runs/${runId}/events`, { headers: headers('owner') });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('event: end');
    const socket = await openSocket(base, runId, 'owner');
    expect(socket.status).toBe(101);
    expect(socket.frames.length).toBeGreaterThan(0);
  });

  it("authorize refusing the owner's own watch: both adapters answer 404 and send no frame", async () => {
    const asked: string[] = [];
    const { base, runId } = await mount((principal, action, resource) => {
      asked.push(action);
      return action !== 'watch_run' && resource.owner !== null && principal.id === 'alice';
    });
    const sse = await fetch(`${base}/runs/${runId}/events`, { headers: headers('owner') });
    expect(sse.status).toBe(404);
    expect(await sse.text()).not.toContain('agent_start');
    expect(await openSocket(base, runId, 'owner')).toEqual({ status: 404, frames: [] });
    expect(asked.filter((action) => action === 'watch_run')).toHaveLength(2);
    expect(server!.metrics().forbidden).toBe(2);
  });

  it('no credentials: both adapters answer 401 before anything is looked up', async () => {
    const { base, runId } = await mount();
    const sse = await fetch(`${base}/runs/${runId}/events`);
    expect(sse.status).toBe(401);
    expect(await openSocket(base, runId, 'none')).toEqual({ status: 401, frames: [] });
    expect(server!.metrics().unauthenticated).toBe(2);
  });
});
