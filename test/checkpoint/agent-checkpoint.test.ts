// Checkpointing through the Agent: restore, the sink, extra, conflicts, failures, and a crash mid-tool-batch.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Agent,
  CheckpointError,
  MemoryCheckpointer,
  textOf,
  ThreadConflictError,
  userMessage,
  type AgentEvent,
  type Checkpointer,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { PostgresCheckpointer } from 'cubepi/checkpoint/postgres';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, type FauxResponse } from 'cubepi/testing';
import { bundledScript } from '../bundled-script.js';
import { echoTool, expectConsistentTranscript, resultText } from '../helpers.js';
import { dropSchema, pgAvailable, pgConfig, requirePostgres, testPool, uniqueSchema } from './postgres-server.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-agent-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);

function recording(...responses: FauxResponse[]) {
  const received: string[][] = [];
  const faux = new FauxProvider({
    responses: responses.map((r): FauxResponse => (messages, model, ctx) => {
      received.push(texts(messages));
      return typeof r === 'function' ? r(messages, model, ctx) : r;
    }),
  });
  return { faux, received };
}

/** A checkpointer that delegates to `store`, with some operations replaced. */
function wrapped(store: Checkpointer, overrides: Partial<Checkpointer>): Checkpointer {
  return {
    load: (t) => store.load(t),
    append: (t, m, o) => store.append(t, m, o),
    saveExtra: (t, e) => store.saveExtra(t, e),
    listThreads: (o) => store.listThreads(o),
    deleteThread: (t) => store.deleteThread(t),
    ...overrides,
  };
}

