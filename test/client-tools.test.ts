// Client tools: a call to a tool the client runs is held like an approval (the run suspends with a `clientTool`
// request), the client's `{ output }` becomes its one result and resumes the run; other answers are refused with
// typed errors; a denied or aborted client call still gets exactly one result; `RunOptions.tools` adds tools for one
// run only.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  clientTool,
  ConfigurationError,
  defineTool,
  InvalidInputError,
  MemoryCheckpointer,
  textOf,
  ToolGuard,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const results = (messages: readonly Message[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');

const confirm = clientTool({
  name: 'confirm',
  description: 'Ask the user to confirm',
  parameters: z.object({ message: z.string() }),
});

describe('clientTool', () => {
  it('holds the call, and the output answer becomes its one result that the next model call sees', async () => {
    const seen: Message[][] = [];
    const toolNames: string[][] = [];
    const faux = new FauxProvider({
      responses: [
        (_m, _model, { tools }) => (
          toolNames.push(tools.map((t) => t.name)),
          fauxMessage([fauxToolCall('confirm', { message: 'Delete?' }, { id: 'c1' })])
        ),
        (messages) => (seen.push([...messages]), fauxMessage('deleted')),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [confirm],
      checkpointer: new MemoryCheckpointer(),
      threadId: 't',
    });
    const first = await agent.prompt('delete it');
    expect(results(first)).toEqual([]);
    expect(toolNames).toEqual([['confirm']]);
    expect(agent.pending).toEqual([
      expect.objectContaining({ toolCallId: 'c1', toolName: 'confirm', reason: 'client_tool', clientTool: true }),
    ]);
    const resumed = await agent.respond(agent.pending[0]!.requestId, { output: 'yes' });
    const [result] = results(resumed);
    expect(result).toMatchObject({ toolCallId: 'c1', toolName: 'confirm', isError: false, outcome: 'ok' });
    expect(textOf(result!)).toBe('yes');
    const lastSeen = seen[0]!.at(-1) as ToolResultMessage;
    expect([lastSeen.role, lastSeen.toolCallId, textOf(lastSeen)]).toEqual(['toolResult', 'c1', 'yes']);
    expect(agent.pending).toEqual([]);
    expectConsistentTranscript(agent.state.messages);
    expect(results(agent.state.messages)).toHaveLength(1);
  });

  it('an output with isError and blocks is an error result with those blocks', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('confirm', { message: 'x' }, { id: 'c1' })]), fauxMessage('ok')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [confirm] });
    await agent.prompt('go');
    const resumed = await agent.respond(agent.pending[0]!.requestId, {
      output: [{ type: 'text', text: 'the user closed the dialog' }],
      isError: true,
    });
    expect(results(resumed)[0]).toMatchObject({ isError: true, outcome: 'error' });
    expect(textOf(results(resumed)[0]!)).toBe('the user closed the dialog');
  });

  it('refuses output for a call that is not a client tool, and approve or edit for one that is', async () => {
    const send = defineTool({
      name: 'send',
      description: 'send',
      parameters: z.object({}),
      execute: () => 'sent',
    });
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('send', {}, { id: 's1' }), fauxToolCall('confirm', { message: 'm' }, { id: 'c1' })]),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [send, confirm],
      middleware: [new ToolGuard({ policy: (ctx) => (ctx.toolCall.name === 'send' ? { ask: 'really?' } : 'allow') })],
    });
    await agent.prompt('go');
    const bySend = agent.pending.find((p) => p.toolName === 'send')!;
    const byConfirm = agent.pending.find((p) => p.toolName === 'confirm')!;
    expect(bySend.clientTool).toBeUndefined();
    await expect(agent.respond(bySend.requestId, { output: 'fake' })).rejects.toThrow(InvalidInputError);
    await expect(agent.respond(bySend.requestId, { output: 'fake' })).rejects.toThrow(/not a client tool's call/);
    await expect(agent.respond(byConfirm.requestId, { approve: true })).rejects.toThrow(/answer it with \{ output \}/);
    await expect(agent.respond(byConfirm.requestId, { edit: { message: 'n' } })).rejects.toThrow(InvalidInputError);
    await expect(agent.respond(byConfirm.requestId, { output: 42 } as never)).rejects.toThrow(InvalidInputError);
    // Nothing refused was recorded: both are still open, and answering them properly finishes the batch.
    expect(agent.pending).toHaveLength(2);
    await agent.respond(bySend.requestId, { approve: true });
    const resumed = await agent.respond(byConfirm.requestId, { output: 'confirmed' });
    expect(results(resumed).map((r) => [r.toolCallId, textOf(r)])).toEqual([
      ['s1', 'sent'],
      ['c1', 'confirmed'],
    ]);
    expectConsistentTranscript(agent.state.messages);
  });

  it('a denied client call gets one denied result; an aborted one gets one aborted result', async () => {
    for (const how of ['deny', 'abort'] as const) {
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('confirm', { message: 'm' }, { id: 'c1' })]), fauxMessage('ok')],
      });
      const agent = new Agent({ provider: faux, model: 'faux', tools: [confirm] });
      await agent.prompt('go');
      const after =
        how === 'deny'
          ? await agent.respond(agent.pending[0]!.requestId, { deny: 'the user said no' })
          : await agent.abortPending('closed the tab');
      const got = results(after);
      expect(got).toHaveLength(1);
      expect(got[0]).toMatchObject({ toolCallId: 'c1', isError: true, outcome: how === 'deny' ? 'denied' : 'aborted' });
      if (how === 'deny') expect(textOf(got[0]!)).toBe('the user said no');
      expectConsistentTranscript(agent.state.messages);
    }
  });

  it('invalid arguments are an error result, not held; a guard may deny a client tool before it is held', async () => {
    const faux = new FauxProvider({
      responses: [
        fauxMessage([
          fauxToolCall('confirm', { message: 7 }, { id: 'bad' }),
          fauxToolCall('confirm', { message: 'ok' }, { id: 'c2' }),
        ]),
        fauxMessage('done'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [confirm],
      middleware: [
        new ToolGuard({ policy: (ctx) => (ctx.toolCall.id === 'c2' ? { deny: 'no confirmations' } : 'allow') }),
      ],
    });
    const messages = await agent.prompt('go');
    expect(agent.pending).toEqual([]);
    expect(results(messages).map((r) => [r.toolCallId, r.outcome])).toEqual([
      ['bad', 'error'],
      ['c2', 'denied'],
    ]);
  });
});

