// AG-UI to the end with the vendor's own client (@ag-ui/client's HttpAgent) against a cubepi server: frontend tools
// (RunAgentInput.tools) held and answered by tool messages, approvals as interrupts answered by `resume`, and the run
// state as STATE_SNAPSHOT / STATE_DELTA, which HttpAgent applies itself.
import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';
import {
  Agent,
  Decision,
  MemoryCheckpointer,
  ToolGuard,
  type Message,
  type Middleware,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { lookup, serve, type Served } from './serve-helpers.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const resultText = (message: ToolResultMessage) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

/** Agents whose model makes `calls` (one step), then says what tool results it saw. */
function agents(calls: ReturnType<typeof fauxToolCall>[], middleware: Middleware[] = []) {
  const checkpointer = new MemoryCheckpointer();
  const byThread = new Map<string, Agent>();
  const agent = (threadId: string) => {
    const created = new Agent({
      provider: new FauxProvider({
        responses: [
          fauxMessage(calls),
          (messages: readonly Message[]) => {
            const results = messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
            return fauxMessage(`Saw: ${results.map(resultText).join(' | ')}`);
          },
        ],
      }),
      model: 'faux',
      tools: [lookup],
      middleware,
      checkpointer,
      threadId,
    });
    byThread.set(threadId, created);
    return created;
  };
  return { agent, checkpointer, byThread };
}

/** What RUN_FINISHED said of each run: its outcome as HttpAgent read it. */
function finishes() {
  const seen: Record<string, unknown>[] = [];
  const subscriber: AgentSubscriber = {
    onRunFinishedEvent: (params) => {
      const {
        event: _event,
        messages: _m,
        state: _s,
        agent: _a,
        input: _i,
        ...rest
      } = params as unknown as Record<string, unknown>;
      seen.push(rest);
    },
  };
  return { seen, subscriber };
}

const pickColor = {
  name: 'pick_color',
  description: 'Let the user pick a color',
  parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
};

const lastText = (client: HttpAgent) => {
  const last = client.messages.at(-1) as { role: string; content?: unknown };
  return last.role === 'assistant' && typeof last.content === 'string' ? last.content : undefined;
};

describe('frontend tools through HttpAgent', () => {
  it('the call streams and the run finishes with it pending; the tool message answers it and resumes', async () => {
    const { agent, checkpointer } = agents([fauxToolCall('pick_color', { palette: 'warm' }, { id: 'p1' })]);
    served = await serve({ agent, flushMs: 0 });
    const client = new HttpAgent({ url: `${served.base}/ag-ui`, threadId: 'agui-tools-1' });
    client.addMessage({ id: 'u1', role: 'user', content: 'Pick a color' });
    const { seen, subscriber } = finishes();
    await client.runAgent({ tools: [pickColor] }, subscriber);
    expect(seen.at(-1)).toMatchObject({ outcome: 'success', pendingToolCallIds: ['p1'] });
    const asked = client.messages.at(-1) as { role: string; toolCalls?: { id: string; function: unknown }[] };
    expect(asked.role).toBe('assistant');
    expect(asked.toolCalls).toEqual([
      { id: 'p1', type: 'function', function: { name: 'pick_color', arguments: '{"palette":"warm"}' } },
    ]);

    client.addMessage({ id: 't1', role: 'tool', toolCallId: 'p1', content: 'red' });
    await client.runAgent({ tools: [pickColor] }, subscriber);
    expect(seen.at(-1)).toMatchObject({ outcome: 'success', pendingToolCallIds: [] });
    expect(lastText(client)).toBe('Saw: red');
    // One tool message for the call on the client (the server does not send the client's own output back) …
    expect(
      client.messages.filter((m) => m.role === 'tool').map((m) => (m as { toolCallId: string }).toolCallId),
    ).toEqual(['p1']);
    // … and one result for it in the stored thread.
    const stored = (await checkpointer.load('agui-tools-1'))!.messages;
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(resultText(stored[2] as ToolResultMessage)).toBe('red');
  });

  it('a tool message with an error is an error result; a bad tool schema is refused with 400', async () => {
    const { agent, checkpointer } = agents([fauxToolCall('pick_color', { palette: 'cool' }, { id: 'p2' })]);
    served = await serve({ agent, flushMs: 0 });
    const client = new HttpAgent({ url: `${served.base}/ag-ui`, threadId: 'agui-tools-2' });
    client.addMessage({ id: 'u1', role: 'user', content: 'Pick' });
    await client.runAgent({ tools: [pickColor] });
    client.addMessage({ id: 't1', role: 'tool', toolCallId: 'p2', content: '', error: 'the user closed it' });
    await client.runAgent({ tools: [pickColor] });
    const result = (await checkpointer.load('agui-tools-2'))!.messages[2] as ToolResultMessage;
    expect([result.isError, resultText(result)]).toEqual([true, 'the user closed it']);

    const response = await fetch(`${served.base}/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'agui-tools-3',
        runId: 'r',
        messages: [{ id: 'u', role: 'user', content: 'x' }],
        tools: [{ name: 'bad', description: 'b', parameters: { type: 'string' } }],
      }),
    });
    expect(response.status).toBe(400);
  });
});

describe('approvals as AG-UI interrupts, answered by resume', () => {
  const guard = () => [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })];

  async function interrupted(threadId: string) {
    const setup = agents([fauxToolCall('lookup', { word: 'cube' }, { id: 'l1' })], guard());
    served = await serve({ agent: setup.agent, flushMs: 0 });
    const client = new HttpAgent({ url: `${served.base}/ag-ui`, threadId });
    client.addMessage({ id: 'u1', role: 'user', content: 'Define cube' });
    const { seen, subscriber } = finishes();
    await client.runAgent({}, subscriber);
    return { ...setup, client, seen, subscriber };
  }

  it('the run finishes with an interrupt per request; approving resumes and runs the tool', async () => {
    const { client, seen, subscriber, checkpointer, byThread } = await interrupted('agui-approve');
    const requestId = byThread.get('agui-approve')!.pending[0]!.requestId;
    expect(seen.at(-1)).toMatchObject({
      outcome: 'interrupt',
      interrupts: [expect.objectContaining({ id: requestId, toolCallId: 'l1' })],
    });
    expect(client.pendingInterrupts.map((i) => i.id)).toEqual([requestId]);
    await client.runAgent(
      { resume: [{ interruptId: requestId, status: 'resolved', payload: { approve: true } }] },
      subscriber,
    );
    expect(seen.at(-1)).toMatchObject({ outcome: 'success' });
    expect(lastText(client)).toBe('Saw: cube: a word');
    const stored = (await checkpointer.load('agui-approve'))!.messages;
    expect(stored.filter((m) => m.role === 'toolResult').map((m) => resultText(m))).toEqual(['cube: a word']);
  });

  it('a denial gives the model the reason; an edit runs the call with the edited arguments', async () => {
    const denied = await interrupted('agui-deny');
    const id = denied.byThread.get('agui-deny')!.pending[0]!.requestId;
    await denied.client.runAgent({ resume: [{ interruptId: id, status: 'resolved', payload: { deny: 'not today' } }] });
    expect(lastText(denied.client)).toBe('Saw: not today');
    await served!.close();

    const edited = await interrupted('agui-edit');
    const editId = edited.byThread.get('agui-edit')!.pending[0]!.requestId;
    await edited.client.runAgent({
      resume: [{ interruptId: editId, status: 'resolved', payload: { edit: { word: 'sphere' } } }],
    });
    expect(lastText(edited.client)).toBe('Saw: sphere: a word');
  });

  it('a stale interrupt id is refused with 409 stale_approval (HttpAgent fails the run)', async () => {
    const { client, byThread } = await interrupted('agui-stale');
    const response = await fetch(`${served!.base}/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'agui-stale',
        runId: 'r2',
        messages: [],
        resume: [{ interruptId: 'no-such-request', status: 'resolved', payload: { approve: true } }],
      }),
    });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('stale_approval');
    // The request answered meanwhile elsewhere: the client's resume of it is stale, and its run fails.
    const server = byThread.get('agui-stale')!;
    const requestId = server.pending[0]!.requestId;
    await server.respond(requestId, { approve: true });
    await expect(
      client.runAgent({ resume: [{ interruptId: requestId, status: 'resolved', payload: { approve: true } }] }),
    ).rejects.toThrow(/409/);
  });
});

