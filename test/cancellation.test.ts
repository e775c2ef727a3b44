import { getEventListeners } from 'node:events';
import { NEVER, Observable, finalize } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  MemoryCheckpointer,
  MessageAssembler,
  RunAbortedError,
  runAgentLoop,
  userMessage,
  type AgentEvent,
  type AssistantMessage,
  type Provider,
  type StreamEvent,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { deferred, expectConsistentTranscript, resultText, tick, trace } from './helpers.js';

/** A model that streams one delta every `everyMs` forever, until its request is torn down or its signal aborts. */
function tickerProvider(everyMs = 1) {
  const stats = { requests: 0, produced: 0, active: 0, tornDown: 0 };
  const provider: Provider = {
    id: 'ticker',
    stream: (model) =>
      new Observable<StreamEvent>((subscriber) => {
        stats.requests++;
        stats.active++;
        const asm = new MessageAssembler({ provider: 'ticker', model: model.id });
        subscriber.next(asm.start());
        subscriber.next(asm.startText());
        const timer = setInterval(() => {
          stats.produced++;
          subscriber.next(asm.textDelta(0, 'x'));
        }, everyMs);
        return () => {
          clearInterval(timer);
          stats.active--;
          stats.tornDown++;
        };
      }),
  };
  return { provider, stats };
}

function record(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.subscribe((e) => void events.push(e));
  return events;
}

/** Counts production after `mark()`. */
function afterMark(stats: { produced: number }) {
  let at = Infinity;
  return { mark: () => (at = stats.produced), after: () => stats.produced - at };
}

