// Idempotent inputs (RunOptions.idempotencyKey, InputOptions.idempotencyKey), input_committed and agent_end.execution
// (issue 31, "Execution sessions"): in process, and across Agents on real SQLite and PostgreSQL checkpointers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  CheckpointError,
  defineTool,
  DuplicateInputError,
  InvalidInputError,
  MemoryCheckpointer,
  textOf,
  ToolGuard,
  type AgentEndEvent,
  type AgentEvent,
  type Checkpointer,
} from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { dropSchema, pgAvailable, requirePostgres, testPool, uniqueSchema } from './postgres-server.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-idempotent-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An agent answering `answers` in order, recording its events; `calls` counts the model calls. */
function agentOn(checkpointer: Checkpointer | undefined, threadId = 't', answers: string[] = ['one', 'two', 'three']) {
  let calls = 0;
  const faux = new FauxProvider({
    responses: answers.map(() => () => (calls++, fauxMessage(answers[calls - 1]!))),
  });
  const events: AgentEvent[] = [];
  const agent = new Agent({
    provider: faux,
    model: 'faux',
    ...(checkpointer === undefined ? {} : { checkpointer, threadId }),
  });
  agent.subscribe((event) => void events.push(event));
  return { agent, events, calls: () => calls };
}

const endOf = (events: readonly AgentEvent[]) =>
  events.filter((e): e is AgentEndEvent => e.type === 'agent_end').at(-1)!;

async function duplicate(promise: Promise<unknown>): Promise<DuplicateInputError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DuplicateInputError);
  return error as DuplicateInputError;
}

describe('idempotent inputs in one process', () => {
  it('a second prompt with the same key is refused with the first run id and calls no model', async () => {
    const { agent, events, calls } = agentOn(undefined);
    await agent.prompt('hello', { idempotencyKey: 'k1' });
    const firstRun = endOf(events).runId;
    const error = await duplicate(agent.prompt('hello again', { idempotencyKey: 'k1' }));
    expect(error).toMatchObject({ code: 'duplicate_input', idempotencyKey: 'k1', runId: firstRun });
    expect(calls()).toBe(1);
    expect(agent.state.messages.map(textOf)).toEqual(['hello', 'one']);
    // Another key, or none, runs.
    await agent.prompt('next', { idempotencyKey: 'k2' });
    await agent.prompt('and next');
    expect(calls()).toBe(3);
  });

  it('a duplicate while the first run is active is refused as a duplicate, not as busy', async () => {
    const { agent, events } = agentOn(undefined);
    const first = agent.prompt('hello', { idempotencyKey: 'k1' });
    const runId = events.find((e) => e.type === 'agent_start')!.runId;
    expect((await duplicate(agent.prompt('hello', { idempotencyKey: 'k1' }))).runId).toBe(runId);
    await first;
  });

  it('prompt$ errors with the DuplicateInputError; a bad key is an InvalidInputError', async () => {
    const { agent } = agentOn(undefined);
    await agent.prompt('hello', { idempotencyKey: 'k1' });
    const seen: unknown[] = [];
    agent.prompt$('again', { idempotencyKey: 'k1' }).subscribe({ error: (e: unknown) => seen.push(e) });
    expect(seen[0]).toBeInstanceOf(DuplicateInputError);
    await expect(agent.prompt('x', { idempotencyKey: '' })).rejects.toBeInstanceOf(InvalidInputError);
    expect(() => agent.steer('x', { idempotencyKey: 'y'.repeat(257) })).toThrow(InvalidInputError);
  });

  it('input_committed follows the message_end of the keyed prompt; no key, no input_committed', async () => {
    const { agent, events } = agentOn(undefined);
    await agent.prompt('plain');
    expect(events.some((e) => e.type === 'input_committed')).toBe(false);
    events.length = 0;
    await agent.prompt(
      ['first part', 'second part'].map((text) => ({ role: 'user', content: text, timestamp: 1 })),
      {
        idempotencyKey: 'k1',
      },
    );
    const types = events.map((e) => (e.type === 'message_end' ? `end:${textOf(e.message)}` : e.type));
    const at = types.indexOf('input_committed');
    expect(types.slice(at - 1, at + 1)).toEqual(['end:second part', 'input_committed']);
    expect(types.filter((t) => t === 'input_committed')).toHaveLength(1);
    expect(events[at]).toEqual({
      type: 'input_committed',
      runId: endOf(events).runId,
      idempotencyKey: 'k1',
      seq: events[at - 1]!.seq! + 1,
    });
  });

  it('a steering message with a taken key is not queued; cancelling one frees its key', async () => {
    const { agent, events } = agentOn(undefined);
    const id = agent.steer('look here', { idempotencyKey: 's1' });
    expect(() => agent.steer('look here', { idempotencyKey: 's1' })).toThrow(DuplicateInputError);
    expect(agent.cancelSteer(id)).toBe(true);
    agent.steer('look here', { idempotencyKey: 's1' });
    agent.followUp('and then', { idempotencyKey: 'f1' });
    await agent.prompt('go');
    const runId = endOf(events).runId;
    expect(events.filter((e) => e.type === 'input_committed')).toEqual([
      { type: 'input_committed', runId, idempotencyKey: 's1', seq: expect.any(Number) },
      { type: 'input_committed', runId, idempotencyKey: 'f1', seq: expect.any(Number) },
    ]);
    expect(
      (() => {
        try {
          agent.followUp('and then', { idempotencyKey: 'f1' });
        } catch (error) {
          return error;
        }
      })(),
    ).toMatchObject({ runId });
  });
});

