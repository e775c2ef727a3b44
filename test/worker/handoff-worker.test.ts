// A handed-off thread on a queue worker: two runs enqueued on one thread, the second picked up by a worker that builds
// its agents afresh (as every run does) and runs on the agent the first run handed to.
import type pg from 'pg';
import { lastValueFrom, toArray } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent, handoff, type AgentEvent, type Message } from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { createRunQueue, startWorker, type RunQueue, type RunWorker } from 'cubepi/worker';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from '../checkpoint/postgres-server.js';
import { expectConsistentTranscript } from '../helpers.js';

requirePostgres();

function lastPrompt(messages: readonly Message[]): string {
  const user = messages.findLast((m) => m.role === 'user');
  return typeof user?.content === 'string' ? user.content : '';
}

describe.skipIf(!pgAvailable)('handoffs on a queue worker', () => {
  let pool: pg.Pool;
  let schema: string;
  let queue: RunQueue;
  const workers: RunWorker[] = [];

  beforeEach(() => {
    schema = uniqueSchema('handoff_q');
    pool = testPool({ max: 10 });
    queue = createRunQueue({ pool, schema, bossSchema: `${schema}_boss` });
  });
  afterEach(async () => {
    for (const worker of workers.splice(0)) await worker.stop({ graceMs: 0 });
    await queue.close();
    await dropSchema(pool, schema);
    await dropSchema(pool, `${schema}_boss`);
    await pool.end();
  });

  it('the second run of a thread runs on the agent the first handed to', async () => {
    const calls: string[] = [];
    const checkpointer = new PostgresCheckpointer(pool, { schema });
    // Built afresh for each run, as a worker does: nothing but the thread carries the handoff to the next run.
    const support = (threadId: string): Agent => {
      const billing = new Agent({
        name: 'billing',
        model: 'faux',
        systemPrompt: 'You handle invoices.',
        provider: new FauxProvider({
          responses: [
            (messages) => (
              calls.push(`billing:${lastPrompt(messages)}`),
              fauxMessage(`billing: ${lastPrompt(messages)}`)
            ),
          ],
        }),
      });
      return new Agent({
        name: 'triage',
        model: 'faux',
        systemPrompt: 'You route customers.',
        provider: new FauxProvider({
          responses: [
            (messages) => (
              calls.push(`triage:${lastPrompt(messages)}`),
              fauxMessage([fauxToolCall('transfer_to_billing', {})])
            ),
          ],
        }),
        tools: [handoff(billing, { description: 'Invoices' })],
        checkpointer,
        threadId,
      });
    };
    const worker = await startWorker({ queue, concurrency: 2, agents: { support } });
    workers.push(worker);
    const first = await queue.enqueue({ threadId: 'th', agent: 'support', input: 'charged twice' });
    const second = await queue.enqueue({ threadId: 'th', agent: 'support', input: 'and the other one?' });
    const firstEvents: AgentEvent[] = await lastValueFrom(queue.events(first).pipe(toArray()));
    const secondEvents: AgentEvent[] = await lastValueFrom(queue.events(second).pipe(toArray()));

    expect(firstEvents.find((e) => e.type === 'handoff')).toMatchObject({ from: 'triage', to: 'billing' });
    expect(firstEvents.find((e) => e.type === 'agent_start')).toMatchObject({ agent: 'triage' });
    expect(secondEvents.find((e) => e.type === 'agent_start')).toMatchObject({ agent: 'billing' });
    expect(secondEvents.some((e) => e.type === 'handoff')).toBe(false);
    expect(calls).toEqual(['triage:charged twice', 'billing:charged twice', 'billing:and the other one?']);
    const thread = (await checkpointer.load('th'))!;
    expect(thread.extra['handoff.active']).toMatchObject({ agent: 'billing' });
    expectConsistentTranscript(thread.messages);
    await checkpointer.close();
  }, 60_000);
});
