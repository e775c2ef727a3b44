// The agent server and client over real sockets: SSE and WebSocket streams equal the run in process, resumes after
// cuts at random points lose and repeat nothing, unsubscribing a started run cancels it on the server (the model's
// HTTP server sees its socket close), as does unsubscribing a resumed one (resumeThread: its stream closes mid-run,
// the model request is aborted or the running tool signalled, nothing more arrives), a watcher leaving does not, and
// bad requests are refused before anything runs.
import { from, lastValueFrom, take, toArray, type Observable } from 'rxjs';
import { createConnection, type Socket } from 'node:net';
import OpenAI from 'openai';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, MemoryCheckpointer, ToolGuard, type AgentEvent } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import {
  AgentServerError,
  fromAgentEvents,
  getThread,
  respond,
  resumeThread,
  runEventsUrl,
  startRun,
  type SequencedEvent,
} from 'cubepi/client';
import { textDeltas } from 'cubepi/operators';
import { OpenAIProvider } from 'cubepi/providers/openai';
import { recordingBodies } from '../providers/recordings.js';
import { ReplayServer } from '../providers/replay-server.js';
import { agentFactory, ANSWER, lookup, scriptedProvider, serve, type Served } from './serve-helpers.js';
import { cuttingFetch, random } from '../cutting-fetch.js';
import { waitingTool } from '../helpers.js';

const JSON_TYPE = { 'content-type': 'application/json' };

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const collect = <T>(source: Observable<T>) => lastValueFrom(source.pipe(toArray()));

const ID_KEYS = new Set(['id', 'toolCallId', 'invocationId', 'attemptId', 'requestId', 'eventId', 'runId']);

/**
 * What a run is, independent of ids, clocks and how deltas were grouped: its events without deltas and `seq`, each
 * id replaced by the order it first appeared in, timestamps zeroed.
 */
function shape(events: readonly AgentEvent[]): unknown[] {
  const ids = new Map<string, string>();
  return events
    .filter((e) => e.type !== 'message_update')
    .map(
      (e) =>
        JSON.parse(
          JSON.stringify(e, (key, value: unknown) => {
            if (key === 'seq') return undefined;
            if (key === 'timestamp') return 0;
            // agent_end.execution.checkpoint: the served agent stores its thread, an agent in process may not.
            if (key === 'checkpoint' && typeof value === 'string') return undefined;
            if (ID_KEYS.has(key) && typeof value === 'string') {
              if (!ids.has(value)) ids.set(value, `id${ids.size}`);
              return ids.get(value);
            }
            return value;
          }),
        ) as unknown,
    );
}

/** The text the run streamed, from its deltas. */
const textOf = (events: readonly AgentEvent[]) => collect(from(events).pipe(textDeltas())).then((t) => t.join(''));

function expectDense(events: readonly SequencedEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
}