describe('an Agent with a checkpointer', () => {
  it('restores the thread at the first prompt and appends every message of the run', async () => {
    const store = new MemoryCheckpointer();
    await store.append('t1', [userMessage('earlier'), fauxMessage('earlier answer')]);
    const { faux, received } = recording(fauxMessage('new answer'));
    const agent = new Agent({ provider: faux, model: 'faux', checkpointer: store, threadId: 't1' });
    expect(agent.state.messages).toEqual([]);
    const added = await agent.prompt('now');
    expect(received[0]).toEqual(['user:earlier', 'assistant:earlier answer', 'user:now']);
    expect(texts(added)).toEqual(['user:now', 'assistant:new answer']);
    const saved = await store.load('t1');
    expect(texts(saved!.messages)).toEqual([
      'user:earlier',
      'assistant:earlier answer',
      'user:now',
      'assistant:new answer',
    ]);
    expect(saved!.seq).toBe(4);
    expect(agent.state.messages).toEqual(saved!.messages.map((m) => expect.objectContaining({ role: m.role })));
  });

  it('restore() loads the history before any run (for a UI)', async () => {
    const store = new MemoryCheckpointer();
    await store.append('t', [userMessage('hello')]);
    await store.saveExtra('t', { plan: 'pro' });
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux', checkpointer: store, threadId: 't' });
    await agent.restore();
    expect(texts(agent.state.messages)).toEqual(['user:hello']);
    expect(agent.state.extra).toEqual({ plan: 'pro' });
  });

  it('stores every message before its message_end reaches a subscriber (a second connection sees it)', async () => {
    const file = join(dir, 'sink.db');
    const store = new SQLiteCheckpointer(file);
    const reader = new Database(file, { readonly: true });
    const count = () =>
      (reader.prepare("SELECT count(*) AS n FROM cubepi_messages WHERE thread_id = 'sink'").get() as { n: number }).n;
    try {
      const faux = new FauxProvider({
        responses: [
          fauxMessage([{ type: 'toolCall', id: 'e1', name: 'echo', arguments: { i: 1 } }]),
          fauxMessage('done'),
        ],
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echoTool],
        checkpointer: store,
        threadId: 'sink',
      });
      const seenAtDelivery: number[] = [];
      let ends = 0;
      agent.subscribe((e: AgentEvent) => {
        if (e.type === 'message_end') seenAtDelivery.push(count() - ++ends);
      });
      await agent.prompt('go');
      expect(ends).toBe(4);
      expect(seenAtDelivery).toEqual([0, 0, 0, 0]); // never behind
    } finally {
      reader.close();
      await store.close();
    }
  });

  it('saves extra at every turn end where it changed (replace semantics)', async () => {
    const store = new MemoryCheckpointer();
    const saved: Record<string, unknown>[] = [];
    const spy: Checkpointer = {
      ...store,
      load: (t) => store.load(t),
      append: (t, m, o) => store.append(t, m, o),
      saveExtra: async (t, extra) => (saved.push({ ...extra }), store.saveExtra(t, extra)),
      listThreads: (o) => store.listThreads(o),
      deleteThread: (t) => store.deleteThread(t),
    };
    const faux = new FauxProvider({
      responses: [
        fauxMessage([{ type: 'toolCall', id: 'e1', name: 'echo', arguments: { i: 1 } }]),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [echoTool],
      checkpointer: spy,
      threadId: 'x',
      extra: { stale: true },
      afterModelResponse: (_r, ctx) => ({
        patch: { delete: ['stale'], set: { turns: ((ctx.state.values.turns as number) ?? 0) + 1 } },
      }),
    });
    await agent.prompt('go');
    // The values are the record's keys, as extra always was; the state's bookkeeping rides along under its key.
    expect(saved.map(({ 'cubepi:state': _, ...values }) => values)).toEqual([{ turns: 1 }, { turns: 2 }]);
    expect(saved.map((record) => (record['cubepi:state'] as { version: number }).version)).toEqual([1, 2]);
    const { 'cubepi:state': _state, ...stored } = (await store.load('x'))!.extra;
    expect(stored).toEqual({ turns: 2 });
  });

  it('writes extra only when it differs from what the store holds (loaded, or last saved)', async () => {
    const store = new MemoryCheckpointer();
    await store.saveExtra('y', { plan: 'pro' });
    const saved: Record<string, unknown>[] = [];
    const spy = wrapped(store, {
      saveExtra: async (t, extra) => (saved.push({ ...extra }), store.saveExtra(t, extra)),
    });
    let change: Record<string, unknown> | undefined = undefined;
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two'), fauxMessage('three')] }),
      model: 'faux',
      checkpointer: spy,
      threadId: 'y',
      afterModelResponse: () => (change === undefined ? undefined : { patch: { set: change } }),
    });
    await agent.prompt('a'); // extra as loaded: nothing to write
    expect(saved).toEqual([]);
    change = { plan: 'team' };
    await agent.prompt('b'); // changed: written once
    expect(saved.map((record) => record.plan)).toEqual(['team']);
    change = undefined;
    await agent.prompt('c'); // unchanged: the store holds it
    expect(saved).toHaveLength(1);
    expect((await store.load('y'))!.extra.plan).toEqual('team');
    expect(agent.state.extra).toEqual({ plan: 'team' });
  });

  it('two agents on one thread: the second writer gets a ThreadConflictError, then reloads and continues', async () => {
    const store = new MemoryCheckpointer();
    const a = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('from A')] }),
      model: 'faux',
      checkpointer: store,
      threadId: 'shared',
    });
    const { faux, received } = recording(fauxMessage('never stored'), fauxMessage('from B, after reloading'));
    const b = new Agent({ provider: faux, model: 'faux', checkpointer: store, threadId: 'shared' });
    await Promise.all([a.restore(), b.restore()]); // both loaded the empty thread
    await a.prompt('A asks');
    const events: AgentEvent[] = [];
    b.subscribe((e) => void events.push(e));
    const error = await b.prompt('B asks').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThreadConflictError);
    expect(events.at(-1)?.type).toBe('agent_end'); // events$ still gets the end
    expect(b.state.isStreaming).toBe(false);
    expect(b.state.errorMessage).toMatch(/changed under this writer/);
    // Nothing of B's failed run was stored; B's state shows what was stored (nothing of that run).
    expect(texts((await store.load('shared'))!.messages)).toEqual(['user:A asks', 'assistant:from A']);
    const added = await b.prompt('B asks again');
    expect(received.at(-1)).toEqual(['user:A asks', 'assistant:from A', 'user:B asks again']);
    expect(texts(added)).toEqual(['user:B asks again', 'assistant:from B, after reloading']);
    expect(texts((await store.load('shared'))!.messages)).toHaveLength(4);
  });

  it('a failing write ends the run with a CheckpointError naming the thread; memory and store agree', async () => {
    const store = new MemoryCheckpointer();
    let failNext = false;
    const flaky: Checkpointer = {
      load: (t) => store.load(t),
      append: async (t, m, o) => {
        if (failNext && m[0]?.role === 'assistant') throw new Error('disk full');
        return store.append(t, m, o);
      },
      saveExtra: (t, e) => store.saveExtra(t, e),
      listThreads: (o) => store.listThreads(o),
      deleteThread: (t) => store.deleteThread(t),
    };
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('lost'), fauxMessage('kept')] }),
      model: 'faux',
      checkpointer: flaky,
      threadId: 'disk',
    });
    failNext = true;
    const error = await agent.prompt('first').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointError);
    expect((error as CheckpointError).message).toMatch(/disk/);
    expect((error as CheckpointError).threadId).toBe('disk');
    expect(texts(agent.state.messages)).toEqual(texts((await store.load('disk'))!.messages));
    failNext = false;
    await agent.prompt('second');
    expect(texts(agent.state.messages)).toEqual(texts((await store.load('disk'))!.messages));
  });

  it('a run ended by a hook failure still stores the messages that close it', async () => {
    const store = new MemoryCheckpointer();
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('x')] }),
      model: 'faux',
      checkpointer: store,
      threadId: 'hook',
      transformSystemPrompt: () => Promise.reject(new Error('vault sealed')),
    });
    await expect(agent.prompt('go')).rejects.toMatchObject({ hook: 'transformSystemPrompt' });
    const saved = await store.load('hook');
    expect(saved!.messages.map((m) => (m.role === 'assistant' ? `assistant(${m.stopReason})` : m.role))).toEqual([
      'user',
      'assistant(error)',
    ]);
  });

  it('restore() not awaited, then prompt(): both wait for one load; memory and store agree, the next prompt() succeeds', async () => {
    const store = new MemoryCheckpointer();
    await store.append('race', [userMessage('earlier')]);
    let loads = 0;
    const slowFirstLoad = wrapped(store, {
      load: async (t) => {
        const data = await store.load(t); // the thread as it is now, delivered late
        if (++loads === 1) await new Promise((resolve) => setTimeout(resolve, 30));
        return data;
      },
    });
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] }),
      model: 'faux',
      checkpointer: slowFirstLoad,
      threadId: 'race',
    });
    const restoring = agent.restore();
    await agent.prompt('first');
    await restoring;
    expect(loads).toBe(1);
    const saved = await store.load('race');
    expect(texts(saved!.messages)).toEqual(['user:earlier', 'user:first', 'assistant:one']);
    expect(agent.state.messages).toEqual(saved!.messages);
    const added = await agent.prompt('second'); // with a stale seq, a ThreadConflictError of the agent's own making
    expect(texts(added)).toEqual(['user:second', 'assistant:two']);
    expect(agent.state.messages).toEqual((await store.load('race'))!.messages);
  });

  it('an extra holding a function: the run stores the rest (JSON drops functions) and the agent keeps it', async () => {
    const store = new MemoryCheckpointer();
    const format = (n: number) => `#${n}`;
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
      model: 'faux',
      checkpointer: store,
      threadId: 'fn',
      extra: { format, plan: 'pro' },
    });
    const added = await agent.prompt('go');
    expect(texts(added)).toEqual(['user:go', 'assistant:ok']);
    expect((await store.load('fn'))!.extra).toEqual({ plan: 'pro' });
    expect(agent.state.extra.format).toBe(format);
  });

  it('a prompt$ subscriber that leaves while an append is pending: the run is closed and stored, memory and store agree', async () => {
    const store = new MemoryCheckpointer();
    let appendStarted!: () => void;
    const started = new Promise<void>((resolve) => (appendStarted = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slowAppend = wrapped(store, {
      append: async (t, m, o) => {
        appendStarted();
        await released;
        return store.append(t, m, o);
      },
    });
    const agent = new Agent({
      // Paced, so the first response is still streaming when the subscriber leaves.
      provider: new FauxProvider({ responses: [fauxMessage('x'.repeat(400)), fauxMessage('two')], delayMs: 2 }),
      model: 'faux',
      checkpointer: slowAppend,
      threadId: 'left',
    });
    const seen: string[] = [];
    const subscription = agent.prompt$('first').subscribe((event) => seen.push(event.type));
    await started; // the user message's append is pending
    subscription.unsubscribe();
    release();
    await agent.waitForIdle();
    expect(seen).not.toContain('message_end'); // the subscriber left before anything was stored
    const saved = await store.load('left');
    expect(saved!.messages.map((m) => (m.role === 'assistant' ? `assistant(${m.stopReason})` : m.role))).toEqual([
      'user',
      'assistant(aborted)',
    ]);
    expect(agent.state.messages).toEqual(saved!.messages);
    const added = await agent.prompt('second');
    expect(texts(added)).toEqual(['user:second', 'assistant:two']);
    expect(agent.state.messages).toEqual((await store.load('left'))!.messages);
  });

  it('rejects a checkpointer without a threadId, or with messages, at construction', () => {
    const store = new MemoryCheckpointer();
    expect(() => new Agent({ provider: new FauxProvider(), model: 'faux', checkpointer: store })).toThrow(
      'a `checkpointer` needs a `threadId`',
    );
    expect(
      () =>
        new Agent({ provider: new FauxProvider(), model: 'faux', checkpointer: store, threadId: 't', messages: [] }),
    ).toThrow(/drop `messages`/);
  });

  it('reset() keeps the store: the next run restores the thread again', async () => {
    const store = new MemoryCheckpointer();
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] }),
      model: 'faux',
      checkpointer: store,
      threadId: 'r',
    });
    await agent.prompt('first');
    agent.reset();
    expect(agent.state.messages).toEqual([]);
    await agent.prompt('second');
    expect(texts(agent.state.messages)).toEqual(['user:first', 'assistant:one', 'user:second', 'assistant:two']);
  });
});

