// The queue across real processes on the real PostgreSQL: worker processes take runs that this process (the API role)
// enqueues. 300 runs over 50 threads on 3 workers; `kill -9` of a worker mid-run (seeded); cancel from here stopping
// a run on a worker (its model's HTTP request closed); an SSE client of this process's API server following a run on a
// worker, cut and resumed; SIGTERM draining a worker; an approval suspended on one worker answered from here and
// resumed on another; two workers with different agents, each taking only its agents' runs.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { fromAgentEvents, runEventsUrl, startRun } from 'cubepi/client';
import { createQueueServer, toNodeListener } from 'cubepi/server';
import { createRunQueue, type RunQueue, type WireFrame } from 'cubepi/worker';
import { bundledScript } from '../bundled-script.js';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';
import { openaiText } from '../cli/wire.js';
import { cuttingFetch, random } from '../cutting-fetch.js';
import { createEffectsTable } from './fixtures/queue-agents.js';

requirePostgres();

const root = fileURLToPath(new URL('../..', import.meta.url));
const workerScript = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));

interface WorkerProcess {
  readonly id: string;
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  output(): string;
}

interface WorkerSpec {
  concurrency?: number;
  delayMs?: number;
  toolMs?: number;
  graceMs?: number;
  modelUrl?: string;
  /** The agents of queue-agents.ts it keeps (default all). */
  agents?: readonly string[];
}