describe('agent_end.execution', () => {
  it('says how the run settled: checkpoint none or committed, history consistent', async () => {
    const plain = agentOn(undefined);
    await plain.agent.prompt('hi');
    expect(endOf(plain.events).execution).toEqual({
      runId: endOf(plain.events).runId,
      outcome: 'completed',
      checkpoint: 'none',
      historyConsistent: true,
    });
    const stored = agentOn(new MemoryCheckpointer());
    await stored.agent.prompt('hi');
    expect(endOf(stored.events).execution).toMatchObject({ checkpoint: 'committed', historyConsistent: true });
  });

  it('a failed write settles as checkpoint failed, and a tool call stored without its result as inconsistent', async () => {
    const store = new MemoryCheckpointer();
    let appends = 0;
    const failing: Checkpointer = {
      load: (t) => store.load(t),
      append: (t, m, o) => {
        // user prompt, assistant with the tool call, then the tool result fails
        if (++appends === 3) return Promise.reject(new Error('disk full'));
        return store.append(t, m, o);
      },
      saveExtra: (t, e) => store.saveExtra(t, e),
      listThreads: (o) => store.listThreads(o),
      deleteThread: (t) => store.deleteThread(t),
    };
    const echo = defineTool({
      name: 'echo',
      description: 'echo',
      parameters: z.object({ text: z.string() }),
      execute: (_id, { text }) => text,
    });
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', { text: 'x' })]), fauxMessage('ok')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [echo], checkpointer: failing, threadId: 't' });
    const events: AgentEvent[] = [];
    agent.subscribe((e) => void events.push(e));
    await expect(agent.prompt('go')).rejects.toBeInstanceOf(CheckpointError);
    expect(endOf(events).execution).toMatchObject({
      outcome: 'failed',
      checkpoint: 'failed',
      historyConsistent: false,
    });
  });

  it('a suspended run is consistent: the held call waits without a result', async () => {
    const send = defineTool({
      name: 'send',
      description: 'send',
      parameters: z.object({}),
      execute: () => 'sent',
    });
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('send', {})]), fauxMessage('done')] });
    const guard = new ToolGuard({ policy: ToolGuard.byName({ ask: ['send'] }) });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [send], middleware: [guard] });
    const events: AgentEvent[] = [];
    agent.subscribe((e) => void events.push(e));
    await agent.prompt('go');
    expect(endOf(events).execution).toMatchObject({ outcome: 'suspended', historyConsistent: true });
  });
});