describe.each(['sse', 'websocket'] as const)('a run over %s', (transport) => {
  const options = { transport, WebSocket };

  it('equals the same run consumed in process: same events in the same order, same text', async () => {
    const factory = agentFactory();
    served = await serve({ agent: factory.agent, flushMs: 5 });
    const remote = await collect(startRun(served.base, 't1', 'Define cube', options));

    const local = await collect(
      new Agent({ provider: scriptedProvider(), model: 'faux', tools: [lookup] }).prompt$('Define cube'),
    );
    expect(shape(remote)).toEqual(shape(local));
    expect(await textOf(remote)).toBe(await textOf(local));
    expect(await textOf(remote)).toContain(ANSWER);
    expect(remote.at(-1)).toMatchObject({ type: 'agent_end', execution: { checkpoint: 'committed' } });
    expectDense(remote);
    expect(remote.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });
});

/** A WebSocket (the `ws` package's) that drops its connection abruptly after a random number of messages. */
function cuttingWebSocket(next: () => number, connections: { count: number }) {
  return class {
    onmessage: ((event: { data: unknown }) => void) | null = null;
    onclose: ((event: { code: number }) => void) | null = null;
    onerror: ((event: unknown) => void) | null = null;
    private readonly socket: WebSocket;
    constructor(url: string) {
      connections.count++;
      const keep = 1 + Math.floor(next() * 60);
      let received = 0;
      this.socket = new WebSocket(url);
      this.socket.onmessage = (event) => {
        received++;
        if (received <= keep) this.onmessage?.({ data: event.data });
        else if (received === keep + 1) this.socket.terminate();
      };
      this.socket.onclose = (event) => this.onclose?.({ code: event.code });
      this.socket.onerror = () => undefined;
    }
    close(code?: number) {
      this.socket.close(code);
    }
  };
}

describe('resuming after a broken connection', () => {
  const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

  it.each(SEEDS)('SSE, seed %i: every event once, in order, the whole text', async (seed) => {
    const factory = agentFactory({}, 1, 40);
    served = await serve({ agent: factory.agent, flushMs: 0 });
    const connections = { count: 0 };
    const events = await collect(
      startRun(served.base, 't1', 'Define cube', {
        fetch: cuttingFetch(random(seed), connections, 30_000),
        retry: { initialDelayMs: 1, maxDelayMs: 5, maxAttempts: 1000 },
      }),
    );
    expect(connections.count).toBeGreaterThan(1);
    expectDense(events);
    expect(await textOf(events)).toContain(ANSWER);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    // The same events as a client that never broke sees.
    const whole = await collect(fromAgentEvents(runEventsUrl(served.base, events[0]!.runId)));
    expect(events).toEqual(whole);
  });

  it.each(SEEDS)('WebSocket, seed %i: every event once, in order, the whole text', async (seed) => {
    const factory = agentFactory({}, 1, 40);
    served = await serve({ agent: factory.agent, flushMs: 0 });
    const connections = { count: 0 };
    const events = await collect(
      startRun(served.base, 't1', 'Define cube', {
        transport: 'websocket',
        WebSocket: cuttingWebSocket(random(seed), connections),
        retry: { initialDelayMs: 1, maxDelayMs: 5, maxAttempts: 1000 },
      }),
    );
    expect(connections.count).toBeGreaterThan(1);
    expectDense(events);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    const whole = await collect(fromAgentEvents(runEventsUrl(served.base, events[0]!.runId)));
    expect(events).toEqual(whole);
  });

  it('a reconnect that lands after the run ended gets what it missed, then the end', async () => {
    const runId = await postRun();
    const url = runEventsUrl(served!.base, runId);
    // Read the first 5 events, then leave while the run goes on.
    const first = await collect(fromAgentEvents(url).pipe(take(5)));
    await waitFor(() => served!.server.registry.log(runId)!.ended);
    const rest = await collect(fromAgentEvents(url, { after: first.at(-1)!.seq }));
    const all = [...first, ...rest];
    expectDense(all);
    expect(all).toEqual(await collect(fromAgentEvents(url)));
    expect(rest.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });
});

/** Serves a slow scripted agent and starts a run on thread t1 with a bare POST (no client that could cancel it). */
async function postRun(): Promise<string> {
  served = await serve({ agent: agentFactory({}, 1, 40).agent, flushMs: 0 });
  const post = await fetch(`${served.base}/threads/t1/runs`, {
    method: 'POST',
    headers: JSON_TYPE,
    body: JSON.stringify({ input: 'Hi' }),
  });
  return ((await post.json()) as { runId: string }).runId;
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(condition()).toBe(true);
}

describe('a new client joining mid-run', () => {
  it('from any seq, even inside a streaming message, gets exactly the events after it, snapshots whole', async () => {
    const runId = await postRun();
    await waitFor(() => served!.server.registry.log(runId)!.ended);
    const url = runEventsUrl(served!.base, runId);
    const whole = await collect(fromAgentEvents(url));
    const updates = whole.filter((e) => e.type === 'message_update').map((e) => e.seq);
    // Inside the answer's stream of deltas, where the server sends compact updates to a client that has the message.
    for (const after of [updates[3]!, updates[Math.floor(updates.length / 2)]!, updates.at(-2)!]) {
      expect(await collect(fromAgentEvents(url, { after }))).toEqual(whole.slice(after));
    }
  });

  it('a client that stops reading blocks neither the run nor another client, and still gets everything later', async () => {
    // ~20 MB on the wire (the answer, then in message_end, turn_end and agent_end): far more than the kernel's socket
    // buffers hold, so the server's writes to the stalled connection meet back-pressure.
    const big = 'y'.repeat(5_000_000);
    served = await serve({
      agent: () =>
        new Agent({
          provider: new FauxProvider({ responses: [fauxMessage(big)], chunkSize: 5000, delayMs: 1 }),
          model: 'faux',
        }),
      flushMs: 0,
    });
    const post = await fetch(`${served.base}/threads/t1/runs`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: '{"input":"Hi"}',
    });
    const { runId } = (await post.json()) as { runId: string };
    const url = new URL(runEventsUrl(served.base, runId));
    const stalled = createConnection({ host: url.hostname, port: Number(url.port) });
    stalled.pause();
    stalled.write(`GET ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
    const events = await collect(fromAgentEvents(url.toString()));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await textOf(events)).toBe(big);
    // The stalled client, reading at last, gets the whole stream to its end frame.
    const tail = await new Promise<string>((resolve, reject) => {
      let last = '';
      stalled.on('data', (chunk: Buffer) => {
        last = (last + chunk.toString('latin1')).slice(-200);
        if (last.includes('event: end')) resolve(last);
      });
      stalled.on('error', reject);
      stalled.resume();
    });
    expect(tail).toContain(`"type":"run_end","runId":"${runId}"`);
    stalled.destroy();
  });
});

describe('cancelling', () => {
  let model: ReplayServer | undefined;
  afterEach(() => model?.close());

  /** An agent whose model (the OpenAI SDK against a local server) streams some text and then stalls. */
  async function stallingAgents(checkpointer?: MemoryCheckpointer) {
    model = await ReplayServer.start();
    const body = recordingBodies('openai-chat', 'text-with-usage.openai-python.sse')[0]!;
    const events = body.split('\n\n').filter((e) => e.trim() !== '');
    for (let i = 0; i < 4; i++) model.reply({ kind: 'stall', body: `${events.slice(0, 4).join('\n\n')}\n\n` });
    const provider = new OpenAIProvider({
      client: new OpenAI({ apiKey: 'k', baseURL: `${model.url}/v1`, maxRetries: 0, logLevel: 'off' }),
    });
    return (threadId: string) =>
      new Agent({
        provider,
        model: { id: 'gpt-4o', provider: 'openai' },
        threadId,
        ...(checkpointer && { checkpointer }),
      });
  }

  it.each(['sse', 'websocket'] as const)(
    'unsubscribing a started run (%s) cancels it on the server: the model request is aborted, the run ends cancelled',
    async (transport) => {
      served = await serve({ agent: await stallingAgents(), flushMs: 0 });
      const seen: SequencedEvent[] = [];
      const subscription = startRun(served.base, 't1', 'Hi', { transport, WebSocket }).subscribe((e) => seen.push(e));
      await waitFor(() => seen.some((e) => e.type === 'message_update'));
      subscription.unsubscribe();
      expect(await model!.requests[0]!.closed).toEqual({ finished: false });
      const runId = seen[0]!.runId;
      await waitFor(() => served!.server.registry.log(runId)!.ended);
      const all = await collect(fromAgentEvents(runEventsUrl(served.base, runId)));
      expect(all.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
      // Nothing after unsubscribing: by now the run has ended and a whole replay of it has come back, so events still
      // flowing to the left subscriber would have reached it; what it saw is a prefix of the run, without its end.
      expect(seen).toEqual(all.slice(0, seen.length));
      expect(seen.some((e) => e.type === 'agent_end')).toBe(false);
    },
  );

  /** A thread `t1` whose stored history ends with a user message: something for `resumeThread` to continue. */
  function waitingThread(): MemoryCheckpointer {
    const checkpointer = new MemoryCheckpointer();
    void checkpointer.append('t1', [{ role: 'user', content: 'Hi', timestamp: 1 }]);
    return checkpointer;
  }

  /**
   * `resumeThread` on thread `t1` of `served`, its `DELETE /runs/:id` held until the server saw the client's event
   * stream close: a close the server sees before the run ended was the client's, not the end of the run.
   */
  function resumeWatched(transport: 'sse' | 'websocket') {
    const seen: SequencedEvent[] = [];
    let runEndedAtClose: boolean | undefined;
    const streamClosed = new Promise<void>((resolve) => {
      const watch = (url: string | undefined, closable: { once(event: 'close', listener: () => void): unknown }) => {
        const runId = /^\/runs\/([^/?]+)\/events/.exec(url ?? '')?.[1];
        if (runId === undefined) return;
        closable.once('close', () => {
          runEndedAtClose = served!.server.registry.log(decodeURIComponent(runId))!.ended;
          resolve();
        });
      };
      served!.http.on('request', (request, response) => watch(request.url, response));
      served!.http.on('upgrade', (request, socket: Socket) => watch(request.url, socket));
    });
    const heldFetch: typeof fetch = (input, init) =>
      init?.method === 'DELETE' ? streamClosed.then(() => fetch(input, init)) : fetch(input, init);
    const subscription = resumeThread(served!.base, 't1', { transport, WebSocket, fetch: heldFetch }).subscribe({
      next: (event) => seen.push(event),
      error: () => undefined,
    });
    return { seen, subscription, streamClosed, runEndedAtClose: () => runEndedAtClose };
  }

  it.each(['sse', 'websocket'] as const)(
    'unsubscribing a resumed run (resumeThread, %s) closes its stream and cancels it: the model request is aborted',
    async (transport) => {
      const checkpointer = waitingThread();
      served = await serve({ agent: await stallingAgents(checkpointer), checkpointer, flushMs: 0 });
      const { seen, subscription, streamClosed, runEndedAtClose } = resumeWatched(transport);
      await waitFor(() => seen.some((e) => e.type === 'message_update'));
      subscription.unsubscribe();
      await streamClosed;
      expect(runEndedAtClose()).toBe(false); // the client closed it, mid-run
      expect(await model!.requests[0]!.closed).toEqual({ finished: false });
      const runId = seen[0]!.runId;
      await waitFor(() => served!.server.registry.log(runId)!.ended);
      const all = await collect(fromAgentEvents(runEventsUrl(served.base, runId)));
      expect(all.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
      // Nothing after unsubscribing: the run's closing events, on the server since, never reached this subscriber.
      expect(seen.length).toBeLessThan(all.length);
      expect(seen).toEqual(all.slice(0, seen.length));
      expect(seen.some((e) => e.type === 'agent_end')).toBe(false);
    },
  );

  it.each(['sse', 'websocket'] as const)(
    "unsubscribing a resumed run (resumeThread, %s) while its tool runs fires the tool's signal; the run ends cancelled",
    async (transport) => {
      const checkpointer = waitingThread();
      const tool = waitingTool();
      served = await serve({
        checkpointer,
        flushMs: 0,
        agent: (threadId) =>
          new Agent({
            provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('wait', {})]), fauxMessage('never')] }),
            model: 'faux',
            tools: [tool.tool],
            checkpointer,
            threadId,
          }),
      });
      const { seen, subscription, streamClosed, runEndedAtClose } = resumeWatched(transport);
      const signal = await tool.started;
      await waitFor(() => seen.some((e) => e.type === 'tool_execution_start'));
      expect(signal.aborted).toBe(false);
      subscription.unsubscribe();
      await streamClosed;
      expect(runEndedAtClose()).toBe(false);
      await tool.aborted; // the server cancelled the run once the client left
      const runId = seen[0]!.runId;
      await waitFor(() => served!.server.registry.log(runId)!.ended);
      const all = await collect(fromAgentEvents(runEventsUrl(served.base, runId)));
      expect(all.find((e) => e.type === 'tool_execution_end')).toMatchObject({ outcome: 'aborted' });
      expect(all.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
      expect(seen).toEqual(all.slice(0, seen.length));
      expect(seen.some((e) => e.type === 'tool_execution_end' || e.type === 'agent_end')).toBe(false);
    },
  );

  it('a watcher leaving does not cancel the run', async () => {
    const runId = await postRun();
    await collect(fromAgentEvents(runEventsUrl(served!.base, runId)).pipe(take(3)));
    await waitFor(() => served!.server.registry.log(runId)!.ended);
    const all = await collect(fromAgentEvents(runEventsUrl(served!.base, runId)));
    expect(all.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });
});

describe('refusals: nothing runs', () => {
  const token = 'a-secret-token-of-32-characters!';

  it('a missing or wrong token gets 401 on every route, SSE and WebSocket', async () => {
    const factory = agentFactory();
    served = await serve({ agent: factory.agent, authToken: token });
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${token}x` }]) {
      for (const [method, path] of [
        ['POST', '/threads/t1/runs'],
        ['GET', '/threads/t1'],
        ['GET', '/threads'],
        ['GET', '/runs/r1/events'],
        ['DELETE', '/runs/r1'],
        ['POST', '/threads/t1/approvals/a1'],
      ] as const) {
        const response = await fetch(`${served.base}${path}`, {
          method,
          headers,
          ...(method === 'POST' ? { body: JSON.stringify({ input: 'Hi' }) } : {}),
        });
        expect([method, path, response.status]).toEqual([method, path, 401]);
      }
    }
    const socket = new WebSocket(`${served.base.replace('http', 'ws')}/runs/r1/events`);
    const status = await new Promise<number>((resolve) =>
      socket.on('unexpected-response', (_, res) => resolve(res.statusCode!)),
    );
    expect(status).toBe(401);
    expect(factory.created).toEqual([]);
    // The right token works, as a header or a query parameter.
    const ok = await collect(startRun(served.base, 't1', 'Hi', { token }));
    expect(ok.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect((await fetch(`${served.base}/threads/t1?access_token=${token}`)).status).toBe(200);
  });

  it('a body over the limit gets 413, by its Content-Length or as it streams', async () => {
    const factory = agentFactory();
    served = await serve({ agent: factory.agent, maxBodyBytes: 1000 });
    const big = JSON.stringify({ input: 'x'.repeat(2000) });
    expect(
      (await fetch(`${served.base}/threads/t1/runs`, { method: 'POST', headers: JSON_TYPE, body: big })).status,
    ).toBe(413);
    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode(big.slice(i * 500, (i + 1) * 500)));
        controller.close();
      },
    });
    const init: RequestInit = { method: 'POST', headers: JSON_TYPE, body: streamed, duplex: 'half' };
    const response = await fetch(`${served.base}/threads/t1/runs`, init);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'body_too_large' } });
    expect(factory.created).toEqual([]);
  });

  it('an invalid thread id, bad JSON or a missing input gets 400; a busy thread 409', async () => {
    const factory = agentFactory({}, 2, 40);
    served = await serve({ agent: factory.agent });
    const post = (path: string, body: string) =>
      fetch(`${served!.base}${path}`, { method: 'POST', headers: JSON_TYPE, body });
    expect((await post('/threads/%00/runs', '{"input":"Hi"}')).status).toBe(400);
    expect((await post(`/threads/${'x'.repeat(600)}/runs`, '{"input":"Hi"}')).status).toBe(400);
    expect((await post('/threads/%E0%A4%A/runs', '{"input":"Hi"}')).status).toBe(400);
    expect((await post('/threads/t1/runs', '{"input":')).status).toBe(400);
    expect((await post('/threads/t1/runs', '{}')).status).toBe(400);
    expect(factory.created).toEqual([]);
    expect((await post('/threads/t1/runs', '{"input":"Hi"}')).status).toBe(201);
    const busy = await post('/threads/t1/runs', '{"input":"Again"}');
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error: { code: 'agent_busy' } });
    await expect(collect(startRun(served.base, 't1', 'Again'))).rejects.toBeInstanceOf(AgentServerError);
  });
});

