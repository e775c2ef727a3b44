// agent.fork() and agent.retryFrom(): the agent moves to a fork of its thread, the parent stays as it was, and a
// retry runs from the message before the one it names.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  AgentBusyError,
  defineTool,
  ToolGuard,
  InvalidInputError,
  InvalidStateError,
  MemoryCheckpointer,
  textOf,
  ThreadConflictError,
  type AgentEvent,
  type Checkpointer,
  type Message,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxResponse } from 'cubepi/testing';
import { echoTool } from './helpers.js';

const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);

/** A faux provider that records the history each model call received; `add` queues more responses. */
function recording(...responses: FauxResponse[]) {
  const received: string[][] = [];
  const record =
    (r: FauxResponse): FauxResponse =>
    (messages, model, ctx) => {
      received.push(texts(messages));
      return typeof r === 'function' ? r(messages, model, ctx) : r;
    };
  const faux = new FauxProvider({ responses: responses.map(record) });
  const add = (...more: FauxResponse[]) => faux.appendResponses(more.map(record));
  return { faux, received, add };
}

/** A thread `main` of four messages: user q1, assistant a1, user q2, assistant a2. */
async function twoExchanges(checkpointer: Checkpointer = new MemoryCheckpointer()) {
  const { faux, received, add } = recording(fauxMessage('a1'), fauxMessage('a2'));
  const agent = new Agent({ provider: faux, model: 'faux', checkpointer, threadId: 'main' });
  await agent.prompt('q1');
  await agent.prompt('q2');
  return { agent, faux, received, add, checkpointer };
}

const MAIN = ['user:q1', 'assistant:a1', 'user:q2', 'assistant:a2'];

