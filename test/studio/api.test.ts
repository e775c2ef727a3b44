// The studio's JSON API (`createStudio` over a real SQLite checkpointer, a real agent server and a JSONL trace file
// written by traceAgent through the OpenTelemetry SDK): authentication as the agent server's (401 without a token),
// each thread checked per principal (another's is 404, like a missing one), search over id and title, forks listed
// under their parent, runs read from the trace file, the agent server's routes forwarded, Host checked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { startRun } from 'cubepi/client';
import { bearerToken, createAgentServer, type AgentServer } from 'cubepi/server';
import {
  createStudio,
  createTraceReader,
  type Studio,
  type StudioConfig,
  type StudioRunList,
  type StudioThread,
  type StudioThreadPage,
} from 'cubepi/studio';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { traceAgent } from 'cubepi/tracing';
import { JsonlSpanExporter } from 'cubepi/tracing/jsonl';
import { serve, type Served } from '../server/serve-helpers.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

describe('createStudio: the studio-api routes', () => {
  let dir = '';
  let checkpointer: SQLiteCheckpointer;
  let server: AgentServer;
  let served: Served;
  let studio: Studio;
  let traceFile = '';
  let tracedRun = '';

  const get = async (path: string, token?: string, host = '127.0.0.1') =>
    studio.fetch(
      new Request(`http://${host}${path}`, {
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      }),
    );
  const body = async <T>(path: string, token: string): Promise<T> => {
    const response = await get(path, token);
    expect(response.status, path).toBe(200);
    return (await response.json()) as T;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cubepi-studio-api-'));
    checkpointer = new SQLiteCheckpointer(join(dir, 'threads.db'));
    const agent = (threadId: string) =>
      new Agent({
        provider: new FauxProvider({ responses: Array.from({ length: 10 }, () => fauxMessage('An answer.')) }),
        model: 'faux',
        checkpointer,
        threadId,
      });
    const options = { agent, checkpointer, authenticate: bearerToken({ [ALICE]: 'alice', [BOB]: 'bob' }) };
    served = await serve(options);
    server = createAgentServer({ ...options, basePath: '/api' });
    await lastValueFrom(startRun(served.base, 'alpha', 'How do I bake bread?', { token: ALICE }).pipe(toArray()));
    await lastValueFrom(startRun(served.base, 'secret', 'Bob only: bread too', { token: BOB }).pipe(toArray()));
    await checkpointer.fork('alpha', { atSeq: 1, newThreadId: 'alpha-fork' });

    // One traced run on alpha, one on secret, written by the vendor's SDK into the JSONL file.
    traceFile = join(dir, 'traces.jsonl');
    const exporter = new JsonlSpanExporter(traceFile);
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer('cubepi');
    for (const threadId of ['alpha', 'secret']) {
      const traced = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('traced')] }), model: 'faux' });
      traced.events$.subscribe((event) => {
        if (event.type === 'agent_start' && threadId === 'alpha') tracedRun = event.runId;
      });
      traceAgent(traced, { tracer, threadId });
      await traced.prompt('traced prompt');
    }
    await provider.forceFlush();
    await exporter.forceFlush();
    studio = createStudio({ checkpointer, server, traceFile });
  }, 60_000);

  afterAll(async () => {
    server.close();
    await served.close();
    await checkpointer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 401 without credentials, and serves the page (which carries no data) to anyone', async () => {
    for (const path of ['/studio-api/threads', '/studio-api/threads/alpha', '/studio-api/config']) {
      const response = await get(path);
      expect(response.status, path).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    expect((await get('/studio-api/threads', 'not-a-token-at-all-x')).status).toBe(401);
    const page = await get('/');
    expect([200, 500]).toContain(page.status);
    if (page.status === 200) expect(page.headers.get('content-type')).toContain('text/html');
  });

  it("lists only the principal's threads, newest first, a fork with its parent", async () => {
    const alice = await body<StudioThreadPage>('/studio-api/threads', ALICE);
    expect(alice.threads.map((thread) => thread.threadId)).toEqual(['alpha-fork', 'alpha']);
    const [fork, alpha] = alice.threads;
    expect(alpha!.title).toBe('How do I bake bread?');
    expect(alpha!.messageCount).toBe(2);
    expect(alpha!.parent).toBeUndefined();
    expect(fork!.parent).toEqual({ threadId: 'alpha', atSeq: 1 });
    const bob = await body<StudioThreadPage>('/studio-api/threads', BOB);
    expect(bob.threads.map((thread) => thread.threadId)).toEqual(['secret']);
  });

  it('searches thread ids and titles, case-insensitively, within what the principal may see', async () => {
    const bread = await body<StudioThreadPage>('/studio-api/threads?q=BREAD', ALICE);
    // alpha-fork keeps alpha's first message, so its title matches too; Bob's "bread" thread is not Alice's.
    expect(bread.threads.map((thread) => thread.threadId)).toEqual(['alpha-fork', 'alpha']);
    const byId = await body<StudioThreadPage>('/studio-api/threads?q=fork', ALICE);
    expect(byId.threads.map((thread) => thread.threadId)).toEqual(['alpha-fork']);
    const none = await body<StudioThreadPage>('/studio-api/threads?q=secret', ALICE);
    expect(none.threads).toEqual([]);
    const paged = await body<StudioThreadPage>('/studio-api/threads?q=a&limit=1', ALICE);
    expect(paged.threads.map((thread) => thread.threadId)).toEqual(['alpha-fork']);
    expect(paged.next).not.toBeNull();
  });

  it('opens a thread with its messages, forks, and live state from the agent server', async () => {
    const alpha = await body<StudioThread>('/studio-api/threads/alpha', ALICE);
    expect(alpha.seq).toBe(2);
    expect(alpha.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(alpha.forks).toEqual([{ threadId: 'alpha-fork', atSeq: 1 }]);
    expect(alpha.parent).toBeUndefined();
    expect(alpha.activeRunId).toBeNull();
    expect(alpha.pending).toEqual([]);
    const fork = await body<StudioThread>('/studio-api/threads/alpha-fork', ALICE);
    expect(fork.parent).toEqual({ threadId: 'alpha', atSeq: 1 });
    expect(fork.messages).toHaveLength(1);
  });

  it("answers another principal's thread exactly as a missing one: 404 unknown_thread", async () => {
    const theirs = await get('/studio-api/threads/alpha', BOB);
    const missing = await get('/studio-api/threads/no-such-thread', BOB);
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    const [a, b] = [(await theirs.json()) as { error: { code: string } }, (await missing.json()) as { error: unknown }];
    expect(a.error.code).toBe('unknown_thread');
    expect(JSON.stringify(a).replace('alpha', 'X')).toBe(JSON.stringify(b).replace('no-such-thread', 'X'));
    expect((await get('/studio-api/runs?thread=alpha', BOB)).status).toBe(404);
  });

  it('says what it serves', async () => {
    expect(await body<StudioConfig>('/studio-api/config', ALICE)).toEqual({
      apiBase: '/api',
      traces: true,
      live: true,
    });
    const bare = createStudio({ checkpointer, authToken: ALICE });
    const response = await bare.fetch(
      new Request('http://127.0.0.1/studio-api/config', { headers: { authorization: `Bearer ${ALICE}` } }),
    );
    expect(await response.json()).toEqual({ apiBase: '', traces: false, live: false });
  });

  it('forwards the agent server routes under its basePath to it', async () => {
    const thread = await body<{ threadId: string; messages: unknown[] }>('/api/threads/alpha', ALICE);
    expect(thread.messages).toHaveLength(2);
    expect((await get('/api/threads')).status).toBe(401);
  });

  it('refuses a Host it does not serve (a token-less studio answers loopback names only)', async () => {
    const open = createStudio({ checkpointer });
    const rebound = await open.fetch(new Request('http://evil.example/studio-api/threads'));
    expect(rebound.status).toBe(403);
    expect(((await rebound.json()) as { error: { code: string } }).error.code).toBe('host_not_allowed');
    expect((await open.fetch(new Request('http://127.0.0.1/studio-api/threads'))).status).toBe(200);
  });

  it('hides runs of threads the principal may not read, and unknown runs, as 404 unknown_run', async () => {
    const unknown = await get('/studio-api/runs/run_nope', ALICE);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('unknown_run');
    expect(tracedRun).not.toBe('');
    expect((await get(`/studio-api/runs/${tracedRun}`, BOB)).status).toBe(404);
  });

  it('lists a thread’s runs from the trace file and serves a run’s spans', async () => {
    expect((await createTraceReader(traceFile).runs('alpha')).runs.length).toBeGreaterThan(0);
    const list = await body<StudioRunList>('/studio-api/runs?thread=alpha', ALICE);
    expect(list.runs.map((run) => run.runId)).toEqual([tracedRun]);
    expect(list.runs[0]!.threadId).toBe('alpha');
    const trace = await body<{ run: { runId: string }; spans: unknown[] }>(`/studio-api/runs/${tracedRun}`, ALICE);
    expect(trace.run.runId).toBe(tracedRun);
    expect(trace.spans.length).toBeGreaterThan(0);
  });
});