describe('approvals from the client', () => {
  it('a guarded call suspends the run; respond() resumes it with the answer, and getThread shows the pending request', async () => {
    const factory = agentFactory({ middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })] });
    served = await serve({ agent: factory.agent, flushMs: 0 });
    const first = await collect(startRun(served.base, 't1', 'Define cube'));
    const asked = first.find((e) => e.type === 'approval_requested');
    expect(asked).toBeDefined();
    expect(first.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'suspended' });
    const thread = await getThread(served.base, 't1');
    expect(thread.pending.map((p) => p.toolName)).toEqual(['lookup']);
    expect(thread.activeRunId).toBeNull();
    const requestId = (asked as { requestId: string }).requestId;
    const resumed = await collect(respond(served.base, 't1', requestId, { approve: true }));
    expect(resumed.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await textOf(resumed)).toContain(ANSWER);
    // Answered already: refused, nothing runs.
    await expect(collect(respond(served.base, 't1', requestId, { approve: true }))).rejects.toMatchObject({
      status: 409,
    });
  });
});

describe('hostile requests', () => {
  it('a host header that makes no URL gets 400 and the server goes on', async () => {
    served = await serve({ agent: agentFactory().agent });
    const url = new URL(served.base);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = createConnection({ host: url.hostname, port: Number(url.port) });
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
      socket.write('POST /threads/t1/runs HTTP/1.1\r\nhost: a b\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect((await fetch(`${served.base}/threads/t1`)).status).toBe(200);
  });
});