describe('cancellation', () => {
  it('abort() during streaming: the request is torn down, the partial answer ends as aborted, agent_end is emitted', async () => {
    const { provider, stats } = tickerProvider();
    const agent = new Agent({ provider, model: 'm' });
    const events = record(agent);
    const run = agent.prompt('go');
    await tick(15);
    const counter = afterMark(stats);
    counter.mark();
    agent.abort();
    const added = await run; // resolves, does not throw
    expect(stats.active).toBe(0);
    await tick(15);
    expect(counter.after()).toBe(0);
    const last = added.at(-1) as AssistantMessage;
    expect(last).toMatchObject({
      role: 'assistant',
      stopReason: 'aborted',
      errorKind: 'aborted',
      errorMessage: 'Run aborted',
    });
    expect((last.content[0] as { text: string }).text).toMatch(/^x+$/);
    expect(trace(events).slice(-3)).toEqual(['message_end:assistant(aborted)', 'turn_end', 'agent_end']);
    expect(agent.state.errorMessage).toBe('Run aborted');
    expect(stats.requests).toBe(1);
  });

  it('abort(reason) puts the reason in the closing message', async () => {
    const { provider } = tickerProvider();
    const agent = new Agent({ provider, model: 'm' });
    const run = agent.prompt('go');
    await tick(5);
    agent.abort('user pressed stop');
    expect((await run).at(-1)).toMatchObject({ errorMessage: 'Run aborted: user pressed stop' });
  });

  it('abort() during a tool batch: running tools see their signal fire, finished siblings keep their results, no further model call', async () => {
    const fastDone = deferred();
    let slowSignal: AbortSignal | undefined;
    const fast = defineTool({
      name: 'fast',
      description: 'd',
      parameters: z.object({}),
      execute: async () => (fastDone.resolve(), 'fast result'),
    });
    // Ignores its signal on purpose: cancellation must not wait for it.
    const stuck = defineTool({
      name: 'stuck',
      description: 'd',
      parameters: z.object({}),
      execute: (_id, _a, { signal }) => ((slowSignal = signal), new Promise<string>(() => undefined)),
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('fast', {}, { id: 'f' }), fauxToolCall('stuck', {}, { id: 's' })]),
        fauxMessage('never'),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [fast, stuck] });
    const events = record(agent);
    const run = agent.prompt('go');
    await fastDone.promise;
    await tick(2);
    expect(slowSignal?.aborted).toBe(false);
    agent.abort();
    const added = await run;
    expect(slowSignal?.aborted).toBe(true);
    expect(slowSignal?.reason).toBeInstanceOf(RunAbortedError);
    expect(faux.callCount).toBe(1);
    const results = added.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((r) => [r.toolCallId, r.isError, resultText(r)])).toEqual([
      ['f', false, 'fast result'],
      ['s', true, 'Tool call aborted: the run was cancelled'],
    ]);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted', content: [] });
    expect(trace(events).slice(-12)).toEqual([
      'tool_execution_end:f',
      'tool_execution_end:s',
      'message_start:toolResult(f)',
      'message_end:toolResult(f)',
      'message_start:toolResult(s)',
      'message_end:toolResult(s)',
      'turn_end',
      'turn_start', // the closing message stands in for the model call that was not made
      'message_start:assistant(aborted)',
      'message_end:assistant(aborted)',
      'turn_end',
      'agent_end',
    ]);
    expect(agent.state.pendingToolCalls.size).toBe(0);
    expectConsistentTranscript(agent.state.messages);
  });

  it('abort() while a hook waits: the hook is unsubscribed and the closing message is the turn message', async () => {
    let hookTornDown = false;
    const faux = new FauxProvider({ responses: [fauxMessage('never')] });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      transformContext: () => NEVER.pipe(finalize(() => (hookTornDown = true))),
    });
    const events = record(agent);
    const run = agent.prompt('go');
    await tick(2);
    agent.abort();
    await run;
    expect(hookTornDown).toBe(true);
    expect(faux.callCount).toBe(0);
    expect(trace(events)).toEqual([
      'agent_start',
      'turn_start',
      'message_start:user',
      'message_end:user',
      'message_start:assistant(aborted)',
      'message_end:assistant(aborted)',
      'turn_end',
      'agent_end',
    ]);
  });

  it('unsubscribing from prompt$ cancels the run: the subscriber sees nothing more, events$ still gets the end', async () => {
    const { provider, stats } = tickerProvider();
    const agent = new Agent({ provider, model: 'm' });
    const onEvents$ = record(agent);
    const seen: AgentEvent[] = [];
    const subscription = agent.prompt$('go').subscribe((e) => seen.push(e));
    await tick(10);
    const count = seen.length;
    subscription.unsubscribe();
    expect(stats.active).toBe(0);
    await agent.waitForIdle();
    await tick(10);
    expect(seen.length).toBe(count);
    expect(onEvents$.at(-1)?.type).toBe('agent_end');
    const last = agent.state.messages.at(-1);
    expect(last).toMatchObject({ stopReason: 'aborted', errorMessage: 'Run aborted: its subscriber unsubscribed' });
  });

  it('a deadline cancels the run like abort(), with reason deadline (agent option and per call)', async () => {
    const { provider, stats } = tickerProvider();
    const agent = new Agent({ provider, model: 'm', deadlineMs: 20 });
    const first = await agent.prompt('go');
    expect(first.at(-1)).toMatchObject({
      stopReason: 'aborted',
      errorMessage: 'Run aborted: deadline of 20 ms exceeded',
    });
    expect(stats.active).toBe(0);
    const second = await agent.prompt('again', { deadlineMs: 5 });
    expect(second.at(-1)).toMatchObject({ errorMessage: 'Run aborted: deadline of 5 ms exceeded' });
  });

  it("a run that ends in time releases its deadline timer and the caller's signal", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    const controller = new AbortController();
    for (const checkpointer of [undefined, new MemoryCheckpointer()]) {
      const faux = new FauxProvider({ responses: [fauxMessage('done')] });
      const agent = new Agent({
        provider: faux,
        model: 'm',
        deadlineMs: 60_000,
        ...(checkpointer ? { checkpointer, threadId: 't' } : {}),
      });
      const added = await agent.prompt('go', { signal: controller.signal });
      expect(added.at(-1)).toMatchObject({ stopReason: 'stop' });
      expect(timers()).toBe(before);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    }
  });

  it("a caller's signal cancels the run", async () => {
    const { provider } = tickerProvider();
    const agent = new Agent({ provider, model: 'm' });
    const controller = new AbortController();
    const run = agent.prompt('go', { signal: controller.signal });
    await tick(5);
    controller.abort();
    expect((await run).at(-1)).toMatchObject({
      stopReason: 'aborted',
      errorMessage: "Run aborted: the caller's signal fired",
    });
  });

  it('an already aborted signal ends the run before any model call', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('x')] });
    const controller = new AbortController();
    controller.abort();
    const added = await new Agent({ provider: faux, model: 'faux' }).prompt('go', { signal: controller.signal });
    expect(faux.callCount).toBe(0);
    expect(added.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(added[1]).toMatchObject({ stopReason: 'aborted' });
  });

  it('the provider gets the run signal: a provider that honours it ends with its own aborted event', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('abcdefghijklmnop')], chunkSize: 1, delayMs: 3 });
    const agent = new Agent({ provider: faux, model: 'faux' });
    const run = agent.prompt('go');
    await tick(10);
    agent.abort();
    const last = (await run).at(-1) as AssistantMessage;
    expect(last.stopReason).toBe('aborted');
    expect((last.content[0] as { text: string }).text.length).toBeLessThan(16);
  });

  it('unsubscribing from runAgentLoop tears everything down and emits nothing more', async () => {
    let toolSignal: AbortSignal | undefined;
    const started = deferred();
    const wait = defineTool({
      name: 'wait',
      description: 'd',
      parameters: z.object({}),
      execute: (_id, _a, { signal }) => (
        (toolSignal = signal),
        started.resolve(),
        new Promise<string>(() => undefined)
      ),
    });
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('wait', {}, { id: 'w' })]), fauxMessage('never')],
    });
    const seen: AgentEvent[] = [];
    const subscription = runAgentLoop({
      provider: faux,
      model: { id: 'faux', provider: 'faux' },
      tools: [wait],
      prompts: [userMessage('go')],
    }).subscribe((e) => seen.push(e));
    await started.promise;
    const count = seen.length;
    subscription.unsubscribe();
    expect(toolSignal?.aborted).toBe(true);
    await tick(5);
    expect(seen.length).toBe(count);
    expect(faux.callCount).toBe(1);
  });

  it('unsubscribing from runAgentLoop mid-stream unsubscribes the provider stream', async () => {
    const { provider, stats } = tickerProvider();
    const subscription = runAgentLoop({
      provider,
      model: { id: 'm', provider: 'ticker' },
      prompts: [userMessage('go')],
    }).subscribe();
    await tick(5);
    expect(stats.active).toBe(1);
    subscription.unsubscribe();
    expect(stats.active).toBe(0);
    expect(stats.tornDown).toBe(1);
  });

  it('a tool that overruns its timeout gets an error result and its signal fires; the run goes on', async () => {
    let signal: AbortSignal | undefined;
    const slow = defineTool({
      name: 'slow',
      description: 'd',
      parameters: z.object({}),
      timeoutMs: 10,
      execute: (_id, _a, ctx) => ((signal = ctx.signal), new Promise<string>(() => undefined)),
    });
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('slow', {}, { id: 's' })]), fauxMessage('ok without it')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [slow] });
    const added = await agent.prompt('go');
    const result = added.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect([result.isError, resultText(result)]).toEqual([true, 'Tool slow timed out after 10 ms']);
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as DOMException).name).toBe('TimeoutError');
    expect(added.at(-1)).toMatchObject({ stopReason: 'stop' });
  });

  it('the agent-wide toolTimeoutMs applies to tools without their own', async () => {
    const slow = defineTool({
      name: 'slow',
      description: 'd',
      parameters: z.object({}),
      execute: () => new Promise<string>(() => undefined),
    });
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('slow', {}, { id: 's' })]), fauxMessage('ok')],
    });
    const added = await new Agent({ provider: faux, model: 'faux', tools: [slow], toolTimeoutMs: 5 }).prompt('go');
    expect(resultText(added.find((m): m is ToolResultMessage => m.role === 'toolResult')!)).toBe(
      'Tool slow timed out after 5 ms',
    );
  });

  it('an Observable tool is unsubscribed on abort', async () => {
    let tornDown = false;
    const stream = defineTool({
      name: 'stream',
      description: 'd',
      parameters: z.object({}),
      execute: () => new Observable<string>(() => () => (tornDown = true)),
    });
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('stream', {}, { id: 's' })])] });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [stream] });
    const run = agent.prompt('go');
    await tick(5);
    agent.abort();
    await run;
    expect(tornDown).toBe(true);
  });
});
