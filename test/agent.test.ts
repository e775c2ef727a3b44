import { firstValueFrom, lastValueFrom, skip, take, toArray } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  AgentBusyError,
  ConfigurationError,
  defineTool,
  InvalidInputError,
  InvalidStateError,
  textOf,
  type AgentEvent,
  type AgentState,
  type Message,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { deferred, echoTool, expectConsistentTranscript, tick, trace } from './helpers.js';

const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);

describe('Agent', () => {
  describe('runs', () => {
    it('prompt() resolves with the messages the run added; the history grows across runs', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] });
      const agent = new Agent({ provider: faux, model: 'faux', systemPrompt: 'Be brief.' });
      expect(await agent.prompt('a').then(texts)).toEqual(['user:a', 'assistant:one']);
      expect(await agent.prompt('b').then(texts)).toEqual(['user:b', 'assistant:two']);
      expect(texts(agent.state.messages)).toEqual(['user:a', 'assistant:one', 'user:b', 'assistant:two']);
    });

    it('the model receives the whole history and the system prompt', async () => {
      const seen: string[][] = [];
      const faux = new FauxProvider({
        responses: [
          (messages, _m, ctx) => (seen.push([ctx.systemPrompt ?? '', ...texts(messages)]), fauxMessage('one')),
          (messages, _m, ctx) => (seen.push([ctx.systemPrompt ?? '', ...texts(messages)]), fauxMessage('two')),
        ],
      });
      const agent = new Agent({ provider: faux, model: 'faux', systemPrompt: 'sys' });
      await agent.prompt('a');
      await agent.prompt('b');
      expect(seen).toEqual([
        ['sys', 'user:a'],
        ['sys', 'user:a', 'assistant:one', 'user:b'],
      ]);
    });

    it('prompt$ is cold: nothing happens before subscription', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('hi')] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      const run$ = agent.prompt$('hello');
      await tick();
      expect(faux.callCount).toBe(0);
      expect(agent.state.messages).toEqual([]);
      const events = await lastValueFrom(run$.pipe(toArray()));
      expect(trace(events).at(-1)).toBe('agent_end');
      expect(faux.callCount).toBe(1);
    });

    it('accepts a message or several messages as the prompt', async () => {
      const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('ok')] }), model: 'faux' });
      const added = await agent.prompt([
        { role: 'user', content: 'first', timestamp: 1 },
        { role: 'user', content: [{ type: 'text', text: 'second' }], timestamp: 2 },
      ]);
      expect(texts(added)).toEqual(['user:first', 'user:second', 'assistant:ok']);
    });

    it('rejects a second prompt while a run is active, with a typed error, and the first run goes on', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('slow answer')], delayMs: 2 }),
        model: 'faux',
      });
      const first = agent.prompt('one');
      await expect(agent.prompt('two')).rejects.toBeInstanceOf(AgentBusyError);
      await expect(agent.prompt('two')).rejects.toThrow(/use steer\(\) or followUp\(\)/);
      const error = await firstValueFrom(agent.prompt$('three').pipe(toArray())).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AgentBusyError);
      expect(texts(await first)).toEqual(['user:one', 'assistant:slow answer']);
    });

    it('rejects bad prompts with InvalidInputError and calls no model', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('x')] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      await expect(agent.prompt('')).rejects.toThrow(InvalidInputError);
      await expect(agent.prompt(42 as never)).rejects.toThrow(/expected a string or a message object/);
      await expect(agent.prompt({ role: 'robot', content: 'x', timestamp: 1 } as never)).rejects.toThrow(
        /unknown role "robot"/,
      );
      await expect(agent.prompt({ role: 'user', content: [{ type: 'video' }], timestamp: 1 } as never)).rejects.toThrow(
        /type "video" is not allowed/,
      );
      expect(faux.callCount).toBe(0);
      expect(agent.state.isStreaming).toBe(false);
    });

    it('waitForIdle resolves when the run ends (at once when idle)', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('x')], delayMs: 1 }),
        model: 'faux',
      });
      await agent.waitForIdle();
      void agent.prompt('go');
      expect(agent.state.isStreaming).toBe(true);
      await agent.waitForIdle();
      expect(agent.state.isStreaming).toBe(false);
    });

    it('a new run may start from an agent_end listener', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      const second = deferred<Message[]>();
      let started = false;
      agent.subscribe((event) => {
        if (event.type === 'agent_end' && !started) {
          started = true;
          agent.prompt('again').then(second.resolve, second.reject);
        }
      });
      await agent.prompt('go');
      expect(texts(await second.promise)).toEqual(['user:again', 'assistant:two']);
    });
  });

  describe('resume', () => {
    it('continues from a history ending with a user or tool result message, without a new prompt', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('answer')] });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        messages: [{ role: 'user', content: 'question', timestamp: 1 }],
      });
      const added = await agent.resume();
      expect(texts(added)).toEqual(['assistant:answer']);
    });

    it('rejects on an empty history and calls no model', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('x')] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      await expect(agent.resume()).rejects.toBeInstanceOf(InvalidStateError);
      await expect(lastValueFrom(agent.resume$())).rejects.toThrow(/history is empty/);
      expect(faux.callCount).toBe(0);
    });

    it('rejects after an assistant message with nothing queued', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      await agent.prompt('hi');
      await expect(agent.resume()).rejects.toThrow(/no steering or follow-up message is queued/);
      expect(faux.callCount).toBe(1);
    });

    it('after an assistant message, drains a queued steering message first, then a follow-up', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two'), fauxMessage('three')] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      await agent.prompt('hi');
      agent.followUp('later');
      agent.steer('now');
      expect(texts(await agent.resume())).toEqual(['user:now', 'assistant:two', 'user:later', 'assistant:three']);
    });

    it('after a failed answer (record-only), asks for it again from the history before it, and keeps it stored', async () => {
      const seen: (readonly Message[])[] = [];
      const faux = new FauxProvider({
        responses: [
          fauxMessage('one'),
          // The second call fails (an empty queue is a provider failure); the resumed run gets this answer.
        ],
      });
      const agent = new Agent({ provider: faux, model: 'faux' });
      await agent.prompt('hi');
      await agent.prompt('again').catch(() => undefined); // the provider failed: the answer is stored record-only
      const failed = agent.state.messages.at(-1);
      expect(failed?.role === 'assistant' && failed.stopReason).toBe('error');
      expect(failed?.role === 'assistant' && failed.errorMessage).toMatch(/No more faux responses/);
      faux.setResponses([
        (messages) => {
          seen.push([...messages]);
          return fauxMessage('two');
        },
      ]);
      expect(texts(await agent.resume())).toEqual(['assistant:two']);
      // The model was asked again on the history as stored: the failed answer is in it, record-only, which every
      // provider drops from what it sends (transform-messages), so the request ends with the prompt.
      expect(texts(seen[0]!)).toEqual(['user:hi', 'assistant:one', 'user:again', 'assistant:']);
      expect(seen[0]![3]).toBe(failed);
      expect(faux.callCount).toBe(3);
      expect(agent.state.messages.map((message) => message.role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
        'assistant',
      ]);
      expect(agent.state.messages[3]).toBe(failed);
    });

    it('rejects on a history of failed answers only', async () => {
      const faux = new FauxProvider({ responses: [] });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        messages: [
          {
            role: 'assistant',
            content: [],
            provider: 'faux',
            model: 'faux',
            usage: fauxMessage('x').usage,
            stopReason: 'aborted',
            timestamp: 1,
          },
        ],
      });
      await expect(agent.resume()).rejects.toThrow(/only failed answers/);
      expect(faux.callCount).toBe(0);
    });

    it('is rejected while a run is active', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('x')], delayMs: 2 }),
        model: 'faux',
      });
      const run = agent.prompt('go');
      await expect(agent.resume()).rejects.toBeInstanceOf(AgentBusyError);
      await run;
    });
  });

  describe('steering and follow-ups', () => {
    it('a steer during a tool batch goes in after the batch (never cancelling it), before the next model call', async () => {
      const gate = deferred();
      const signals: AbortSignal[] = [];
      const wait = defineTool({
        name: 'wait',
        description: 'd',
        parameters: z.object({}),
        execute: async (_id, _args, { signal }) => {
          signals.push(signal);
          await gate.promise;
          return 'waited';
        },
      });
      const seen: string[][] = [];
      const faux = new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('wait', {}, { id: 'w1' }), fauxToolCall('wait', {}, { id: 'w2' })]),
          (messages) => (seen.push(texts(messages)), fauxMessage('ok, stopping')),
        ],
      });
      const agent = new Agent({ provider: faux, model: 'faux', tools: [wait] });
      const events: AgentEvent[] = [];
      agent.subscribe((e) => void events.push(e));
      const run = agent.prompt('start');
      await tick(5);
      agent.steer('actually, stop');
      gate.resolve();
      await run;
      expect(signals.every((s) => !s.aborted)).toBe(true);
      expect(trace(events)).toEqual([
        'agent_start',
        'turn_start',
        'message_start:user',
        'message_end:user',
        'model_attempt',
        'message_start:assistant(stop)',
        'message_end:assistant(toolUse)',
        'tool_execution_start:w1',
        'tool_execution_start:w2',
        'tool_execution_end:w1',
        'tool_execution_end:w2',
        'message_start:toolResult(w1)',
        'message_end:toolResult(w1)',
        'message_start:toolResult(w2)',
        'message_end:toolResult(w2)',
        'turn_end',
        'turn_start',
        'message_start:user',
        'message_end:user',
        'model_attempt',
        'message_start:assistant(stop)',
        'message_end:assistant(stop)',
        'turn_end',
        'agent_end',
      ]);
      expect(seen[0]!.slice(-3)).toEqual(['toolResult:waited', 'toolResult:waited', 'user:actually, stop']);
      expectConsistentTranscript(agent.state.messages);
    });

    it('a steer sent while a text answer streams gets its own model call in the same run', async () => {
      const faux = new FauxProvider({
        responses: [fauxMessage('a long streamed answer'), fauxMessage('steered answer')],
        chunkSize: 2,
        delayMs: 2,
      });
      const agent = new Agent({ provider: faux, model: 'faux' });
      const run = agent.prompt('go');
      await tick(6);
      agent.steer('one more thing');
      expect(texts(await run)).toEqual([
        'user:go',
        'assistant:a long streamed answer',
        'user:one more thing',
        'assistant:steered answer',
      ]);
    });

    it('a steer sent while idle waits for the next run and goes in before its first model call', async () => {
      const seen: string[][] = [];
      const faux = new FauxProvider({ responses: [(messages) => (seen.push(texts(messages)), fauxMessage('ok'))] });
      const agent = new Agent({ provider: faux, model: 'faux' });
      agent.steer('context first');
      await agent.prompt('question');
      expect(seen).toEqual([['user:question', 'user:context first']]);
    });

    it('one-at-a-time injects one steering message per model call; all injects every one at once', async () => {
      const run = async (steeringMode: 'one-at-a-time' | 'all') => {
        const calls: string[][] = [];
        const respond = (messages: readonly Message[]) => (calls.push(texts(messages).slice(-2)), fauxMessage('ok'));
        const agent = new Agent({
          provider: new FauxProvider({ responses: [respond, respond, respond] }),
          model: 'faux',
          steeringMode,
        });
        agent.steer('s1');
        agent.steer('s2');
        await agent.prompt('p');
        return calls;
      };
      expect(await run('one-at-a-time')).toEqual([
        ['user:p', 'user:s1'],
        ['assistant:ok', 'user:s2'],
      ]);
      expect(await run('all')).toEqual([['user:s1', 'user:s2']]);
    });

    it('cancelSteer removes a queued message and says whether it did', async () => {
      const seen: string[][] = [];
      const agent = new Agent({
        provider: new FauxProvider({ responses: [(m) => (seen.push(texts(m)), fauxMessage('ok'))] }),
        model: 'faux',
      });
      const keep = agent.steer('keep');
      const drop = agent.steer('drop');
      expect(agent.cancelSteer(drop)).toBe(true);
      expect(agent.cancelSteer(drop)).toBe(false);
      expect(keep).not.toBe(drop);
      await agent.prompt('p');
      expect(seen).toEqual([['user:p', 'user:keep']]);
    });

    it('follow-ups run only when the run would otherwise end, one per model call or all at once', async () => {
      const run = async (followUpMode: 'one-at-a-time' | 'all') => {
        const faux = new FauxProvider({
          responses: [
            fauxMessage([fauxToolCall('echo', { i: 1 })]),
            fauxMessage('a'),
            fauxMessage('b'),
            fauxMessage('c'),
          ],
        });
        const agent = new Agent({ provider: faux, model: 'faux', tools: [echoTool], followUpMode });
        agent.followUp('f1');
        agent.followUp('f2');
        return texts(await agent.prompt('p'));
      };
      expect(await run('one-at-a-time')).toEqual([
        'user:p',
        'assistant:',
        'toolResult:ok 1',
        'assistant:a',
        'user:f1',
        'assistant:b',
        'user:f2',
        'assistant:c',
      ]);
      expect(await run('all')).toEqual([
        'user:p',
        'assistant:',
        'toolResult:ok 1',
        'assistant:a',
        'user:f1',
        'user:f2',
        'assistant:b',
      ]);
    });

    it('steer and followUp reject bad messages with InvalidInputError', () => {
      const agent = new Agent({ provider: new FauxProvider(), model: 'faux' });
      expect(() => agent.steer(undefined as never)).toThrow(InvalidInputError);
      expect(() => agent.followUp({ role: 'user' } as never)).toThrow(/numeric `timestamp`/);
    });
  });

  describe('state', () => {
    it('state is a frozen snapshot: arrays are copies that never change', async () => {
      const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
      const before = agent.state;
      await agent.prompt('hi');
      expect(before.messages).toEqual([]);
      expect(agent.state.messages).toHaveLength(2);
      expect(() => (agent.state.messages as Message[]).push(agent.state.messages[0]!)).toThrow(TypeError);
      expect(() => (agent.state.pendingToolCalls as Set<string>).add('x')).toThrow(TypeError);
      expect(agent.state.model).toEqual({ id: 'faux', provider: 'faux' });
    });

    it('tracks streaming, pending tool calls and the streaming message during a run', async () => {
      const gate = deferred();
      const wait = defineTool({
        name: 'wait',
        description: 'd',
        parameters: z.object({}),
        execute: async () => (await gate.promise, 'ok'),
      });
      const agent = new Agent({
        provider: new FauxProvider({
          responses: [fauxMessage([fauxToolCall('wait', {}, { id: 'w' })]), fauxMessage('done')],
        }),
        model: 'faux',
        tools: [wait],
      });
      const streamingSeen: boolean[] = [];
      agent.subscribe((e) => {
        if (e.type === 'message_update') streamingSeen.push(agent.state.streamingMessage === e.message);
      });
      const run = agent.prompt('go');
      await tick(5);
      expect(agent.state.isStreaming).toBe(true);
      expect([...agent.state.pendingToolCalls]).toEqual(['w']);
      gate.resolve();
      await run;
      expect(agent.state.isStreaming).toBe(false);
      expect(agent.state.pendingToolCalls.size).toBe(0);
      expect(agent.state.streamingMessage).toBeUndefined();
      expect(streamingSeen.length).toBeGreaterThan(0);
      expect(streamingSeen.every(Boolean)).toBe(true);
    });

    it('state$ emits the current state at once, then on every change', async () => {
      const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('x')] }), model: 'faux' });
      const states: AgentState[] = [];
      const subscription = agent.state$.subscribe((s) => states.push(s));
      expect(states).toHaveLength(1);
      await agent.prompt('hi');
      subscription.unsubscribe();
      expect(states.at(-1)!.messages).toHaveLength(2);
      expect(states.some((s) => s.isStreaming)).toBe(true);
      expect(states.at(-1)!.isStreaming).toBe(false);
      const late = await firstValueFrom(agent.state$);
      expect(late.messages).toHaveLength(2);
    });

    it('unsubscribing from state$ lets go of it: later changes build no state for it', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('one two'), fauxMessage('three')], chunkSize: 2 }),
        model: 'faux',
      });
      const read = vi.spyOn(agent, 'state', 'get');
      let seen = 0;
      const subscription = agent.state$.subscribe(() => seen++);
      await agent.prompt('hi');
      expect(read.mock.calls.length).toBe(seen); // one state per delivery while subscribed
      expect(seen).toBeGreaterThan(4);
      subscription.unsubscribe();
      read.mockClear();
      await agent.prompt('again');
      expect(read).not.toHaveBeenCalled();
      expect(agent.state.messages).toHaveLength(4);
    });

    it('state$ and state follow every delta: streamingMessage is the latest snapshot streamed', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('hello world')], chunkSize: 3 }),
        model: 'faux',
      });
      const updates: unknown[] = [];
      const readInListener: unknown[] = [];
      agent.subscribe((event) => {
        if (
          event.type !== 'message_update' &&
          !(event.type === 'message_start' && event.message.role === 'assistant')
        ) {
          return;
        }
        updates.push(event.message);
        readInListener.push(agent.state.streamingMessage);
      });
      const streamed: unknown[] = [];
      const subscription = agent.state$.subscribe((s) => {
        if (s.streamingMessage !== undefined && streamed.at(-1) !== s.streamingMessage)
          streamed.push(s.streamingMessage);
      });
      await agent.prompt('hi');
      subscription.unsubscribe();
      expect(updates.length).toBeGreaterThanOrEqual(6); // message_start, text_start, 'hello world' in 4 chunks, …
      expect(readInListener).toEqual(updates);
      expect(readInListener.every((message, i) => message === updates[i])).toBe(true);
      // state$ tells every change; a message_update that carries the same snapshot again (text_end) changes nothing.
      expect(streamed).toEqual(updates.filter((message, i) => message !== updates[i - 1]));
    });

    it('reset clears the transcript, the error, the queues; keeps the configuration; refuses during a run', async () => {
      const faux = new FauxProvider({
        responses: [
          fauxMessage('x', { stopReason: 'error', errorMessage: 'bad' }),
          fauxMessage('y', {}),
          fauxMessage('z'),
        ],
        delayMs: 1,
      });
      const agent = new Agent({ provider: faux, model: 'faux', systemPrompt: 'sys', tools: [echoTool] });
      await agent.prompt('hi');
      expect(agent.state.errorMessage).toBe('bad');
      agent.steer('queued');
      agent.followUp('queued too');
      agent.reset();
      expect(agent.state).toMatchObject({ messages: [], isStreaming: false, systemPrompt: 'sys' });
      expect(agent.state.errorMessage).toBeUndefined();
      expect(agent.state.tools).toEqual([echoTool]);
      const run = agent.prompt('again');
      expect(() => agent.reset()).toThrow(AgentBusyError);
      expect(texts(await run)).toEqual(['user:again', 'assistant:y']); // the cleared queues did not come back
    });
  });

  describe('listeners', () => {
    it('listeners run synchronously in subscription order; unsubscribe stops them', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('x'), fauxMessage('y')] }),
        model: 'faux',
      });
      const order: string[] = [];
      const off = agent.subscribe((e) => void (e.type === 'agent_start' && order.push('first')));
      agent.subscribe((e) => void (e.type === 'agent_start' && order.push('second')));
      await agent.prompt('a');
      off();
      await agent.prompt('b');
      expect(order).toEqual(['first', 'second', 'second']);
    });

    it('a listener that throws or rejects is reported and never ends the run', async () => {
      const onListenerError = vi.fn();
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('fine')] }),
        model: 'faux',
        onListenerError,
      });
      agent.subscribe((e) => {
        if (e.type === 'message_update') throw new Error('sync listener bug');
      });
      agent.subscribe(async (e) => {
        if (e.type === 'turn_end') throw new Error('async listener bug');
      });
      const added = await agent.prompt('go');
      await tick();
      expect(texts(added)).toEqual(['user:go', 'assistant:fine']);
      const errors = onListenerError.mock.calls.map(([error, event]) => [
        (error as Error).message,
        (event as AgentEvent).type,
      ]);
      expect(errors).toContainEqual(['sync listener bug', 'message_update']);
      expect(errors).toContainEqual(['async listener bug', 'turn_end']);
    });

    it('reports to console.error by default', async () => {
      const spy = vi.spyOn(console, 'error').mockImplementation(() => undefined);
      try {
        const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('fine')] }), model: 'faux' });
        agent.subscribe((e) => {
          if (e.type === 'agent_start') throw new Error('oops');
        });
        await agent.prompt('go');
        expect(spy).toHaveBeenCalledTimes(1);
        expect(String(spy.mock.calls[0]![0])).toMatch(/a listener threw on a agent_start event/);
      } finally {
        spy.mockRestore();
      }
    });

    it('events$ is hot: it carries every run, and a late subscriber sees only what follows', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('x'), fauxMessage('y')] }),
        model: 'faux',
      });
      await agent.prompt('first');
      const next = firstValueFrom(agent.events$.pipe(skip(1), take(1)));
      await agent.prompt('second');
      expect((await next).type).toBe('turn_start');
    });
  });

  describe('configuration', () => {
    it.each([
      [{ provider: undefined }, /`provider` must be a Provider/],
      [{ model: '' }, /`model` must not be empty/],
      [{ model: { id: 1 } }, /`model` must be a model id or a Model/],
      [{ tools: [echoTool, echoTool] }, /two tools are named "echo"/],
      [{ tools: [{ name: 'x' }] }, /built with defineTool/],
      [{ toolExecution: 'fast' }, /`toolExecution` must be/],
      [{ steeringMode: 'some' }, /`steeringMode` must be/],
      [{ deadlineMs: -1 }, /`deadlineMs` must be a positive number/],
      [{ toolConcurrency: 0 }, /`toolConcurrency` must be at least 1/],
      [{ beforeToolCall: 'yes' }, /the beforeToolCall hook must be a function/],
      [{ messages: [{ role: 'user' }] }, /AgentOptions.messages\[0\]: a message needs a numeric `timestamp`/],
    ])('rejects bad options at construction (%j)', (override, message) => {
      const options = { provider: new FauxProvider(), model: 'faux', ...override };
      expect(() => new Agent(options as never)).toThrow(ConfigurationError);
      expect(() => new Agent(options as never)).toThrow(message);
    });
  });
});
