import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, runAgentLoop, userMessage, type AgentEvent, type ToolResultMessage } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { collect, deferred, echoTool, expectConsistentTranscript, resultText, tick, trace } from './helpers.js';

function recorded(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.subscribe((event) => void events.push(event));
  return events;
}

describe('event order', () => {
  it('a text turn: agent_start, turn_start, the prompt, the streamed answer, turn_end, agent_end', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('Hello!')], chunkSize: 3 }),
      model: 'faux',
    });
    const events = recorded(agent);
    const added = await agent.prompt('Hi');
    expect(trace(events, { updates: true })).toEqual([
      'agent_start',
      'turn_start',
      'message_start:user',
      'message_end:user',
      'model_attempt',
      'message_start:assistant(stop)',
      'message_update:text_start',
      'message_update:text_delta',
      'message_update:text_delta',
      'message_update:text_end',
      'message_end:assistant(stop)',
      'turn_end',
      'agent_end',
    ]);
    expect(added.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(agent.state.messages).toEqual(added);
    const end = events.find((e) => e.type === 'agent_end');
    expect(end?.type === 'agent_end' && end.messages).toEqual(added);
    // every event names its run
    expect(new Set(events.map((e) => e.runId)).size).toBe(1);
  });

  it('a tool turn: the call, its execution, its result message, then the next model call in a new turn', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'a' })]), fauxMessage('done')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [echoTool] });
    const events = recorded(agent);
    await agent.prompt('go');
    expect(trace(events)).toEqual([
      'agent_start',
      'turn_start',
      'message_start:user',
      'message_end:user',
      'model_attempt',
      'message_start:assistant(stop)', // the snapshot at `start`; its stopReason is provisional
      'message_end:assistant(toolUse)',
      'tool_execution_start:a',
      'tool_execution_end:a',
      'message_start:toolResult(a)',
      'message_end:toolResult(a)',
      'turn_end',
      'turn_start',
      'model_attempt',
      'message_start:assistant(stop)',
      'message_end:assistant(stop)',
      'turn_end',
      'agent_end',
    ]);
    const turnEnd = events.find((e) => e.type === 'turn_end');
    expect(turnEnd?.type === 'turn_end' && turnEnd.toolResults.map(resultText)).toEqual(['ok 1']);
    const turns = events.filter((e) => e.type === 'turn_start').map((e) => e.type === 'turn_start' && e.turnIndex);
    expect(turns).toEqual([0, 1]);
    expectConsistentTranscript(agent.state.messages);
  });

  it('a parallel batch: every check first, siblings isolated, ends in completion order, results in model order', async () => {
    const order: string[] = [];
    const slow = deferred();
    const work = defineTool({
      name: 'work',
      description: 'does work',
      parameters: z.object({ name: z.string(), ms: z.number(), fail: z.boolean().default(false) }),
      execute: async (_id, { name, ms, fail }) => {
        order.push(`execute ${name}`);
        if (name === 'a') await slow.promise;
        else await tick(ms);
        if (fail) throw new Error(`${name} broke`);
        return `${name} done`;
      },
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('work', { name: 'a', ms: 0 }, { id: 'a' }),
          fauxToolCall('work', { name: 'b', ms: 1, fail: true }, { id: 'b' }),
          fauxToolCall('work', { name: 'c', ms: 0 }, { id: 'c' }),
          fauxToolCall('work', { name: 'd', ms: 5 }, { id: 'd' }),
        ]),
        fauxMessage('all done'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [work],
      beforeToolCall: ({ toolCall }) => {
        order.push(`check ${toolCall.id}`);
        return toolCall.id === 'c' ? { block: true, reason: 'c is not allowed' } : undefined;
      },
    });
    const events = recorded(agent);
    // `a` ends last: it is released once its siblings b and d have ended (a condition, not a sleep, so a loaded
    // machine that runs the timers late cannot reorder them).
    const ended = new Set<string>();
    agent.subscribe((event) => {
      if (event.type !== 'tool_execution_end') return;
      ended.add(event.toolCallId);
      if (ended.has('b') && ended.has('d')) slow.resolve();
    });
    await agent.prompt('go');

    expect(order.slice(0, 4)).toEqual(['check a', 'check b', 'check c', 'check d']);
    expect(order.slice(4).sort()).toEqual(['execute a', 'execute b', 'execute d']);
    const toolEvents = trace(events).filter((t) => t.startsWith('tool_') || t.startsWith('message_end:toolResult'));
    expect(toolEvents).toEqual([
      'tool_execution_start:a',
      'tool_execution_start:b',
      'tool_execution_start:c',
      'tool_execution_end:c', // blocked: answered during the checks
      'tool_execution_start:d',
      'tool_execution_end:b', // completion order
      'tool_execution_end:d',
      'tool_execution_end:a',
      'message_end:toolResult(a)', // model order
      'message_end:toolResult(b)',
      'message_end:toolResult(c)',
      'message_end:toolResult(d)',
    ]);
    const results = agent.state.messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((r) => [r.toolCallId, r.isError, resultText(r)])).toEqual([
      ['a', false, 'a done'],
      ['b', true, 'b broke'],
      ['c', true, 'c is not allowed'],
      ['d', false, 'd done'],
    ]);
    expect(faux.callCount).toBe(2); // the batch's failures did not end the run
    expectConsistentTranscript(agent.state.messages);
  });

  it('limits concurrency with toolConcurrency', async () => {
    let running = 0;
    let peak = 0;
    const slowEcho = defineTool({
      name: 'slow',
      description: 'd',
      parameters: z.object({}),
      execute: async () => {
        peak = Math.max(peak, ++running);
        await tick(3);
        running--;
        return 'ok';
      },
    });
    const calls = Array.from({ length: 6 }, (_, i) => fauxToolCall('slow', {}, { id: `s${i}` }));
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage(calls), fauxMessage('done')] }),
      model: 'faux',
      tools: [slowEcho],
      toolConcurrency: 2,
    });
    await agent.prompt('go');
    expect(peak).toBe(2);
  });

  it('sequential mode handles and answers each call before starting the next', async () => {
    const order: string[] = [];
    const step = defineTool({
      name: 'step',
      description: 'd',
      parameters: z.object({ n: z.number() }),
      execute: async (_id, { n }) => {
        order.push(`run ${n}`);
        await tick(1);
        return `step ${n}`;
      },
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('step', { n: 1 }, { id: 'x' }), fauxToolCall('step', { n: 2 }, { id: 'y' })]),
        fauxMessage('ok'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [step],
      toolExecution: 'sequential',
      beforeToolCall: ({ toolCall }) => void order.push(`check ${toolCall.id}`),
    });
    const events = recorded(agent);
    await agent.prompt('go');
    expect(order).toEqual(['check x', 'run 1', 'check y', 'run 2']);
    expect(trace(events).filter((t) => t.startsWith('tool_') || t.startsWith('message_end:toolResult'))).toEqual([
      'tool_execution_start:x',
      'tool_execution_end:x',
      'message_end:toolResult(x)',
      'tool_execution_start:y',
      'tool_execution_end:y',
      'message_end:toolResult(y)',
    ]);
  });

  it('one sequential tool makes its whole batch sequential', async () => {
    const order: string[] = [];
    const make = (name: string, mode: 'sequential' | undefined) =>
      defineTool({
        name,
        description: 'd',
        parameters: z.object({}),
        ...(mode ? { executionMode: mode } : {}),
        execute: async () => {
          order.push(`start ${name}`);
          await tick(2);
          order.push(`end ${name}`);
          return 'ok';
        },
      });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('p', {}, { id: '1' }), fauxToolCall('s', {}, { id: '2' })]),
        fauxMessage('ok'),
      ],
    });
    await new Agent({ provider: faux, model: 'faux', tools: [make('p', undefined), make('s', 'sequential')] }).prompt(
      'go',
    );
    expect(order).toEqual(['start p', 'end p', 'start s', 'end s']);
  });

  it('terminates only when every result of the batch asks to', async () => {
    const finish = defineTool({
      name: 'finish',
      description: 'd',
      parameters: z.object({}),
      execute: () => ({ content: [{ type: 'text', text: 'bye' }], terminate: true }),
    });
    const both = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('finish', {}, { id: '1' }), fauxToolCall('finish', {}, { id: '2' })]),
        fauxMessage('never'),
      ],
    });
    await new Agent({ provider: both, model: 'faux', tools: [finish, echoTool] }).prompt('go');
    expect(both.callCount).toBe(1);

    const mixed = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('finish', {}, { id: '1' }), fauxToolCall('echo', { i: 1 }, { id: '2' })]),
        fauxMessage('again'),
      ],
    });
    await new Agent({ provider: mixed, model: 'faux', tools: [finish, echoTool] }).prompt('go');
    expect(mixed.callCount).toBe(2);
  });

  it('does not execute tool calls of a response cut off by the token limit', async () => {
    let executed = 0;
    const tool = defineTool({
      name: 'echo',
      description: 'd',
      parameters: z.object({ i: z.number() }),
      execute: () => (executed++, 'ok'),
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'a' })], { stopReason: 'length' }),
        fauxMessage('retry'),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [tool] });
    await agent.prompt('go');
    expect(executed).toBe(0);
    const result = agent.state.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect(result.isError).toBe(true);
    expect(resultText(result)).toMatch(/output token limit/);
    expectConsistentTranscript(agent.state.messages);
  });

  it('a provider error ends the run with the error message kept; prompt() resolves and errorMessage is set', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage('half', { stopReason: 'error', errorMessage: 'overloaded', errorKind: 'unavailable' }),
        fauxMessage('never'),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux' });
    const events = recorded(agent);
    const added = await agent.prompt('go');
    expect(trace(events)).toEqual([
      'agent_start',
      'turn_start',
      'message_start:user',
      'message_end:user',
      'model_attempt',
      'message_start:assistant(stop)',
      'message_end:assistant(error)',
      'turn_end',
      'agent_end',
    ]);
    expect(added.at(-1)).toMatchObject({
      stopReason: 'error',
      errorMessage: 'overloaded',
      errorKind: 'unavailable',
      content: [{ type: 'text', text: 'half' }],
    });
    expect(agent.state.errorMessage).toBe('overloaded');
    expect(faux.callCount).toBe(1);
  });

  it('a provider that fails before start still yields message_start and message_end for its error', async () => {
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux' });
    const events = recorded(agent);
    await agent.prompt('go');
    expect(trace(events)).toEqual([
      'agent_start',
      'turn_start',
      'message_start:user',
      'message_end:user',
      'model_attempt',
      'message_start:assistant(error)',
      'message_end:assistant(error)',
      'turn_end',
      'agent_end',
    ]);
    expect(agent.state.errorMessage).toBe('No more faux responses queued');
  });

  it('runAgentLoop on its own is a cold Observable of the same events', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', { i: 7 }, { id: 'q' })]), fauxMessage('fine')],
    });
    const loop$ = runAgentLoop({
      provider: faux,
      model: { id: 'faux', provider: 'faux' },
      tools: [echoTool],
      prompts: [userMessage('go')],
    });
    expect(faux.callCount).toBe(0);
    const events = await collect(loop$);
    expect(trace(events)[0]).toBe('agent_start');
    expect(trace(events).at(-1)).toBe('agent_end');
    const end = events.at(-1);
    expect(end?.type === 'agent_end' && end.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'toolResult',
      'assistant',
    ]);
  });

  it('answers invalid JSON, unknown tools and invalid arguments with error results the model can act on', async () => {
    let executed = 0;
    const tool = defineTool({
      name: 'echo',
      description: 'd',
      parameters: z.object({ i: z.number() }),
      execute: () => (executed++, 'ok'),
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('echo', {}, { id: 'json', rawArguments: '{"i": 1' }),
          fauxToolCall('missing', {}, { id: 'unknown' }),
          fauxToolCall('echo', { i: 'one' }, { id: 'invalid' }),
        ]),
        fauxMessage('ok'),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [tool] });
    await agent.prompt('go');
    expect(executed).toBe(0);
    const results = agent.state.messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
    expect(results.map((r) => [r.toolCallId, r.isError])).toEqual([
      ['json', true],
      ['unknown', true],
      ['invalid', true],
    ]);
    expect(resultText(results[0]!)).toMatch(
      /^Tool call arguments for "echo" are not valid JSON \(.+\)\. Received: \{"i": 1$/,
    );
    expect(resultText(results[1]!)).toBe('Tool missing not found');
    expect(resultText(results[2]!)).toBe(
      'Invalid arguments for tool "echo":\n- i: Invalid input: expected number, received string',
    );
  });
});