/** The `application_name` of a worker process's PostgreSQL connections. */
const appName = (workerId: string) => `cubepi-test-worker-${workerId}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!pgAvailable)('run queue across processes', () => {
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;
  let processes: WorkerProcess[] = [];
  /** The worker process's script, bundled once for this file (`bundledScript`): no tsx compile per process. */
  let workerBundle: string;

  beforeAll(async () => {
    workerBundle = await bundledScript(workerScript);
  });
  beforeEach(async () => {
    schema = uniqueSchema('so');
    pool = testPool({ max: 8 });
    await createEffectsTable(pool, schema);
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
    await queue.start();
  });
  afterEach(async () => {
    for (const worker of processes) worker.child.kill('SIGKILL');
    await Promise.all(processes.map((worker) => worker.exited));
    processes = [];
    await queue.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  function spawnWorker(id: string, spec: WorkerSpec = {}): WorkerProcess {
    const args = [
      schema,
      `${schema}_boss`,
      id,
      String(spec.concurrency ?? 4),
      String(spec.delayMs ?? 1),
      String(spec.toolMs ?? 2),
      String(spec.graceMs ?? 10_000),
      (spec.agents ?? []).join(','),
    ];
    const child = spawn(process.execPath, [workerBundle, ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its connections are named after it (pg reads PGAPPNAME), so a test can see its statements in flight.
      env: {
        ...process.env,
        PGAPPNAME: appName(id),
        ...(spec.modelUrl === undefined ? {} : { MODEL_URL: spec.modelUrl }),
      },
    });
    let output = '';
    let markReady!: () => void;
    let failReady!: (error: Error) => void;
    const ready = new Promise<void>((resolve, reject) => ((markReady = resolve), (failReady = reject)));
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready\n')) markReady();
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const worker = { id, child, ready, exited, output: () => output };
    processes.push(worker);
    // A worker that dies before it is ready fails the test with what it printed.
    void exited.then((code) => failReady(new Error(`worker ${id} exited (${String(code)}) before ready:\n${output}`)));
    return worker;
  }

  async function openRuns(): Promise<number> {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${schema}".cubepi_runs WHERE status <> 'ended'`,
    );
    return Number(rows[0]!.n);
  }

  async function waitUntil(what: string, check: () => Promise<boolean>, ms = 90_000): Promise<void> {
    const until = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
      await sleep(100);
    }
  }

  async function heldBy(workerId: string): Promise<{ run_id: string }[]> {
    const { rows } = await pool.query<{ run_id: string }>(
      `SELECT run_id FROM "${schema}".cubepi_runs WHERE status = 'running' AND worker = $1 ORDER BY run_id`,
      [workerId],
    );
    return rows;
  }

  const framesOf = (runId: string) => lastValueFrom(queue.frames(runId).pipe(toArray()));

  /** A run's stream: seqs 1…n without a hole, one terminal `end` frame last, its last event a completed agent_end. */
  function expectWholeStream(frames: WireFrame[], outcome = 'completed'): void {
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
    expect(frames.at(-1)?.kind).toBe('end');
    const events = frames.flatMap((f) => (f.kind === 'event' ? [f.event] : []));
    // A run its first worker took and lost before streaming anything opens with the taking over.
    expect(events[events[0]?.type === 'run_recovering' ? 1 : 0]?.type).toBe('agent_start');
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome });
  }

  const textOf = (message: Message): string =>
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

  /**
   * A thread's transcript: its prompts in the order enqueued, each exactly once and answered `done <prompt>`; every
   * tool call with exactly one result.
   */
  async function expectValidThread(threadId: string, prompts: readonly string[]): Promise<void> {
    const store = new PostgresCheckpointer(pool, { schema });
    const thread = await store.load(threadId).finally(() => store.close());
    const messages = thread?.messages ?? [];
    expect(messages.filter((m) => m.role === 'user').map(textOf)).toEqual(prompts);
    const calls = messages.flatMap((m) =>
      m.role === 'assistant' ? m.content.flatMap((c) => (c.type === 'toolCall' ? [c.id] : [])) : [],
    );
    const results = messages.flatMap((m) => (m.role === 'toolResult' ? [m.toolCallId] : []));
    expect(results.slice().sort()).toEqual(calls.slice().sort());
    expect(new Set(results).size).toBe(results.length);
    const answers = messages.filter((m) => m.role === 'assistant' && m.stopReason === 'stop').map(textOf);
    expect(answers).toEqual(prompts.map((p) => `done ${p}`));
  }

  async function effects(): Promise<Map<string, number>> {
    const { rows } = await pool.query<{ text: string; n: string }>(
      `SELECT text, count(*) AS n FROM "${schema}".effects GROUP BY text`,
    );
    return new Map(rows.map((r) => [r.text, Number(r.n)]));
  }

  it('3 workers run 300 runs over 50 threads: each once, in order per thread, transcripts valid', async () => {
    const workers = ['w1', 'w2', 'w3'].map((id) => spawnWorker(id));
    await Promise.all(workers.map((w) => w.ready));
    const prompts = new Map<string, string[]>();
    const runIds: string[] = [];
    for (let r = 0; r < 6; r++) {
      for (let t = 0; t < 50; t++) {
        const threadId = `thread-${t}`;
        const prompt = `t${t}-r${r}`;
        prompts.set(threadId, [...(prompts.get(threadId) ?? []), prompt]);
        runIds.push(await queue.enqueue({ threadId, agent: 'notes', input: prompt }));
      }
    }
    await waitUntil('every run ended', async () => (await openRuns()) === 0, 150_000);
    const byWorker = new Map<string, number>();
    for (const runId of runIds) {
      const run = await queue.run(runId);
      expect(run).toMatchObject({ status: 'ended', outcome: 'completed', attempts: 1 });
      byWorker.set(run!.worker!, (byWorker.get(run!.worker!) ?? 0) + 1);
      expectWholeStream(await framesOf(runId));
    }
    // Every worker took a share.
    expect([...byWorker.keys()].sort()).toEqual(['w1', 'w2', 'w3']);
    for (const [threadId, list] of prompts) await expectValidThread(threadId, list);
    const done = await effects();
    expect(done.size).toBe(300);
    expect([...done.values()].every((n) => n === 1)).toBe(true);
  }, 180_000);

  it.each([11, 23, 37])(
    'kill -9 of a worker mid-run (seed %i): its runs finish elsewhere, nothing lost, nothing acknowledged runs twice',
    async (seed) => {
      const rand = random(seed);
      const ids = ['k1', 'k2', 'k3'];
      const workers = ids.map((id) => spawnWorker(id, { delayMs: 4, toolMs: 60, concurrency: 3 }));
      await Promise.all(workers.map((w) => w.ready));
      const victim = workers[Math.floor(rand() * workers.length)]!;
      const prompts = new Map<string, string[]>();
      const runIds: string[] = [];
      for (let r = 0; r < 3; r++) {
        for (let t = 0; t < 15; t++) {
          const threadId = `thread-${t}`;
          const prompt = `t${t}-r${r}`;
          prompts.set(threadId, [...(prompts.get(threadId) ?? []), prompt]);
          runIds.push(await queue.enqueue({ threadId, agent: 'notes', input: prompt }));
        }
      }
      // Mid-run: the victim holds runs and a seeded number of runs have ended (a condition, not a sleep: on a loaded
      // machine a fixed delay could let the queue drain before the kill). Between seeing that and the kill the victim
      // could finish what it held, so it is frozen first (SIGSTOP) and what it holds is read once none of its
      // statements is still in flight; a victim found holding nothing is thawed and waited on again.
      const endedTarget = Math.floor(rand() * 8);
      let held: { run_id: string }[];
      for (;;) {
        await waitUntil('the victim is running runs, some runs ended', async () => {
          const { rows } = await pool.query<{ running: string; ended: string }>(
            `SELECT count(*) FILTER (WHERE status = 'running' AND worker = $1) AS running,
                    count(*) FILTER (WHERE status = 'ended') AS ended
               FROM "${schema}".cubepi_runs`,
            [victim.id],
          );
          return Number(rows[0]!.running) > 0 && Number(rows[0]!.ended) >= endedTarget;
        });
        victim.child.kill('SIGSTOP');
        await waitUntil("none of the frozen victim's statements is in flight", async () => {
          const { rows } = await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'`,
            [appName(victim.id)],
          );
          return Number(rows[0]!.n) === 0;
        });
        held = await heldBy(victim.id);
        if (held.length > 0) break;
        victim.child.kill('SIGCONT');
      }
      const { rows: endedBefore } = await pool.query<{ run_id: string }>(
        `SELECT run_id FROM "${schema}".cubepi_runs WHERE status = 'ended'`,
      );
      victim.child.kill('SIGKILL');
      await victim.exited;
      // Frozen, it acknowledged nothing more: what it held is what it holds now.
      expect(await heldBy(victim.id)).toEqual(held);
      await waitUntil('every run ended', async () => (await openRuns()) === 0, 120_000);

      for (const runId of runIds) {
        const run = await queue.run(runId);
        expect(run).toMatchObject({ status: 'ended', outcome: 'completed' });
        expectWholeStream(await framesOf(runId));
      }
      // The victim's runs were taken again, by a survivor; runs acknowledged before the kill were not.
      for (const { run_id } of held) {
        const run = await queue.run(run_id);
        expect(run!.attempts).toBe(2);
        expect(run!.worker).not.toBe(victim.id);
        // The stream says it was taken over: one `run_recovering` (attempt 2) where the second attempt begins, right
        // before its `agent_start`.
        const events = (await framesOf(run_id)).flatMap((f) => (f.kind === 'event' ? [f.event] : []));
        const recovering = events.flatMap((e, i) => (e.type === 'run_recovering' ? [i] : []));
        expect(recovering).toHaveLength(1);
        expect(events[recovering[0]!]).toMatchObject({ type: 'run_recovering', runId: run_id, attempt: 2 });
        expect(events[recovering[0]! + 1]?.type).toBe('agent_start');
        expect(events.slice(0, recovering[0]).filter((e) => e.type === 'agent_start').length).toBeLessThanOrEqual(1);
      }
      for (const runId of runIds) {
        if (held.some((h) => h.run_id === runId)) continue;
        expect((await framesOf(runId)).some((f) => f.kind === 'event' && f.event.type === 'run_recovering')).toBe(
          false,
        );
      }
      for (const { run_id } of endedBefore) expect((await queue.run(run_id))!.attempts).toBe(1);
      // Every prompt once, in order, every call with one result; a `note` call never ran twice (an interrupted one
      // may have run once or not at all).
      for (const [threadId, list] of prompts) await expectValidThread(threadId, list);
      const done = await effects();
      expect([...done.values()].every((n) => n === 1)).toBe(true);
      const heldPrompts = new Set<string>();
      for (const { run_id } of held) {
        const { rows } = await pool.query<{ request: { input: string } }>(
          `SELECT request FROM "${schema}".cubepi_runs WHERE run_id = $1`,
          [run_id],
        );
        heldPrompts.add(rows[0]!.request.input);
      }
      for (const list of prompts.values()) {
        for (const prompt of list) if (!heldPrompts.has(prompt)) expect(done.get(prompt)).toBe(1);
      }
    },
    180_000,
  );

  it("cancel from this process stops a run on a worker: the model's HTTP request is closed", async () => {
    let requestClosed!: () => void;
    const closed = new Promise<void>((resolve) => (requestClosed = resolve));
    let requested!: () => void;
    const gotRequest = new Promise<void>((resolve) => (requested = resolve));
    const model: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(openaiText('Thinking about it, slowly', { partial: true })); // and never more
      res.on('close', () => requestClosed());
      requested();
    });
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
      const worker = spawnWorker('c1', { modelUrl: url });
      await worker.ready;
      const runId = await queue.enqueue({ threadId: 'cancel-me', agent: 'wire', input: 'Tell me a long story' });
      const frames = framesOf(runId);
      await gotRequest;
      expect(await queue.cancel(runId, 'stop pressed')).toBe(true);
      await closed; // the worker aborted the model's request
      const all = await frames;
      expectWholeStream(all, 'cancelled');
      const ends = all.flatMap((f) => (f.kind === 'event' && f.event.type === 'message_end' ? [f.event.message] : []));
      expect(ends.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
      expect(await queue.run(runId)).toMatchObject({ outcome: 'cancelled', worker: 'c1', cancelRequested: true });
    } finally {
      model.closeAllConnections();
      await new Promise<void>((resolve) => model.close(() => resolve()));
    }
  }, 60_000);

  it.each([5, 6])(
    'an SSE client of the API server here follows a run on a worker process, cut at random (seed %i), resumed',
    async (seed) => {
      const worker = spawnWorker('s1', { delayMs: 3 });
      const server = createQueueServer({
        queue,
        agent: 'notes',
        checkpointer: new PostgresCheckpointer(pool, { schema }),
      });
      const http = createServer(toNodeListener(server));
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      try {
        const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
        await worker.ready;
        const connections = { count: 0 };
        const prompt = `a long one ${Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ')}`;
        const events = await lastValueFrom(
          startRun(base, 'sse-thread', prompt, {
            fetch: cuttingFetch(random(seed), connections),
            retry: { initialDelayMs: 1, maxDelayMs: 5, maxAttempts: 1000 },
          }).pipe(toArray()),
        );
        expect(connections.count).toBeGreaterThan(1);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
        expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
        const runId = events[0]!.runId;
        expect(await queue.run(runId)).toMatchObject({ worker: 's1', outcome: 'completed' });
        // What the client pieced together equals the stored run, and an uncut read of it.
        const stored = (await framesOf(runId)).flatMap((f) => (f.kind === 'event' ? [f.event] : []));
        expect(events).toEqual(stored);
        expect(await lastValueFrom(fromAgentEvents(runEventsUrl(base, runId)).pipe(toArray()))).toEqual(events);
      } finally {
        server.close();
        http.closeAllConnections();
        await new Promise<void>((resolve) => http.close(() => resolve()));
      }
    },
    60_000,
  );

  it('SIGTERM drains a worker: it takes no new run, finishes the running one, and exits 0', async () => {
    const draining = spawnWorker('d1', { delayMs: 25, toolMs: 300, graceMs: 20_000 });
    await draining.ready;
    const first = await queue.enqueue({ threadId: 'drain-1', agent: 'notes', input: 'the first one' });
    await waitUntil('the run started', async () => (await queue.run(first))!.status === 'running');
    draining.child.kill('SIGTERM');
    await sleep(300); // the worker has stopped fetching
    const second = await queue.enqueue({ threadId: 'drain-2', agent: 'notes', input: 'the second one' });
    expect(await draining.exited).toBe(0);
    expect(draining.output()).toContain('drained');
    expect(await queue.run(first)).toMatchObject({ status: 'ended', outcome: 'completed', worker: 'd1' });
    expectWholeStream(await framesOf(first));
    expect(await queue.run(second)).toMatchObject({ status: 'queued', attempts: 0 });
    const other = spawnWorker('d2');
    await other.ready;
    expectWholeStream(await framesOf(second));
    expect(await queue.run(second)).toMatchObject({ outcome: 'completed', worker: 'd2' });
  }, 90_000);

  it('an approval suspended on one worker, answered from this process, resumes on another worker', async () => {
    const first = spawnWorker('a1');
    await first.ready;
    const runId = await queue.enqueue({ threadId: 'approve-me', agent: 'guarded', input: 'ask for a day off' });
    const frames = await framesOf(runId);
    expectWholeStream(frames, 'suspended');
    const request = frames.flatMap((f) =>
      f.kind === 'event' && f.event.type === 'approval_requested' ? [f.event] : [],
    );
    expect(request).toHaveLength(1);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const second = spawnWorker('a2');
    await second.ready;
    const resumed = await queue.enqueue({
      threadId: 'approve-me',
      agent: 'guarded',
      respond: { requestId: request[0]!.requestId, answer: { approve: true } },
    });
    expectWholeStream(await framesOf(resumed));
    expect(await queue.run(resumed)).toMatchObject({ outcome: 'completed', worker: 'a2' });
    await expectValidThread('approve-me', ['ask for a day off']);
  }, 90_000);

  it("two workers with different agents: each takes only its agents' runs, a thread keeps its order across agents, a run for an agent no worker has waits", async () => {
    const notes = spawnWorker('only-notes', { agents: ['notes'], concurrency: 2 });
    const guarded = spawnWorker('only-guarded', { agents: ['guarded'], concurrency: 2 });
    await Promise.all([notes.ready, guarded.ready]);
    const plan: { threadId: string; agent: string; input: string }[] = [];
    for (let r = 0; r < 3; r++) {
      plan.push({ threadId: 'notes-thread', agent: 'notes', input: `n${r}` });
      plan.push({ threadId: 'guarded-thread', agent: 'guarded', input: `g${r}` });
    }
    // One thread, its runs for two agents: they run one at a time, in the order enqueued.
    plan.push({ threadId: 'mixed', agent: 'notes', input: 'mixed-1' });
    plan.push({ threadId: 'mixed', agent: 'guarded', input: 'mixed-2' });
    plan.push({ threadId: 'mixed', agent: 'notes', input: 'mixed-3' });
    const runIds = new Map<string, string>();
    for (const request of plan) runIds.set(request.input, await queue.enqueue(request));
    // No worker has `nobody`: its run waits, and so does the run behind it on its thread.
    const orphan = await queue.enqueue({ threadId: 'orphan', agent: 'nobody', input: 'o1' });
    const behind = await queue.enqueue({ threadId: 'orphan', agent: 'notes', input: 'o2' });
    await waitUntil('every planned run ended', async () => {
      const { rows } = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM "${schema}".cubepi_runs WHERE status <> 'ended' AND thread_id <> 'orphan'`,
      );
      return Number(rows[0]!.n) === 0;
    });

    for (const request of plan) {
      const run = await queue.run(runIds.get(request.input)!);
      expect(run).toMatchObject({ status: 'ended', outcome: 'completed', attempts: 1 });
      expect(run!.worker).toBe(request.agent === 'notes' ? 'only-notes' : 'only-guarded');
      expectWholeStream(await framesOf(run!.runId));
    }
    await expectValidThread('notes-thread', ['n0', 'n1', 'n2']);
    await expectValidThread('guarded-thread', ['g0', 'g1', 'g2']);
    await expectValidThread('mixed', ['mixed-1', 'mixed-2', 'mixed-3']);
    const mixed = await Promise.all(['mixed-1', 'mixed-2', 'mixed-3'].map((input) => queue.run(runIds.get(input)!)));
    for (let i = 1; i < mixed.length; i++) {
      expect(mixed[i]!.startedAt!.getTime()).toBeGreaterThanOrEqual(mixed[i - 1]!.endedAt!.getTime());
    }
    expect(await queue.run(orphan)).toMatchObject({ status: 'queued', attempts: 0, outcome: undefined });
    expect(await queue.run(behind)).toMatchObject({ status: 'queued', attempts: 0 });

    // Cancelling the orphan lets its thread go on.
    expect(await queue.cancel(orphan)).toBe(true);
    expectWholeStream(await framesOf(behind));
    expect(await queue.run(behind)).toMatchObject({ outcome: 'completed', worker: 'only-notes' });
  }, 90_000);
});
