// The run queue and a worker in one process, on the real PostgreSQL and pg-boss: a run's events streamed from the
// log, a thread's runs in order, cancel before and during a run, suspension and the answer enqueued, a run that
// fails as a whole, a graceful stop, bad input.
import type pg from 'pg';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError, type AgentEvent } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { createRunQueue, RunQueueError, startWorker, type RunQueue, type RunWorker } from 'cubepi/worker';
import {
  connectionString,
  dropSchema,
  pgAvailable,
  requirePostgres,
  testPool,
  uniqueSchema,
} from '../checkpoint/postgres-server.js';
import { createEffectsTable, queueAgents } from './fixtures/queue-agents.js';

requirePostgres();

describe.skipIf(!pgAvailable)('run queue (one process)', () => {
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;
  const workers: RunWorker[] = [];

  beforeEach(async () => {
    schema = uniqueSchema('rq');
    pool = testPool({ max: 10 });
    await createEffectsTable(pool, schema);
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.stop({ graceMs: 0 });
    await queue.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  const start = async (options: { delayMs?: number; toolMs?: number; concurrency?: number } = {}) => {
    const worker = await startWorker({
      queue,
      concurrency: options.concurrency ?? 4,
      agents: queueAgents({ pool, schema, delayMs: options.delayMs ?? 0, toolMs: options.toolMs ?? 0 }),
    });
    workers.push(worker);
    return worker;
  };
  const all = (runId: string) => lastValueFrom(queue.events(runId).pipe(toArray()));
  const texts = async (threadId: string) => {
    const store = new PostgresCheckpointer(pool, { schema });
    const thread = await store.load(threadId).finally(() => store.close());
    return (thread?.messages ?? []).map((m) =>
      m.role === 'toolResult'
        ? `result:${m.content.map((c) => (c.type === 'text' ? c.text : '')).join('')}`
        : `${m.role}:${typeof m.content === 'string' ? m.content : m.content.map((c) => (c.type === 'text' ? c.text : c.type)).join('')}`,
    );
  };

  it('runs a queued prompt on a worker and streams its events, numbered, under the run id enqueue returned', async () => {
    await start();
    const runId = await queue.enqueue({ threadId: 't1', agent: 'notes', input: 'hello' });
    const events = await all(runId);
    expect(events[0]).toMatchObject({ type: 'agent_start', runId, seq: 1 });
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.every((e) => e.runId === runId)).toBe(true);
    expect(events.filter((e) => e.type === 'tool_execution_end')).toHaveLength(1);
    expect(await texts('t1')).toEqual([
      'user:hello',
      'assistant:toolCall',
      'result:noted hello',
      'assistant:done hello',
    ]);
    const run = await queue.run(runId);
    expect(run).toMatchObject({ status: 'ended', outcome: 'completed', attempts: 1, threadId: 't1', baseCount: 0 });
    // A reader arriving after the end replays it whole; one resuming from a seq gets the rest.
    expect(await all(runId)).toEqual(events);
    const rest = await lastValueFrom(queue.events(runId, { after: 3 }).pipe(toArray()));
    expect(rest).toEqual(events.slice(3));
    const from = await lastValueFrom(queue.events(runId, { fromSeq: 3 }).pipe(toArray()));
    expect(from).toEqual(events.slice(2));
  });

  it("runs a thread's runs one at a time, in the order they were enqueued, while other threads run beside", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await queue.enqueue({ threadId: 'a', agent: 'notes', input: `a${i}` }));
    const other = await queue.enqueue({ threadId: 'b', agent: 'notes', input: 'b0' });
    await start({ concurrency: 4, delayMs: 1 });
    for (const id of [...ids, other]) await all(id);
    const users = (await texts('a')).filter((t) => t.startsWith('user:'));
    expect(users).toEqual(['user:a0', 'user:a1', 'user:a2', 'user:a3', 'user:a4']);
    const runs = await Promise.all(ids.map((id) => queue.run(id)));
    for (let i = 1; i < runs.length; i++) {
      // Each run started after the one before it ended.
      expect(runs[i]!.startedAt!.getTime()).toBeGreaterThanOrEqual(runs[i - 1]!.endedAt!.getTime());
    }
  });

  it('cancels a queued run: its stream ends at once, it never runs, the thread goes on', async () => {
    const first = await queue.enqueue({ threadId: 'c', agent: 'notes', input: 'first' });
    const second = await queue.enqueue({ threadId: 'c', agent: 'notes', input: 'second' });
    const third = await queue.enqueue({ threadId: 'c', agent: 'notes', input: 'third' });
    expect(await queue.cancel(second, 'changed my mind')).toBe(true);
    expect(await all(second)).toEqual([]);
    expect(await queue.run(second)).toMatchObject({ status: 'ended', outcome: 'cancelled', attempts: 0 });
    await start();
    await all(first);
    await all(third);
    expect((await texts('c')).filter((t) => t.startsWith('user:'))).toEqual(['user:first', 'user:third']);
    const { rows } = await pool.query(`SELECT text FROM "${schema}".effects WHERE thread_id = 'c' ORDER BY id`);
    expect(rows.map((r: { text: string }) => r.text)).toEqual(['first', 'third']);
    expect(await queue.cancel(first)).toBe(false); // ended
  });

  it("cancels a running run on its worker: the model's stream is aborted, the closing events still stream", async () => {
    await start({ delayMs: 30 });
    // Long enough (a ~450-character tool call, 4 characters per 30 ms chunk) that the cancel lands mid-stream on a
    // loaded machine, where the reader sees the second update up to a flush later.
    const prompt = `a long one ${Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ')}`;
    const runId = await queue.enqueue({ threadId: 'd', agent: 'notes', input: prompt });
    const seen: AgentEvent[] = [];
    const done = lastValueFrom(queue.events(runId).pipe(toArray()));
    queue.events(runId).subscribe((e) => {
      seen.push(e);
      if (e.type === 'message_update' && seen.filter((x) => x.type === 'message_update').length === 2) {
        void queue.cancel(runId, 'stop pressed');
      }
    });
    const events = await done;
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    const ended = events.find((e) => e.type === 'message_end' && e.message.role === 'assistant');
    expect(ended).toMatchObject({ message: { role: 'assistant', stopReason: 'aborted' } });
    expect(await queue.run(runId)).toMatchObject({ status: 'ended', outcome: 'cancelled', cancelRequested: true });
  });

  it('a suspended run frees the worker; the answer is enqueued as a new run that resumes the thread', async () => {
    await start();
    const runId = await queue.enqueue({ threadId: 'e', agent: 'guarded', input: 'ask for leave' });
    const events = await all(runId);
    const requested = events.find((e) => e.type === 'approval_requested');
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'suspended' });
    expect(await queue.run(runId)).toMatchObject({ status: 'ended', outcome: 'suspended' });
    expect(requested).toBeDefined();
    const requestId = (requested as { requestId: string }).requestId;
    const resumed = await queue.enqueue({
      threadId: 'e',
      agent: 'guarded',
      respond: { requestId, answer: { approve: true } },
    });
    const after = await all(resumed);
    expect(after.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await texts('e')).toEqual([
      'user:ask for leave',
      'assistant:toolCall',
      'result:asked ask for leave',
      'assistant:done ask for leave',
    ]);
    // The same answer again finds no suspended run: that run fails as a whole, typed.
    const again = await queue.enqueue({
      threadId: 'e',
      agent: 'guarded',
      respond: { requestId, answer: { approve: true } },
    });
    const error = await all(again).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunQueueError);
    expect(error).toMatchObject({ reason: 'run_failed', cause: { code: 'invalid_state' } });
  });

  it('a run for an agent no worker has waits, queued, and holds its thread; cancelling it lets the thread go on', async () => {
    await start();
    const waiting = await queue.enqueue({ threadId: 'f', agent: 'nobody', input: 'hi' });
    const next = await queue.enqueue({ threadId: 'f', agent: 'notes', input: 'next' });
    // The worker is taking runs meanwhile: another thread's run, enqueued after these, ends.
    const other = await queue.enqueue({ threadId: 'g', agent: 'notes', input: 'other' });
    expect((await all(other)).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await queue.run(waiting)).toMatchObject({ status: 'queued', attempts: 0, outcome: undefined });
    expect(await queue.run(next)).toMatchObject({ status: 'queued', attempts: 0 });
    expect(await queue.cancel(waiting)).toBe(true);
    expect((await all(next)).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });

  it('runs an older version queued (jobs without an agent number) are relabelled at start and run', async () => {
    await queue.start();
    // What the previous version wrote: the row (routed defaults to false) and a job of priority 0.
    const { PgBoss } = await import('pg-boss');
    const old = new PgBoss({
      connectionString: connectionString(),
      schema: `${schema}_boss`,
      supervise: false,
      schedule: false,
    });
    old.on('error', () => {});
    await old.start();
    const runId = '00000000-0000-4000-8000-000000000001';
    await pool.query(
      `INSERT INTO "${schema}".cubepi_runs (run_id, thread_id, agent, request) VALUES ($1, $2, $3, $4)`,
      [runId, 'legacy', 'notes', JSON.stringify({ kind: 'prompt', input: 'from before' })],
    );
    await old.send('cubepi-runs', { runId, threadId: 'legacy', agent: 'notes' }, { id: runId, singletonKey: 'legacy' });
    // A process of this version starts (another queue object, as a restarted process makes).
    const restarted = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
    try {
      await restarted.start();
      const [job] = await old.findJobs('cubepi-runs', { id: runId });
      expect(job?.priority).toBeGreaterThan(0);
    } finally {
      await restarted.close();
      await old.stop({ graceful: false });
    }
    const { rows } = await pool.query(`SELECT routed FROM "${schema}".cubepi_runs WHERE run_id = $1`, [runId]);
    expect(rows[0]).toEqual({ routed: true });
    await start();
    expect((await all(runId)).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expect(await texts('legacy')).toEqual([
      'user:from before',
      'assistant:toolCall',
      'result:noted from before',
      'assistant:done from before',
    ]);
  });

  it('stop() lets a run finish within the grace period, then cancels what is left and releases it', async () => {
    const worker = await start({ delayMs: 40 });
    const runId = await queue.enqueue({ threadId: 'g', agent: 'notes', input: 'slow' });
    const events = lastValueFrom(queue.events(runId).pipe(toArray()));
    await new Promise<void>((resolve) => {
      const sub = queue.events(runId).subscribe((e) => {
        if (e.type === 'message_update') {
          sub.unsubscribe();
          resolve();
        }
      });
    });
    await worker.stop({ graceMs: 20 });
    expect(worker.running).toEqual([]);
    expect((await events).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    expect(await queue.run(runId)).toMatchObject({ status: 'ended', outcome: 'cancelled' });
    // Stopped: a new run waits for another worker.
    const later = await queue.enqueue({ threadId: 'g', agent: 'notes', input: 'later' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await queue.run(later)).toMatchObject({ status: 'queued' });
    await start();
    expect((await all(later)).at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
  });

  it('a run lost after its answer was stored, before it was streamed, is closed from the checkpoint, not rerun', async () => {
    const runId = await queue.enqueue({ threadId: 'k', agent: 'notes', input: 'finish me' });
    // What a worker that died left: the thread has the whole run, the stream stops inside the answer.
    await pool.query(
      `UPDATE "${schema}".cubepi_runs SET status = 'running', attempts = 1, base_count = 0, worker = 'gone' WHERE run_id = $1`,
      [runId],
    );
    const agent = await queueAgents({ pool, schema }).notes!('k');
    const first = await lastValueFrom(agent.prompt$('finish me', { runId }).pipe(toArray()));
    const answerStart = first.findLastIndex((e) => e.type === 'message_start');
    const cut = first.slice(0, answerStart + 2);
    await queue.log.appendRunEvents(
      runId,
      cut.map((event, i) => ({ kind: 'event', seq: i + 1, event: { ...event, seq: i + 1 } })),
    );
    await start();
    const events = await all(runId);
    expect(events.slice(0, cut.length).map((e) => e.type)).toEqual(cut.map((e) => e.type));
    const rest = events.slice(cut.length);
    // The taking over says so first (attempt 2), then the stream is closed from the checkpoint.
    expect(rest.map((e) => e.type)).toEqual([
      'run_recovering',
      'agent_start',
      'message_start',
      'message_end',
      'agent_end',
    ]);
    expect(rest[0]).toMatchObject({ type: 'run_recovering', runId, attempt: 2 });
    expect(rest[3]).toMatchObject({
      message: { role: 'assistant', content: [{ type: 'text', text: 'done finish me' }] },
    });
    expect(rest[4]).toMatchObject({ outcome: 'completed', messages: { length: 4 } });
    expect(await queue.run(runId)).toMatchObject({ status: 'ended', outcome: 'completed', attempts: 2 });
    // Nothing ran again: the tool's effect is the first attempt's only, the transcript unchanged.
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE thread_id = 'k'`);
    expect(rows[0]).toEqual({ n: 1 });
    expect(await texts('k')).toHaveLength(4);
  });

  it('deleteRunsBefore deletes ended runs with their events, never a queued one', async () => {
    await start();
    const ended = await queue.enqueue({ threadId: 'h', agent: 'notes', input: 'old' });
    await all(ended);
    await workers.splice(0)[0]!.stop({ graceMs: 0 });
    const queued = await queue.enqueue({ threadId: 'h2', agent: 'notes', input: 'waiting' });
    expect(await queue.deleteRunsBefore(new Date(Date.now() - 60_000))).toBe(0);
    expect(await queue.deleteRunsBefore(new Date(Date.now() + 60_000))).toBe(1);
    expect(await queue.run(ended)).toBeUndefined();
    expect(await queue.log.lastSeq(ended)).toBe(0);
    expect(await queue.run(queued)).toMatchObject({ status: 'queued' });
  });

  it('refuses bad requests with InvalidInputError and unknown runs with unknown_run', async () => {
    await expect(queue.enqueue({ threadId: '', agent: 'notes', input: 'x' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(queue.enqueue({ threadId: 't', agent: '', input: 'x' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(queue.enqueue({ threadId: 't', agent: 'a', input: 42 as never })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(queue.cancel('no-such-run')).rejects.toMatchObject({ reason: 'unknown_run' });
    await expect(lastValueFrom(queue.events('no-such-run'))).rejects.toMatchObject({ reason: 'unknown_run' });
    expect(() => queue.events('x', { after: 1, fromSeq: 2 })).toThrow(InvalidInputError);
  });
});