describe('agent.fork()', () => {
  it('moves the agent to a fork at atSeq; its next runs write the fork and the parent stays as it was', async () => {
    const { agent, add, received, checkpointer } = await twoExchanges();
    expect(agent.threadId).toBe('main');
    expect(await agent.fork({ atSeq: 2, newThreadId: 'branch' })).toEqual({ threadId: 'branch', seq: 2 });
    expect(agent.threadId).toBe('branch');
    expect(texts(agent.state.messages)).toEqual(['user:q1', 'assistant:a1']);
    add(fauxMessage('b'));
    await agent.prompt('other');
    expect(received.at(-1)).toEqual(['user:q1', 'assistant:a1', 'user:other']);
    expect(texts((await checkpointer.load('branch'))!.messages)).toEqual([
      'user:q1',
      'assistant:a1',
      'user:other',
      'assistant:b',
    ]);
    expect(texts((await checkpointer.load('main'))!.messages)).toEqual(MAIN);
    const listed = await checkpointer.listThreads();
    expect(listed.map((t) => [t.threadId, t.parent])).toEqual([
      ['branch', { threadId: 'main', atSeq: 2 }],
      ['main', undefined],
    ]);
  });

  it('forks the whole thread by default, into a random id; hooks see the fork as ctx.threadId', async () => {
    const seen: (string | undefined)[] = [];
    const checkpointer = new MemoryCheckpointer();
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('a1'), fauxMessage('a2')] }),
      model: 'faux',
      checkpointer,
      threadId: 'main',
      transformContext: (messages, ctx) => (seen.push(ctx.threadId), messages),
    });
    await agent.prompt('q1');
    const { threadId, seq } = await agent.fork();
    expect(threadId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(seq).toBe(2);
    await agent.prompt('q2');
    expect(seen).toEqual(['main', threadId]);
    expect(texts((await checkpointer.load(threadId))!.messages)).toEqual(MAIN);
  });

  it('restores first: an agent that never ran forks the stored thread, and a new agent restores the fork', async () => {
    const { checkpointer } = await twoExchanges();
    const fresh = new Agent({ provider: new FauxProvider(), model: 'faux', checkpointer, threadId: 'main' });
    await fresh.fork({ atSeq: 3, newThreadId: 'b' });
    expect(texts(fresh.state.messages)).toEqual(MAIN.slice(0, 3));
    const later = new Agent({ provider: new FauxProvider(), model: 'faux', checkpointer, threadId: 'b' });
    await later.restore();
    expect(texts(later.state.messages)).toEqual(MAIN.slice(0, 3));
  });

  it('keeps the agent on its thread when the fork is refused (a taken id, atSeq past the end)', async () => {
    const { agent, checkpointer } = await twoExchanges();
    await checkpointer.append('taken', []);
    await checkpointer.saveExtra('taken', {});
    await expect(agent.fork({ newThreadId: 'taken' })).rejects.toBeInstanceOf(ThreadConflictError);
    await expect(agent.fork({ atSeq: 5, newThreadId: 'x' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(agent.fork({ atSeq: -1, newThreadId: 'x' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(agent.fork({ newThreadId: '' })).rejects.toBeInstanceOf(InvalidInputError);
    expect(agent.threadId).toBe('main');
    expect(texts(agent.state.messages)).toEqual(MAIN);
    expect((await checkpointer.listThreads()).map((t) => t.threadId)).toEqual(['taken', 'main']);
  });

  it('is refused without a checkpointer, with a checkpointer without fork, and during a run', async () => {
    const bare = new Agent({ provider: new FauxProvider(), model: 'faux' });
    await expect(bare.fork()).rejects.toBeInstanceOf(InvalidStateError);
    await expect(bare.retryFrom(0)).rejects.toBeInstanceOf(InvalidStateError);
    expect(bare.threadId).toBeUndefined();

    const memory = new MemoryCheckpointer();
    const noFork: Checkpointer = {
      load: (id) => memory.load(id),
      append: (id, messages, options) => memory.append(id, messages, options),
      saveExtra: (id, extra) => memory.saveExtra(id, extra),
      listThreads: (options) => memory.listThreads(options),
      deleteThread: (id) => memory.deleteThread(id),
    };
    const old = new Agent({ provider: new FauxProvider(), model: 'faux', checkpointer: noFork, threadId: 't' });
    await expect(old.fork()).rejects.toThrow(/does not implement fork/);
    await expect(old.retryFrom(0)).rejects.toBeInstanceOf(InvalidStateError);

    const { agent, faux } = await twoExchanges();
    faux.appendResponses([fauxMessage('slow')]);
    const running = agent.prompt('q3');
    await expect(agent.fork()).rejects.toBeInstanceOf(AgentBusyError);
    await running;
    // And a run cannot start while the fork is being made.
    const forking = agent.fork({ newThreadId: 'f' });
    await expect(agent.prompt('during')).rejects.toBeInstanceOf(AgentBusyError);
    await forking;
    expect(agent.threadId).toBe('f');
  });
});

describe('agent.retryFrom()', () => {
  it('edit and resend: forks before the user message and sends the new input instead; the parent is unchanged', async () => {
    const { agent, add, received, checkpointer } = await twoExchanges();
    add(fauxMessage('a2 again'));
    const added = await agent.retryFrom(2, 'q2 edited', { newThreadId: 'edit' });
    expect(texts(added)).toEqual(['user:q2 edited', 'assistant:a2 again']);
    expect(received.at(-1)).toEqual(['user:q1', 'assistant:a1', 'user:q2 edited']);
    expect(agent.threadId).toBe('edit');
    expect(texts(agent.state.messages)).toEqual(['user:q1', 'assistant:a1', 'user:q2 edited', 'assistant:a2 again']);
    expect(texts((await checkpointer.load('edit'))!.messages)).toEqual(texts(agent.state.messages));
    expect(texts((await checkpointer.load('main'))!.messages)).toEqual(MAIN);
  });

  it('resends the same user message when no input is given, and regenerates an assistant message', async () => {
    const { agent, add, received, checkpointer } = await twoExchanges();
    add(fauxMessage('a1 bis'), fauxMessage('a1 ter'));
    await agent.retryFrom(0, undefined, { newThreadId: 'resend' });
    expect(received.at(-1)).toEqual(['user:q1']);
    expect(texts(agent.state.messages)).toEqual(['user:q1', 'assistant:a1 bis']);
    expect(agent.state.messages[0]!.timestamp).toBeGreaterThanOrEqual(
      (await checkpointer.load('main'))!.messages[0]!.timestamp,
    );
    // Regenerate: retry from the assistant message, on the fork the agent is now on.
    await agent.retryFrom(1, undefined, { newThreadId: 'regen' });
    expect(received.at(-1)).toEqual(['user:q1']);
    expect(texts(agent.state.messages)).toEqual(['user:q1', 'assistant:a1 ter']);
    expect((await checkpointer.listThreads()).map((t) => [t.threadId, t.parent?.threadId, t.parent?.atSeq])).toEqual([
      ['regen', 'resend', 1],
      ['resend', 'main', 0],
      ['main', undefined, undefined],
    ]);
  });

  it('refuses a seq that names no message, a tool result, or new input for an assistant message: nothing forked', async () => {
    const checkpointer = new MemoryCheckpointer();
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', { text: 'x' })]), fauxMessage('done')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [echoTool], checkpointer, threadId: 'main' });
    await agent.prompt('go');
    expect(agent.state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    const calls = faux.callCount;
    await expect(agent.retryFrom(2)).rejects.toThrow(/tool result/);
    await expect(agent.retryFrom(4)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(agent.retryFrom(-1)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(agent.retryFrom(1.5)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(agent.retryFrom(3, 'edit')).rejects.toThrow(/regenerated, not edited/);
    await expect(agent.retryFrom(0, 42 as unknown as string)).rejects.toBeInstanceOf(InvalidInputError);
    expect(faux.callCount).toBe(calls);
    expect((await checkpointer.listThreads()).map((t) => t.threadId)).toEqual(['main']);
    expect(agent.threadId).toBe('main');
    // After a tool result, an assistant message regenerates from the complete batch.
    faux.appendResponses([fauxMessage('done again')]);
    await agent.retryFrom(3, undefined, { newThreadId: 'again' });
    expect(agent.state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(textOf(agent.state.messages[3]!)).toBe('done again');
  });

  it('retryFrom$ is cold: nothing is forked before subscribing; unsubscribing cancels the run on the fork', async () => {
    const { agent, faux, checkpointer } = await twoExchanges();
    faux.appendResponses([fauxMessage('a long answer '.repeat(200))]);
    const run$ = agent.retryFrom$(2, 'q2 edited', { newThreadId: 'cold' });
    await Promise.resolve();
    expect((await checkpointer.listThreads()).map((t) => t.threadId)).toEqual(['main']);
    const hub: AgentEvent[] = [];
    const off = agent.subscribe((event) => void hub.push(event));
    const seen: AgentEvent[] = [];
    await new Promise<void>((resolve) => {
      const subscription = run$.subscribe((event) => {
        seen.push(event);
        if (event.type === 'message_update') {
          subscription.unsubscribe();
          resolve();
        }
      });
    });
    await agent.waitForIdle();
    off();
    expect(seen.at(-1)?.type).toBe('message_update');
    const end = hub.at(-1);
    expect(end?.type === 'agent_end' && end.outcome).toBe('cancelled');
    const stored = (await checkpointer.load('cold'))!.messages;
    expect(texts(stored.slice(0, 3))).toEqual(['user:q1', 'assistant:a1', 'user:q2 edited']);
    expect(stored.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    expect(texts((await checkpointer.load('main'))!.messages)).toEqual(MAIN);
  });

  it('unsubscribing while the fork is written: the fork stays, the agent is on it, the run ends cancelled', async () => {
    const { agent, faux, checkpointer } = await twoExchanges();
    const calls = faux.callCount;
    const ends: AgentEvent[] = [];
    const off = agent.subscribe((event) => void (event.type === 'agent_end' && ends.push(event)));
    const seen: AgentEvent[] = [];
    agent
      .retryFrom$(2, 'edited', { newThreadId: 'left' })
      .subscribe((event) => seen.push(event))
      .unsubscribe();
    await agent.waitForIdle();
    off();
    expect(seen).toEqual([]);
    expect(agent.threadId).toBe('left');
    expect(faux.callCount).toBe(calls);
    expect(ends.map((e) => e.type === 'agent_end' && e.outcome)).toEqual(['cancelled']);
    expect(texts((await checkpointer.load('main'))!.messages)).toEqual(MAIN);
    const fork = (await checkpointer.load('left'))!.messages;
    // As any cancelled run: its prompt stored, then the closing aborted message, and no model call.
    expect(texts(fork)).toEqual(['user:q1', 'assistant:a1', 'user:edited', 'assistant:']);
    expect(fork.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
  });

  it('a run cannot start while a retry is forking, and a retry is refused during a run', async () => {
    const { agent, faux } = await twoExchanges();
    faux.appendResponses([fauxMessage('r'), fauxMessage('s')]);
    const retrying = agent.retryFrom(2, 'edited', { newThreadId: 'r' });
    await expect(agent.prompt('meanwhile')).rejects.toBeInstanceOf(AgentBusyError);
    await expect(agent.retryFrom(0)).rejects.toBeInstanceOf(AgentBusyError);
    await retrying;
    expect(agent.threadId).toBe('r');
  });
});

describe('forks of a suspended run', () => {
  it('a fork of the whole thread keeps the pending approvals; a retry from before the batch drops them', async () => {
    const ran: string[] = [];
    const checkpointer = new MemoryCheckpointer();
    const faux = new FauxProvider({
      responses: [fauxMessage('hello'), fauxMessage([fauxToolCall('pay', { amount: 5 }, { id: 'c1' })])],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [
        defineTool({
          name: 'pay',
          description: 'pays',
          parameters: z.object({ amount: z.number() }),
          execute: (_id, { amount }) => (ran.push(`pay ${amount}`), `paid ${amount}`),
        }),
      ],
      middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['pay'] }) })],
      checkpointer,
      threadId: 'main',
    });
    await agent.prompt('hi');
    await agent.prompt('pay 5');
    expect(agent.pending.map((r) => r.toolCallId)).toEqual(['c1']);

    await agent.fork({ newThreadId: 'whole' });
    expect(agent.pending.map((r) => r.toolCallId)).toEqual(['c1']);
    faux.appendResponses([fauxMessage('paid on the fork')]);
    await agent.respond(agent.pending[0]!.requestId, { approve: true });
    expect(ran).toEqual(['pay 5']);
    expect(textOf((await checkpointer.load('whole'))!.messages.at(-1)!)).toBe('paid on the fork');
    // The parent is still suspended, with its request unanswered.
    const parent = await checkpointer.load('main');
    expect(parent!.messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'toolUse' });

    // Back on the parent (a new agent), a retry from the prompt before the batch leaves no approval behind.
    const other = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('no payment then')] }),
      model: 'faux',
      middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['pay'] }) })],
      checkpointer,
      threadId: 'main',
    });
    await other.restore();
    expect(other.pending).toHaveLength(1);
    await other.retryFrom(2, 'do not pay', { newThreadId: 'retry' });
    expect(other.pending).toEqual([]);
    expect(texts(other.state.messages)).toEqual([
      'user:hi',
      'assistant:hello',
      'user:do not pay',
      'assistant:no payment then',
    ]);
    expect((await checkpointer.load('retry'))!.extra['cubepi:approvals']).toBeUndefined();
  });
});