/** The cross-Agent checks, run on each real backend. */
function acrossAgents(name: string, open: () => Promise<{ make: () => Checkpointer; close: () => Promise<void> }>) {
  it(`${name}: a key stored by one Agent is refused by a new Agent on the thread, nothing is appended`, async () => {
    const { make, close } = await open();
    const first = make();
    const second = make();
    try {
      const a = agentOn(first, 'thread-k');
      await a.agent.prompt('pay the invoice', { idempotencyKey: 'invoice-7' });
      const committed = a.events.find((e) => e.type === 'input_committed');
      expect(committed).toEqual({
        type: 'input_committed',
        runId: endOf(a.events).runId,
        seq: expect.any(Number),
        idempotencyKey: 'invoice-7',
        threadSeq: 1,
      });
      const b = agentOn(second, 'thread-k');
      const error = await duplicate(b.agent.prompt('pay the invoice', { idempotencyKey: 'invoice-7' }));
      expect(error.runId).toBe(endOf(a.events).runId);
      expect(b.calls()).toBe(0);
      expect((await second.load('thread-k'))!.seq).toBe(2);
      // The key is in the prompt's metadata, stored in the prompt's own append.
      const stored = (await second.load('thread-k'))!.messages[0]!;
      expect(stored.metadata).toEqual({ 'cubepi:input': { idempotencyKey: 'invoice-7', runId: error.runId } });
    } finally {
      await close();
    }
  });

  it(`${name}: an approval answered with a key is refused again by a new Agent, with the run it resumed`, async () => {
    const { make, close } = await open();
    const first = make();
    const second = make();
    try {
      const send = defineTool({ name: 'send', description: 'send', parameters: z.object({}), execute: () => 'sent' });
      const build = (checkpointer: Checkpointer) => {
        const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('send', {})]), fauxMessage('done')] });
        const guard = new ToolGuard({ policy: ToolGuard.byName({ ask: ['send'] }) });
        const events: AgentEvent[] = [];
        const agent = new Agent({
          provider: faux,
          model: 'faux',
          tools: [send],
          middleware: [guard],
          checkpointer,
          threadId: 'thread-a',
        });
        agent.subscribe((e) => void events.push(e));
        return { agent, events };
      };
      const a = build(first);
      await a.agent.prompt('send it');
      const { requestId } = a.agent.pending[0]!;
      await a.agent.respond(requestId, { approve: true }, { idempotencyKey: 'approve-1' });
      const resumed = endOf(a.events);
      expect(resumed.outcome).toBe('completed');
      const types = a.events.map((e) => e.type);
      expect(types.slice(types.lastIndexOf('agent_start'), types.lastIndexOf('agent_start') + 2)).toEqual([
        'agent_start',
        'input_committed',
      ]);
      const b = build(second);
      const error = await duplicate(b.agent.respond(requestId, { approve: true }, { idempotencyKey: 'approve-1' }));
      expect(error.runId).toBe(resumed.runId);
      expect((await second.load('thread-a'))!.extra).toMatchObject({
        'cubepi:inputs': [{ idempotencyKey: 'approve-1', runId: resumed.runId }],
      });
      expect(b.agent.state.extra).not.toHaveProperty('cubepi:inputs');
    } finally {
      await close();
    }
  });

  it(`${name}: a prompt whose append failed keeps its key free: the retry runs`, async () => {
    const { make, close } = await open();
    const store = make();
    try {
      let failNext = true;
      const flaky: Checkpointer = {
        load: (t) => store.load(t),
        append: (t, m, o) => {
          if (failNext) {
            failNext = false;
            return Promise.reject(new Error('connection refused'));
          }
          return store.append(t, m, o);
        },
        saveExtra: (t, e) => store.saveExtra(t, e),
        listThreads: (o) => store.listThreads(o),
        deleteThread: (t) => store.deleteThread(t),
      };
      const a = agentOn(flaky, 'thread-f');
      await expect(a.agent.prompt('hello', { idempotencyKey: 'h1' })).rejects.toBeInstanceOf(CheckpointError);
      expect(a.events.some((e) => e.type === 'input_committed')).toBe(false);
      await a.agent.prompt('hello', { idempotencyKey: 'h1' });
      expect(a.events.filter((e) => e.type === 'input_committed')).toHaveLength(1);
      expect((await store.load('thread-f'))!.messages.map(textOf)).toEqual(['hello', 'one']);
    } finally {
      await close();
    }
  });
}

describe('idempotent inputs across Agents', () => {
  let n = 0;
  acrossAgents('SQLite', async () => {
    const file = join(dir, `threads-${++n}.db`);
    const opened: SQLiteCheckpointer[] = [];
    return {
      make: () => {
        const checkpointer = new SQLiteCheckpointer(file);
        opened.push(checkpointer);
        return checkpointer;
      },
      close: async () => {
        for (const checkpointer of opened) await checkpointer.close();
      },
    };
  });
});

requirePostgres();
describe.skipIf(!pgAvailable)('idempotent inputs across Agents (PostgreSQL)', () => {
  acrossAgents('PostgreSQL', async () => {
    const schema = uniqueSchema('idempotent');
    const pools: ReturnType<typeof testPool>[] = [];
    return {
      make: () => {
        const pool = testPool();
        pools.push(pool);
        return new PostgresCheckpointer(pool, { schema });
      },
      close: async () => {
        for (const pool of pools) await pool.end();
        const admin = testPool();
        await dropSchema(admin, schema);
        await admin.end();
      },
    };
  });
});
