// A tool call is stored before its tool runs: the loop waits at each batch until the checkpoint sink has stored the
// assistant message that asked for the calls. Without it, a write that fails (or a process that dies) after the tool
// ran leaves a store that does not know the call, and the retry asks the model again: a non-idempotent tool twice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  Agent,
  CheckpointError,
  ConfigurationError,
  defineTool,
  runAgentLoop,
  textOf,
  userMessage,
  type AgentEvent,
  type Checkpointer,
  type Message,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { z } from 'zod';
import { deferred, expectConsistentTranscript } from '../helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-store-before-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const roles = (messages: readonly Message[]) =>
  messages.map((m) => (m.role === 'assistant' ? `assistant(${m.stopReason})` : `${m.role}:${textOf(m)}`));

/** A real SQLite checkpointer whose append of an assistant message is handled by `assistantAppend`. */
function withAssistantAppend(
  store: Checkpointer,
  assistantAppend: (append: () => Promise<{ seq: number }>) => Promise<{ seq: number }>,
): Checkpointer {
  return {
    load: (t) => store.load(t),
    append: (t, m, o) =>
      m[0]?.role === 'assistant' && m[0].content.some((b) => b.type === 'toolCall')
        ? assistantAppend(() => store.append(t, m, o))
        : store.append(t, m, o),
    saveExtra: (t, e) => store.saveExtra(t, e),
    listThreads: (o) => store.listThreads(o),
    deleteThread: (t) => store.deleteThread(t),
  };
}

/** A macrotask: anything the loop does in microtasks after emitting has happened by then. */
const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

function charge(log: string[], seen: (stored: readonly Message[]) => void, store: Checkpointer) {
  return defineTool({
    name: 'charge_card',
    description: 'Charges the card (not idempotent)',
    parameters: z.object({ cents: z.number() }),
    execute: async (_id, { cents }) => {
      log.push('tool runs');
      seen((await store.load('pay'))?.messages ?? []);
      return { content: [{ type: 'text', text: `charged ${cents}` }] };
    },
  });
}