describe('an approval and a frontend tool call held in one batch', () => {
  it('both are interrupts; resume answers the approval and gives the frontend tool its output', async () => {
    const setup = agents(
      [
        fauxToolCall('lookup', { word: 'cube' }, { id: 'l1' }),
        fauxToolCall('pick_color', { palette: 'warm' }, { id: 'p1' }),
      ],
      [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })],
    );
    served = await serve({ agent: setup.agent, flushMs: 0 });
    const client = new HttpAgent({ url: `${served.base}/ag-ui`, threadId: 'agui-mixed' });
    client.addMessage({ id: 'u1', role: 'user', content: 'Define cube and pick a color' });
    const { seen, subscriber } = finishes();
    await client.runAgent({ tools: [pickColor] }, subscriber);
    const pending = setup.byThread.get('agui-mixed')!.pending;
    const approval = pending.find((p) => p.toolName === 'lookup')!;
    const picked = pending.find((p) => p.toolName === 'pick_color')!;
    expect(seen.at(-1)).toMatchObject({
      outcome: 'interrupt',
      interrupts: [
        expect.objectContaining({ id: approval.requestId, toolCallId: 'l1' }),
        expect.objectContaining({ id: picked.requestId, toolCallId: 'p1', reason: 'client_tool' }),
      ],
    });
    await client.runAgent(
      {
        tools: [pickColor],
        resume: [
          { interruptId: approval.requestId, status: 'resolved', payload: { approve: true } },
          { interruptId: picked.requestId, status: 'resolved', payload: 'teal' },
        ],
      },
      subscriber,
    );
    expect(seen.at(-1)).toMatchObject({ outcome: 'success' });
    expect(lastText(client)).toBe('Saw: cube: a word | teal');
    const stored = (await setup.checkpointer.load('agui-mixed'))!.messages;
    expect(stored.filter((m) => m.role === 'toolResult').map((m) => m.toolCallId)).toEqual(['l1', 'p1']);
  });
});

