// Seed 004: "Subscriber 会收到循环发出的每一个 AgentEvent。可以是同步或异步函数。" — `agent.subscribe(fn, { await: true })`
// awaits an async listener, in order, from a queue of its own: the run and the synchronous listeners never wait for
// it, and the run's Promise settles only once it has handled the run's agent_end.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Agent, InvalidInputError, type AgentEvent, type AgentListener } from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { deferred } from './helpers.js';

/** Waits (on macrotasks, never a fixed delay) until `condition` holds. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if (condition()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error(`never: ${what}`);
}

/** A few turns of the event loop: what a missing wait would have let settle by then. */
async function settleAll(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

function agentWith(...texts: string[]): Agent {
  return new Agent({ provider: new FauxProvider({ responses: texts.map((t) => fauxMessage(t)) }), model: 'faux' });
}

/** An awaited listener each of whose calls waits for its own gate, opened by the test. */
function gated() {
  const calls: AgentEvent[] = [];
  const gates: ReturnType<typeof deferred<void>>[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const listener: AgentListener = async (event) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    calls.push(event);
    const gate = deferred();
    gates.push(gate);
    await gate.promise;
    inFlight--;
  };
  return { listener, calls, gates, maxInFlight: () => maxInFlight };
}

describe('subscribe(fn, { await: true })', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gets the events in order, one call at a time, while a sync listener and events$ get them all at once; prompt() waits for the drain', async () => {
    const agent = agentWith('hello');
    const sync: AgentEvent[] = [];
    const hot: AgentEvent[] = [];
    agent.subscribe((event) => void sync.push(event));
    const subscription = agent.events$.subscribe((event) => hot.push(event));
    const slow = gated();
    agent.subscribe(slow.listener, { await: true });

    let settled = false;
    const run = agent.prompt('hi').then((added) => ((settled = true), added));
    await until(() => sync.at(-1)?.type === 'agent_end', 'the sync listener saw agent_end');
    // The run went to its end without waiting: the awaited listener is still on its first event.
    expect(hot).toEqual(sync);
    expect(slow.calls.map((e) => e.type)).toEqual(['agent_start']);
    await settleAll();
    expect(settled).toBe(false);

    // Open each gate in turn: the next call starts only after the previous one's Promise settled.
    for (let i = 0; i < sync.length - 1; i++) {
      expect(slow.calls).toHaveLength(i + 1);
      slow.gates[i]!.resolve();
      await until(() => slow.calls.length === i + 2, `call ${i + 2}`);
      expect(settled).toBe(false);
    }
    expect(slow.calls).toEqual(sync); // every event, in the run's order, the same objects
    expect(slow.calls.at(-1)?.type).toBe('agent_end');
    await settleAll();
    expect(settled).toBe(false); // agent_end is being handled: the run's Promise still waits
    slow.gates.at(-1)!.resolve();
    const added = await run;
    expect(added.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(slow.maxInFlight()).toBe(1);
    subscription.unsubscribe();
  });

  it('in virtual time: a listener taking 1 s an event holds prompt() for exactly 1 s an event, and nothing else', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const agent = agentWith('hello');
    const sync: string[] = [];
    const handled: string[] = [];
    agent.subscribe((event) => void sync.push(event.type));
    agent.subscribe(
      async (event) => {
        await new Promise<void>((resolve) => setTimeout(resolve, 1_000));
        handled.push(event.type);
      },
      { await: true },
    );
    let settled = false;
    void agent.prompt('hi').then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    // At virtual time 0 the run is over for everyone else.
    expect(sync.at(-1)).toBe('agent_end');
    expect(handled).toEqual([]);
    const n = sync.length;
    await vi.advanceTimersByTimeAsync(n * 1_000 - 1);
    expect(handled).toEqual(sync.slice(0, n - 1));
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(handled).toEqual(sync);
    expect(settled).toBe(true);
  });

  it('a listener that rejects (or throws) is reported like a throwing listener, and its queue goes on', async () => {
    const reported: [string, string][] = [];
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('hello')] }),
      model: 'faux',
      onListenerError: (error, event) => void reported.push([(error as Error).message, event.type]),
    });
    const seen: string[] = [];
    agent.subscribe(
      async (event) => {
        seen.push(event.type);
        if (event.type === 'turn_start') throw new Error('sync throw');
        await Promise.resolve();
        if (event.type === 'message_end') throw new Error('rejected');
      },
      { await: true },
    );
    const sync: string[] = [];
    agent.subscribe((event) => void sync.push(event.type));
    await agent.prompt('hi');
    expect(seen).toEqual(sync); // drained, every event, before prompt() resolved
    expect(reported).toEqual([
      ['sync throw', 'turn_start'],
      ['rejected', 'message_end'],
      ['rejected', 'message_end'],
    ]);
  });

  it('unsubscribing drops its queue and releases the run Promise waiting for it', async () => {
    const agent = agentWith('hello');
    const slow = gated();
    const unsubscribe = agent.subscribe(slow.listener, { await: true });
    let settled = false;
    const run = agent.prompt('hi').then(() => (settled = true));
    await until(() => slow.calls.length === 1, 'the first call');
    await settleAll();
    expect(settled).toBe(false);
    unsubscribe();
    await run;
    slow.gates[0]!.resolve(); // the call in flight finishes on its own; nothing queued is delivered after it
    await settleAll();
    expect(slow.calls.map((e) => e.type)).toEqual(['agent_start']);
  });

  it('runs one after another: the second run’s events follow the first’s, and each prompt() waits for its own', async () => {
    const agent = agentWith('one', 'two');
    const handled: string[] = [];
    agent.subscribe(
      async (event) => {
        await Promise.resolve();
        if (event.type === 'agent_end') handled.push(`end:${event.messages.length}`);
        else if (event.type === 'agent_start') handled.push('start');
      },
      { await: true },
    );
    await agent.prompt('a');
    expect(handled).toEqual(['start', 'end:2']);
    await agent.prompt('b');
    expect(handled).toEqual(['start', 'end:2', 'start', 'end:2']);
  });

  it('without await, a returned Promise is still not awaited (today’s behaviour); a bad option is refused', async () => {
    const agent = agentWith('hello');
    const gate = deferred();
    let calls = 0;
    agent.subscribe(async () => {
      calls++;
      await gate.promise;
    });
    await agent.prompt('hi'); // resolves with the listener's Promises all still pending
    expect(calls).toBeGreaterThan(3);
    gate.resolve();
    expect(() => agent.subscribe(() => undefined, { await: 'yes' as unknown as boolean })).toThrow(InvalidInputError);
    expect(() => agent.subscribe(42 as unknown as AgentListener, { await: true })).toThrow(InvalidInputError);
  });
});