describe('a tool call is stored before its tool runs', () => {
  it('a slow append: the tool starts only once the assistant message with its call is stored (SQLite file)', async () => {
    const sqlite = new SQLiteCheckpointer(join(dir, 'slow.db'));
    const log: string[] = [];
    let storedAtStart: readonly Message[] = [];
    const slow = withAssistantAppend(sqlite, async (append) => {
      log.push('append begins');
      // Several macrotasks: before the fix the tool ran in the microtasks right after message_end.
      for (let i = 0; i < 3; i++) await macrotask();
      const result = await append();
      log.push('append done');
      return result;
    });
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('charge_card', { cents: 500 }, { id: 'c1' })]), fauxMessage('Done.')],
      }),
      model: 'faux',
      checkpointer: slow,
      threadId: 'pay',
      tools: [charge(log, (stored) => (storedAtStart = stored), sqlite)],
    });
    try {
      await agent.prompt('Charge 5 dollars');
      expect(log).toEqual(['append begins', 'append done', 'tool runs']);
      expect(roles(storedAtStart)).toEqual(['user:Charge 5 dollars', 'assistant(toolUse)']);
      const saved = await sqlite.load('pay');
      expectConsistentTranscript(saved!.messages);
      expect(roles(saved!.messages)).toEqual([
        'user:Charge 5 dollars',
        'assistant(toolUse)',
        'toolResult:charged 500',
        'assistant(stop)',
      ]);
    } finally {
      await sqlite.close();
    }
  });

  it('an append refused for the message with the call: the tool never runs, the run fails typed, the store is whole', async () => {
    const sqlite = new SQLiteCheckpointer(join(dir, 'refused.db'));
    const log: string[] = [];
    const refusing = withAssistantAppend(sqlite, async () => {
      log.push('append refused');
      await macrotask();
      throw new Error('connection terminated');
    });
    const events: AgentEvent[] = [];
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('charge_card', { cents: 500 }, { id: 'c1' })]), fauxMessage('Done.')],
      }),
      model: 'faux',
      checkpointer: refusing,
      threadId: 'pay',
      tools: [charge(log, () => {}, sqlite)],
    });
    agent.subscribe((event) => void events.push(event));
    try {
      const error = await agent.prompt('Charge 5 dollars').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CheckpointError);
      expect((error as Error).message).toMatch(/connection terminated/);
      expect(log).toEqual(['append refused']);
      expect(events.filter((e) => e.type === 'tool_execution_start')).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'failed' });
      // The store knows no call, so a retry asks the model again, and the tool runs for the first time then.
      expect(roles((await sqlite.load('pay'))!.messages)).toEqual(['user:Charge 5 dollars']);
    } finally {
      await sqlite.close();
    }
  });

  it('a run cancelled while its call is being stored: the tool never starts, the call is answered aborted and stored', async () => {
    const sqlite = new SQLiteCheckpointer(join(dir, 'cancelled.db'));
    const log: string[] = [];
    const gate = deferred();
    const appending = deferred();
    const held = withAssistantAppend(sqlite, async (append) => {
      appending.resolve();
      await gate.promise;
      return append();
    });
    const events: AgentEvent[] = [];
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('charge_card', { cents: 500 }, { id: 'c1' })]), fauxMessage('Done.')],
      }),
      model: 'faux',
      checkpointer: held,
      threadId: 'pay',
      tools: [charge(log, () => {}, sqlite)],
    });
    agent.subscribe((event) => void events.push(event));
    try {
      const done = agent.prompt('Charge 5 dollars');
      await appending.promise; // the loop waits at the batch for this write
      agent.abort('the user pressed Stop');
      gate.resolve();
      const added = await done;
      expect(log).toEqual([]);
      expect(events.filter((e) => e.type === 'tool_execution_start' && e.toolCallId === 'c1')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
      const saved = (await sqlite.load('pay'))!.messages;
      expectConsistentTranscript(saved);
      expect(saved).toEqual(agent.state.messages);
      expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
      const result = saved.find((m) => m.role === 'toolResult');
      expect(result).toMatchObject({ toolCallId: 'c1', isError: true, outcome: 'aborted' });
    } finally {
      await sqlite.close();
    }
  });

  it('runAgentLoop waits for untilStored before a batch; a rejection answers the calls unexecuted and fails the run', async () => {
    const log: string[] = [];
    const tool = defineTool({
      name: 'charge_card',
      description: 'Charges the card',
      parameters: z.object({ cents: z.number() }),
      execute: () => {
        log.push('tool runs');
        return { content: [{ type: 'text', text: 'charged' }] };
      },
    });
    const provider = () =>
      new FauxProvider({ responses: [fauxMessage([fauxToolCall('charge_card', { cents: 1 })]), fauxMessage('ok')] });
    const run = (untilStored: () => PromiseLike<void> | undefined) => {
      const events: AgentEvent[] = [];
      return new Promise<{ events: AgentEvent[]; error?: unknown }>((resolve) => {
        runAgentLoop({
          provider: provider(),
          model: { id: 'faux', provider: 'faux' },
          prompts: [userMessage('go')],
          tools: [tool],
          untilStored,
        }).subscribe({
          next: (event) => events.push(event),
          error: (error: unknown) => resolve({ events, error }),
          complete: () => resolve({ events }),
        });
      });
    };

    let calls = 0;
    const ok = await run(() => {
      calls++;
      log.push('barrier');
      return macrotask().then(() => void log.push('barrier passed'));
    });
    expect(ok.error).toBeUndefined();
    expect(calls).toBe(1);
    expect(log).toEqual(['barrier', 'barrier passed', 'tool runs']);

    log.length = 0;
    const refused = await run(() => Promise.reject(new Error('store is gone')));
    expect(log).toEqual([]);
    expect((refused.error as Error).message).toBe('store is gone');
    const end = refused.events.at(-1) as Extract<AgentEvent, { type: 'agent_end' }>;
    expect(end).toMatchObject({ type: 'agent_end', outcome: 'failed' });
    expectConsistentTranscript(end.messages);
    const result = end.messages.find((m) => m.role === 'toolResult');
    expect(result && textOf(result)).toMatch(
      /Tool call not completed: the run ended because of an error \(store is gone\)/,
    );

    expect(() =>
      runAgentLoop({
        provider: provider(),
        model: { id: 'faux', provider: 'faux' },
        untilStored: 'soon' as unknown as () => undefined,
      }),
    ).toThrow(ConfigurationError);
  });
});