describe('resume after a crash mid-tool-batch (a child process killed with SIGKILL)', () => {
  const fixture = fileURLToPath(new URL('./fixtures/agent-until-killed.ts', import.meta.url));
  const root = fileURLToPath(new URL('../..', import.meta.url));
  /** `fixture` bundled once for this file (`bundledScript`): its processes start without compiling it. */
  let fixtureBundle: string;
  beforeAll(async () => {
    fixtureBundle = await bundledScript(fixture);
  });

  /** Runs the agent in a child, waits until its first tool result is stored and the second tool hangs, kills it. */
  async function runUntilKilled(args: string[], stored: () => Promise<number>): Promise<void> {
    const child = spawn(process.execPath, [fixtureBundle, ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('second tool started')) resolve();
      });
      void exited.then(() => reject(new Error(`the agent exited before it was killed:\n${stderr}`)));
    });
    // user, assistant (two calls), the first result: the batch is half done.
    while ((await stored()) < 3) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
  }

  async function resumeAndCheck(checkpointer: Checkpointer, threadId: string) {
    const { faux, received } = recording(fauxMessage('recovered'));
    const agent = new Agent({ provider: faux, model: 'faux', checkpointer, threadId, tools: [echoTool] });
    const added = await agent.resume();
    const history = agent.state.messages;
    expectConsistentTranscript(history);
    const results = history.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((r) => [r.toolCallId, r.isError, resultText(r).slice(0, 24)])).toEqual([
      ['call_first', false, 'first answer'],
      ['call_second', true, 'Tool call interrupted: t'],
    ]);
    expect(received[0]).toEqual([
      'user:Look up both',
      'assistant:',
      'toolResult:first answer',
      expect.stringMatching(/^toolResult:Tool call interrupted/),
    ]);
    expect(texts(added)).toEqual(['assistant:recovered']);
    const saved = await checkpointer.load(threadId);
    expect(saved!.seq).toBe(5);
    expect(texts(saved!.messages)).toEqual(texts(history));
  }

  it('SQLite: the new process closes the batch ("interrupted") and resume() continues', async () => {
    const file = join(dir, 'crash.db');
    const reader = () => {
      try {
        const db = new Database(file, { readonly: true, fileMustExist: true });
        try {
          return (
            db.prepare("SELECT count(*) AS n FROM cubepi_messages WHERE thread_id = 'crash'").get() as { n: number }
          ).n;
        } finally {
          db.close();
        }
      } catch {
        return 0;
      }
    };
    await runUntilKilled(['sqlite', file, 'crash'], async () => reader());
    const checkpointer = new SQLiteCheckpointer(file);
    try {
      await resumeAndCheck(checkpointer, 'crash');
    } finally {
      await checkpointer.close();
    }
  });

  requirePostgres();
  it.skipIf(!pgAvailable)(
    'PostgreSQL: the new process closes the batch ("interrupted") and resume() continues',
    async () => {
      const schema = uniqueSchema('agent_crash');
      const admin = testPool();
      try {
        const count = async () => {
          try {
            const { rows } = await admin.query(
              `SELECT count(*)::int AS n FROM "${schema}".cubepi_messages WHERE thread_id = 'crash'`,
            );
            return (rows[0] as { n: number }).n;
          } catch {
            return 0;
          }
        };
        await runUntilKilled(['postgres', JSON.stringify(pgConfig), schema, 'crash'], count);
        const checkpointer = new PostgresCheckpointer(testPool(), { schema });
        try {
          await resumeAndCheck(checkpointer, 'crash');
        } finally {
          await checkpointer.close();
        }
      } finally {
        await dropSchema(admin, schema);
        await admin.end();
      }
    },
  );
});