describe('run state as STATE_SNAPSHOT and STATE_DELTA', () => {
  it("HttpAgent's state after each run equals the agent's stored run-state values", async () => {
    let calls = 0;
    const stateful: Middleware = {
      name: 'stateful',
      beforeToolCall: () => {
        calls += 1;
        return calls === 1
          ? Decision.continue({ set: { count: 1, 'a/b~c': { nested: [1, 2] } } })
          : Decision.continue({ set: { count: 2 }, delete: ['a/b~c', 'never-set'] });
      },
    };
    const checkpointer = new MemoryCheckpointer();
    const byThread = new Map<string, Agent>();
    const agent = (threadId: string) => {
      const call = fauxMessage([fauxToolCall('lookup', { word: 'cube' })]);
      const made = new Agent({
        provider: new FauxProvider({ responses: [call, fauxMessage('one'), call, fauxMessage('two')] }),
        model: 'faux',
        tools: [lookup],
        middleware: [stateful],
        checkpointer,
        threadId,
      });
      byThread.set(threadId, made);
      return made;
    };
    served = await serve({ agent, flushMs: 0 });
    const client = new HttpAgent({
      url: `${served.base}/ag-ui`,
      threadId: 'agui-state',
      initialState: { stale: true },
    });
    client.addMessage({ id: 'u1', role: 'user', content: 'One' });
    await client.runAgent();
    const server = byThread.get('agui-state')!;
    expect(server.state.extra).toEqual({ count: 1, 'a/b~c': { nested: [1, 2] } });
    // The snapshot replaced the client's own state; the delta added the keys (a pointer escaping "/" and "~").
    expect(client.state).toEqual(server.state.extra);

    // A second run starts from the stored values (its snapshot), sets one key and deletes another.
    client.addMessage({ id: 'u2', role: 'user', content: 'Two' });
    await client.runAgent();
    expect(server.state.extra).toEqual({ count: 2 });
    expect(client.state).toEqual({ count: 2 });
    expect((await checkpointer.load('agui-state'))!.extra).toMatchObject({ count: 2 });
  });
});