describe('clientTool behind an approval', () => {
  it('asked first: the approval resumes into a client hold, and the output then answers it (one result)', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('confirm', { message: 'm' }, { id: 'c1' })]), fauxMessage('done')],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [confirm],
      middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['confirm'] }) })],
    });
    await agent.prompt('go');
    expect(agent.pending.map((p) => [p.reason, p.clientTool])).toEqual([['Tool confirm needs approval', undefined]]);
    const afterApproval = await agent.respond(agent.pending[0]!.requestId, { approve: true });
    expect(results(afterApproval)).toEqual([]);
    expect(agent.pending).toEqual([
      expect.objectContaining({ toolCallId: 'c1', reason: 'client_tool', clientTool: true }),
    ]);
    const resumed = await agent.respond(agent.pending[0]!.requestId, { output: 'ok by the user' });
    expect(results(resumed).map((r) => [r.toolCallId, textOf(r)])).toEqual([['c1', 'ok by the user']]);
    expectConsistentTranscript(agent.state.messages);
  });
});

describe('clientTool from a JSON Schema, and RunOptions.tools', () => {
  const pick = () =>
    clientTool({
      name: 'pick_color',
      description: 'Let the user pick a color',
      parameters: { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] },
    });

  it('sends the schema as written, checks arguments against it, and is given to one run only', async () => {
    const schemas: unknown[] = [];
    const faux = new FauxProvider({
      responses: [
        (_m, _model, { tools }) => (
          schemas.push(tools.map((t) => [t.name, t.inputSchema])),
          fauxMessage([
            fauxToolCall('pick_color', { palette: 3 }, { id: 'p0' }),
            fauxToolCall('pick_color', { palette: 'warm' }, { id: 'p1' }),
          ])
        ),
        (_m, _model, { tools }) => (schemas.push(tools.map((t) => t.name)), fauxMessage('red it is')),
        (_m, _model, { tools }) => (schemas.push(tools.map((t) => t.name)), fauxMessage('plain')),
      ],
    });
    const agent = new Agent({ provider: faux, model: 'faux' });
    await agent.prompt('pick', { tools: [pick()] });
    expect(schemas[0]).toEqual([
      ['pick_color', { type: 'object', properties: { palette: { type: 'string' } }, required: ['palette'] }],
    ]);
    expect(agent.pending.map((p) => p.toolCallId)).toEqual(['p1']);
    // The resumed run gets the tools again (a front end sends them with every request).
    await agent.respond(agent.pending[0]!.requestId, { output: 'red' }, { tools: [pick()] });
    expect(schemas[1]).toEqual(['pick_color']);
    await agent.prompt('again');
    expect(schemas[2]).toEqual([]);
    expect(results(agent.state.messages).map((r) => [r.toolCallId, r.outcome])).toEqual([
      ['p0', 'error'],
      ['p1', 'ok'],
    ]);
    expectConsistentTranscript(agent.state.messages);
  });

  it('an output answer needs no tool in the resumed run', async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('pick_color', { palette: 'cool' }, { id: 'p1' })]), fauxMessage('blue')],
    });
    const agent = new Agent({ provider: faux, model: 'faux' });
    await agent.prompt('pick', { tools: [pick()] });
    const resumed = await agent.respond(agent.pending[0]!.requestId, { output: 'blue' });
    expect(results(resumed).map((r) => [r.outcome, textOf(r)])).toEqual([['ok', 'blue']]);
  });

  it('refuses a run tool named like one of the agent, and a schema that is not an object', async () => {
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux', tools: [confirm] });
    await expect(agent.prompt('x', { tools: [confirm] })).rejects.toThrow(/already has a tool named "confirm"/);
    expect(() => clientTool({ name: 'x', description: 'x', parameters: { type: 'string' } })).toThrow(
      ConfigurationError,
    );
  });
});
