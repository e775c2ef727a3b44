import { defer, EMPTY, from, of, throwError, timer } from 'rxjs';
import { map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  HookError,
  textOf,
  userMessage,
  type AgentEvent,
  type HookContext,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxText, fauxToolCall, type FauxResponse } from 'cubepi/testing';
import { deferred, echoTool, expectConsistentTranscript, resultText, tick, trace } from './helpers.js';

const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);

/** A faux provider that records what the model received. */
function recordingFaux(...responses: Parameters<FauxProvider['appendResponses']>[0]) {
  const received: { messages: string[]; systemPrompt: string | undefined }[] = [];
  const faux = new FauxProvider({
    responses: responses.map((response): FauxResponse => (messages, model, ctx) => {
      received.push({ messages: texts(messages), systemPrompt: ctx.systemPrompt });
      return typeof response === 'function' ? response(messages, model, ctx) : response;
    }),
  });
  return { faux, received };
}

describe('explicit hooks (Agent options)', () => {
  describe('transformContext', () => {
    it('changes what the model receives, never the stored transcript', async () => {
      const { faux, received } = recordingFaux(fauxMessage('one'), fauxMessage('two'));
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        transformContext: (messages) => messages.slice(-1),
      });
      await agent.prompt('a');
      await agent.prompt('b');
      expect(received.map((r) => r.messages)).toEqual([['user:a'], ['user:b']]);
      expect(texts(agent.state.messages)).toEqual(['user:a', 'assistant:one', 'user:b', 'assistant:two']);
    });

    it('gets a copy it may mutate without touching the transcript', async () => {
      const { faux } = recordingFaux(fauxMessage('one'));
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        transformContext: (messages) => {
          messages.length = 0;
          messages.push(userMessage('replaced'));
          return messages;
        },
      });
      await agent.prompt('original');
      expect(texts(agent.state.messages)).toEqual(['user:original', 'assistant:one']);
    });

    it.each([
      ['a Promise', (m: Message[]) => Promise.resolve([...m, userMessage('extra')])],
      ['an Observable (its last value counts)', (m: Message[]) => from([[], [...m, userMessage('extra')]])],
      ['a delayed Observable', (m: Message[]) => timer(3).pipe(map(() => [...m, userMessage('extra')]))],
    ])('may answer with %s', async (_label, hook) => {
      const { faux, received } = recordingFaux(fauxMessage('ok'));
      await new Agent({ provider: faux, model: 'faux', transformContext: hook }).prompt('q');
      expect(received[0]!.messages).toEqual(['user:q', 'user:extra']);
    });

    it('an Observable that completes empty leaves the messages as they were', async () => {
      const { faux, received } = recordingFaux(fauxMessage('ok'));
      await new Agent({ provider: faux, model: 'faux', transformContext: () => EMPTY }).prompt('q');
      expect(received[0]!.messages).toEqual(['user:q']);
    });

    it('receives the run context and signal', async () => {
      const contexts: HookContext[] = [];
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { i: 1 })]), fauxMessage('done')],
      });
      await new Agent({
        provider: faux,
        model: 'faux',
        systemPrompt: 'sys',
        tools: [echoTool],
        threadId: 't1',
        extra: { plan: 'pro' },
        transformContext: (messages, ctx) => (contexts.push(ctx), messages),
      }).prompt('go');
      expect(contexts.map((c) => c.turnIndex)).toEqual([0, 1]);
      expect(contexts[0]).toMatchObject({
        threadId: 't1',
        systemPrompt: 'sys',
        model: { id: 'faux' },
        tools: [echoTool],
        extra: { plan: 'pro' },
      });
      expect(contexts[0]!.signal).toBeInstanceOf(AbortSignal);
      expect(contexts[0]!.runId).toBe(contexts[1]!.runId);
    });
  });

  it('convertToLlm runs after transformContext, on its output', async () => {
    const order: string[] = [];
    const { faux, received } = recordingFaux(fauxMessage('ok'));
    await new Agent({
      provider: faux,
      model: 'faux',
      transformContext: (m) => (order.push('transform'), [...m, userMessage('t')]),
      convertToLlm: (m) => (
        order.push(`convert ${m.length}`),
        m.map((x) => (x.role === 'user' ? userMessage(`[${textOf(x)}]`) : x))
      ),
    }).prompt('q');
    expect(order).toEqual(['transform', 'convert 2']);
    expect(received[0]!.messages).toEqual(['user:[q]', 'user:[t]']);
  });

  it('transformSystemPrompt changes the system prompt the model receives', async () => {
    const { faux, received } = recordingFaux(fauxMessage('ok'));
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      systemPrompt: 'base',
      transformSystemPrompt: (p) => `${p} + today`,
    });
    await agent.prompt('q');
    expect(received[0]!.systemPrompt).toBe('base + today');
    expect(agent.state.systemPrompt).toBe('base');
  });

  describe('beforeToolCall', () => {
    it('gets validated arguments (defaults applied) and may block with a reason', async () => {
      const seen: unknown[] = [];
      let executed = 0;
      const search = defineTool({
        name: 'search',
        description: 'd',
        parameters: z.object({ q: z.string(), limit: z.number().default(5) }),
        execute: () => (executed++, 'found'),
      });
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('search', { q: 'x' }, { id: 'c' })]), fauxMessage('ok')],
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [search],
        beforeToolCall: ({ args, toolCall, assistantMessage, context }) => {
          seen.push({ args, id: toolCall.id, calls: assistantMessage.content.length, turn: context.turnIndex });
          return { block: true, reason: 'Search is disabled for this user' };
        },
      });
      await agent.prompt('go');
      expect(seen).toEqual([{ args: { q: 'x', limit: 5 }, id: 'c', calls: 1, turn: 0 }]);
      expect(executed).toBe(0);
      const result = agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
      expect([result.isError, resultText(result)]).toEqual([true, 'Search is disabled for this user']);
    });

    it('a block without a reason still tells the model the call was blocked', async () => {
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'c' })]), fauxMessage('ok')],
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echoTool],
        beforeToolCall: async () => ({ block: true }),
      });
      await agent.prompt('go');
      expect(resultText(agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!)).toBe(
        'Tool call echo was blocked',
      );
    });
  });

  describe('afterToolCall', () => {
    it('merges a partial result field by field over the executed result', async () => {
      const tool = defineTool({
        name: 'secret',
        description: 'd',
        parameters: z.object({}),
        execute: () => ({ content: [{ type: 'text', text: 'password=hunter2' }], details: { raw: true } }),
      });
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('secret', {}, { id: 'c' })]), fauxMessage('ok')],
      });
      const seen: unknown[] = [];
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [tool],
        afterToolCall: ({ result, isError }) => {
          seen.push({ text: resultText(result), isError });
          return { content: [{ type: 'text', text: 'password=[redacted]' }] };
        },
      });
      await agent.prompt('go');
      expect(seen).toEqual([{ text: 'password=hunter2', isError: false }]);
      const result = agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
      expect({ text: resultText(result), details: result.details, isError: result.isError }).toEqual({
        text: 'password=[redacted]',
        details: { raw: true },
        isError: false,
      });
    });

    it('runs for a blocked call too, and may turn a result into an error or ask to terminate', async () => {
      const faux = new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'a' }), fauxToolCall('echo', { i: 2 }, { id: 'b' })]),
          fauxMessage('never'),
        ],
      });
      const afterSeen: string[] = [];
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echoTool],
        beforeToolCall: ({ toolCall }) => (toolCall.id === 'b' ? { block: true, reason: 'no' } : undefined),
        afterToolCall: ({ toolCall, isError }) => {
          afterSeen.push(`${toolCall.id}:${isError}`);
          return { terminate: true, isError: toolCall.id === 'a' ? true : undefined };
        },
      });
      await agent.prompt('go');
      expect(afterSeen.sort()).toEqual(['a:false', 'b:true']);
      expect(faux.callCount).toBe(1); // both results asked to terminate
      const results = agent.state.messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
      expect(results.map((r) => [r.toolCallId, r.isError])).toEqual([
        ['a', true],
        ['b', true],
      ]);
    });
  });

  it('shouldStopAfterTurn ends the run after the turn; queued follow-ups stay queued', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', { i: 1 })]), fauxMessage('later'), fauxMessage('follow')],
    });
    const turns: number[] = [];
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [echoTool],
      shouldStopAfterTurn: ({ message, toolResults, newMessages, turnIndex }) => {
        turns.push(turnIndex);
        return message.stopReason === 'toolUse' && toolResults.length === 1 && newMessages.length === 3;
      },
    });
    agent.followUp('queued');
    const added = await agent.prompt('go');
    expect(turns).toEqual([0]);
    expect(texts(added)).toEqual(['user:go', 'assistant:', 'toolResult:ok 1']);
    expect(faux.callCount).toBe(1);
    expect(texts(await agent.resume())).toEqual(['assistant:later', 'user:queued', 'assistant:follow']);
  });

  describe('afterModelResponse', () => {
    it('runs before message_end; a replaced response is what subscribers and the transcript get', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('darn it')] });
      const events: AgentEvent[] = [];
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        afterModelResponse: (response) => ({
          response: { ...response, content: [fauxText(textOf(response).replace('darn', '****'))] },
        }),
      });
      agent.subscribe((e) => void events.push(e));
      await agent.prompt('go');
      const end = events.find((e) => e.type === 'message_end' && e.message.role === 'assistant');
      expect(end?.type === 'message_end' && textOf(end.message)).toBe('**** it');
      expect(texts(agent.state.messages)).toEqual(['user:go', 'assistant:**** it']);
    });

    it('injected messages go after the tool results, before the next model call', async () => {
      const { faux, received } = recordingFaux(fauxMessage([fauxToolCall('echo', { i: 1 })]), fauxMessage('ok'));
      let injected = false;
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echoTool],
        afterModelResponse: () =>
          injected ? undefined : ((injected = true), { injectMessages: [userMessage('note: be careful')] }),
      });
      await agent.prompt('go');
      expect(received[1]!.messages).toEqual(['user:go', 'assistant:', 'toolResult:ok 1', 'user:note: be careful']);
      expectConsistentTranscript(agent.state.messages);
    });

    it("decision 'stop' ends the run: the response's tool calls are not executed and get error results", async () => {
      let executed = 0;
      const tool = defineTool({
        name: 'echo',
        description: 'd',
        parameters: z.object({ i: z.number() }),
        execute: () => (executed++, 'x'),
      });
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'c' })]), fauxMessage('never')],
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [tool],
        afterModelResponse: () => ({ decision: 'stop' }),
      });
      agent.followUp('stays queued');
      const added = await agent.prompt('go');
      expect(executed).toBe(0);
      expect(faux.callCount).toBe(1);
      expect(resultText(added.find((m): m is ToolResultMessage => m.role === 'toolResult')!)).toBe(
        'Tool call not executed: the run was stopped after this response',
      );
      expectConsistentTranscript(agent.state.messages);
    });

    it("decision 'loop_to_model' calls the model again even without tool calls", async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('draft'), fauxMessage('final')] });
      let calls = 0;
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        afterModelResponse: () =>
          ++calls === 1 ? { decision: 'loop_to_model', injectMessages: [userMessage('improve it')] } : undefined,
      });
      expect(texts(await agent.prompt('go'))).toEqual([
        'user:go',
        'assistant:draft',
        'user:improve it',
        'assistant:final',
      ]);
    });

    it('does not run for a failed model call', async () => {
      let ran = false;
      const faux = new FauxProvider({ responses: [fauxMessage('x', { stopReason: 'error' })] });
      await new Agent({ provider: faux, model: 'faux', afterModelResponse: () => void (ran = true) }).prompt('go');
      expect(ran).toBe(false);
    });
  });

  describe('a hook that fails', () => {
    it('ends the run with a HookError naming the hook; prompt() rejects; agent_end is emitted; the transcript closes with an error', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage('never')] });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        transformContext: () => {
          throw new Error('summary service down');
        },
      });
      const events: AgentEvent[] = [];
      agent.subscribe((e) => void events.push(e));
      const error = await agent.prompt('go').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HookError);
      expect(error).toMatchObject({
        middleware: 'agent options',
        hook: 'transformContext',
        message: 'Hook transformContext of middleware "agent options" failed: summary service down',
      });
      expect((error as HookError).inputHash).toMatch(/^[0-9a-f]{16}$/);
      expect(faux.callCount).toBe(0);
      expect(trace(events).slice(-4)).toEqual([
        'message_start:assistant(error)',
        'message_end:assistant(error)',
        'turn_end',
        'agent_end',
      ]);
      expect(agent.state.messages.at(-1)).toMatchObject({
        stopReason: 'error',
        errorMessage: (error as Error).message,
      });
      expect(agent.state.isStreaming).toBe(false);
      expect(agent.state.errorMessage).toBe((error as Error).message);
    });

    it('an erroring Observable is a failure too, and prompt$ errors with the HookError', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
        model: 'faux',
        transformSystemPrompt: () => throwError(() => new Error('nope')),
      });
      const seen: string[] = [];
      const error = await new Promise((resolve) =>
        agent.prompt$('go').subscribe({ next: (e) => seen.push(e.type), error: resolve }),
      );
      expect(error).toBeInstanceOf(HookError);
      expect(seen.at(-1)).toBe('agent_end');
    });

    it('an answer of the wrong shape is a hook failure with a clear message', async () => {
      const agent = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
        model: 'faux',
        transformContext: () => 'not messages' as never,
      });
      await expect(agent.prompt('go')).rejects.toThrow(
        'Hook transformContext of middleware "agent options" failed: expected an array of messages, got string',
      );
    });

    it.each<[string, unknown, string]>([
      [
        'a response that is not an assistant message',
        { response: userMessage('hi') },
        'the TurnAction response is not an assistant message',
      ],
      ['an unknown decision', { decision: 'maybe' }, 'unknown TurnAction decision "maybe"'],
      [
        'injectMessages that is not an array',
        { injectMessages: userMessage('hi') },
        'the TurnAction injectMessages is not an array',
      ],
    ])('a TurnAction with %s is a hook failure; the run ends consistently', async (_wrong, action, cause) => {
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'a' })]), fauxMessage('never')],
      });
      let executed = false;
      const echo = defineTool({
        name: 'echo',
        description: 'd',
        parameters: z.object({ i: z.number() }),
        execute: () => ((executed = true), 'x'),
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echo],
        afterModelResponse: () => action as never,
      });
      const events: AgentEvent[] = [];
      agent.subscribe((e) => void events.push(e));
      const error = await agent.prompt('go').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HookError);
      expect(error).toMatchObject({
        middleware: 'agent options',
        hook: 'afterModelResponse',
        message: `Hook afterModelResponse of middleware "agent options" failed: ${cause}`,
      });
      expect(faux.callCount).toBe(1);
      expect(executed).toBe(false);
      expect(agent.state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
      expectConsistentTranscript(agent.state.messages);
      expect(agent.state.messages.at(-1)).toMatchObject({
        stopReason: 'error',
        errorMessage: (error as Error).message,
      });
      expect(trace(events).at(-1)).toBe('agent_end');
      expect(agent.state.isStreaming).toBe(false);
    });

    it('in afterToolCall during a parallel batch: siblings are cancelled, every call gets one result, nothing unredacted leaks', async () => {
      const siblingStarted = deferred();
      let siblingSignal: AbortSignal | undefined;
      const secret = defineTool({
        name: 'secret',
        description: 'd',
        parameters: z.object({}),
        execute: async () => (await siblingStarted.promise, 'password=hunter2'),
      });
      const wait = defineTool({
        name: 'wait',
        description: 'd',
        parameters: z.object({}),
        execute: (_id, _a, { signal }) => (
          (siblingSignal = signal),
          siblingStarted.resolve(),
          new Promise<string>(() => undefined)
        ),
      });
      const faux = new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('secret', {}, { id: 's' }), fauxToolCall('wait', {}, { id: 'w' })]),
          fauxMessage('never'),
        ],
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [secret, wait],
        afterToolCall: ({ toolCall }) =>
          defer(() => (toolCall.id === 's' ? throwError(() => new Error('redactor crashed')) : of(undefined))),
      });
      const error = await agent.prompt('go').catch((e: unknown) => e);
      expect(error).toMatchObject({ hook: 'afterToolCall' });
      expect(siblingSignal?.aborted).toBe(true);
      expect(faux.callCount).toBe(1);
      const results = agent.state.messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
      expect(results.map((r) => r.toolCallId)).toEqual(['s', 'w']);
      expect(results.every((r) => r.isError)).toBe(true);
      expect(results.map(resultText).join()).not.toContain('hunter2');
      expectConsistentTranscript(agent.state.messages);
      expect(agent.state.messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'error' });
    });

    it('in beforeToolCall: no call runs, every call gets one result', async () => {
      let executed = 0;
      const tool = defineTool({
        name: 'echo',
        description: 'd',
        parameters: z.object({ i: z.number() }),
        execute: () => (executed++, 'x'),
      });
      const faux = new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'a' }), fauxToolCall('echo', { i: 2 }, { id: 'b' })]),
        ],
      });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [tool],
        beforeToolCall: ({ toolCall }) => {
          if (toolCall.id === 'b') throw new Error('policy engine down');
          return undefined;
        },
      });
      await expect(agent.prompt('go')).rejects.toMatchObject({ hook: 'beforeToolCall' });
      expect(executed).toBe(0);
      expectConsistentTranscript(agent.state.messages);
      const results = agent.state.messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
      expect(results.map((r) => [r.toolCallId, r.isError])).toEqual([
        ['a', true],
        ['b', true],
      ]);
    });

    it('in afterModelResponse: the response is kept, its tool calls are answered, the run ends', async () => {
      const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'a' })])] });
      const agent = new Agent({
        provider: faux,
        model: 'faux',
        tools: [echoTool],
        afterModelResponse: async () => {
          await tick(1);
          throw new Error('validator crashed');
        },
      });
      await expect(agent.prompt('go')).rejects.toMatchObject({ hook: 'afterModelResponse' });
      expect(agent.state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
      expectConsistentTranscript(agent.state.messages);
    });
  });
});
