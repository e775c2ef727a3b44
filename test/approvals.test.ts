// Decisions, outcomes, state patches, lifecycle hooks and approvals through the Agent (issue 17).
import { of, tap } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  AgentBusyError,
  Decision,
  defineTool,
  HookError,
  InvalidInputError,
  InvalidStateError,
  MemoryCheckpointer,
  StaleApprovalError,
  StatePatchConflictError,
  textOf,
  ToolGuard,
  type AgentEndEvent,
  type AgentEvent,
  type AgentToolResult,
  type Message,
  type Middleware,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

const results = (messages: readonly Message[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
const ends = (events: readonly AgentEvent[]) => events.filter((e): e is AgentEndEvent => e.type === 'agent_end');

/** Tools that record their calls. */
function tools() {
  const ran: string[] = [];
  const make = (name: string, idempotent = false) =>
    defineTool({
      name,
      description: name,
      idempotent,
      parameters: z.object({ to: z.string() }),
      execute: (_id, { to }) => {
        ran.push(`${name}:${to}`);
        return `${name} sent to ${to}`;
      },
    });
  return { ran, list: [make('send_email'), make('lookup'), make('delete_file')] };
}

function setup(
  calls: readonly [string, Record<string, unknown>][],
  options: { middleware?: Middleware[]; checkpointer?: MemoryCheckpointer } = {},
) {
  const { ran, list } = tools();
  const seen: Message[][] = [];
  const faux = new FauxProvider({
    responses: [
      fauxMessage(calls.map(([name, args], i) => fauxToolCall(name, args, { id: `c${i}` }))),
      (messages) => (seen.push([...messages]), fauxMessage('done')),
    ],
  });
  const guard = new ToolGuard({ policy: ToolGuard.byName({ ask: ['send_email', 'delete_file'] }) });
  const events: AgentEvent[] = [];
  const agent = new Agent({
    provider: faux,
    model: 'faux',
    tools: list,
    middleware: [guard, ...(options.middleware ?? [])],
    ...(options.checkpointer === undefined ? {} : { checkpointer: options.checkpointer, threadId: 't' }),
  });
  agent.subscribe((event) => void events.push(event));
  return { agent, ran, seen, events, faux };
}

describe('approvals', () => {
  it('ask: the call is held, the run suspends with it pending; approve runs it and the run goes on', async () => {
    const { agent, ran, events } = setup([['send_email', { to: 'ann' }]]);
    const first = await agent.prompt('mail ann');
    expect(ran).toEqual([]);
    expect(first.map((m) => m.role)).toEqual(['user', 'assistant']);
    const [request] = agent.pending;
    expect(request).toEqual({
      requestId: expect.any(String),
      toolCallId: 'c0',
      toolName: 'send_email',
      args: { to: 'ann' },
      reason: 'Tool send_email needs approval',
    });
    expect(events.filter((e) => e.type === 'approval_requested')).toEqual([
      { type: 'approval_requested', runId: expect.any(String), seq: expect.any(Number), ...request },
    ]);
    expect(ends(events)[0]).toMatchObject({ outcome: 'suspended', pending: [request] });
    expect(agent.state.pendingApprovals).toEqual([request]);

    const added = await agent.respond(request!.requestId, { approve: true });
    expect(ran).toEqual(['send_email:ann']);
    expect(added.map((m) => `${m.role}:${textOf(m)}`)).toEqual(['toolResult:send_email sent to ann', 'assistant:done']);
    expect(results(added)[0]).toMatchObject({ outcome: 'ok', isError: false });
    expect(ends(events)[1]).toMatchObject({ outcome: 'completed' });
    expect(agent.pending).toEqual([]);
    expectConsistentTranscript(agent.state.messages);
  });

  it('deny: the call never runs, its outcome is denied and the model is told the reason', async () => {
    const { agent, ran, seen, events } = setup([['delete_file', { to: '/etc' }]]);
    await agent.prompt('clean up');
    const added = await agent.respond(agent.pending[0]!.requestId, { deny: 'Not on a Friday' });
    expect(ran).toEqual([]);
    expect(results(added)[0]).toMatchObject({
      outcome: 'denied',
      isError: true,
      content: [{ type: 'text', text: 'Not on a Friday' }],
    });
    expect(events.find((e) => e.type === 'tool_execution_end' && e.outcome === 'denied')).toBeDefined();
    expect(results(seen[0]!)[0]!.content).toEqual([{ type: 'text', text: 'Not on a Friday' }]);
  });

  it('edit: invalid edited arguments are refused and the request stays open; valid ones run', async () => {
    const { agent, ran } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('mail ann');
    const { requestId } = agent.pending[0]!;
    await expect(agent.respond(requestId, { edit: { to: 42 } })).rejects.toThrow(InvalidInputError);
    await expect(agent.respond(requestId, { edit: { to: 42 } })).rejects.toThrow(/to/);
    expect(agent.pending.map((r) => r.requestId)).toEqual([requestId]);
    await expect(agent.respond(requestId, { maybe: true } as never)).rejects.toThrow(InvalidInputError);
    const added = await agent.respond(requestId, { edit: { to: 'bob' } });
    expect(ran).toEqual(['send_email:bob']);
    expect(results(added)[0]).toMatchObject({ outcome: 'ok' });
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
  });

  it('a parallel batch with two approvals and one auto-allowed call: the free one runs once, the run resumes after both answers', async () => {
    const { agent, ran, events } = setup([
      ['send_email', { to: 'ann' }],
      ['lookup', { to: 'x' }],
      ['delete_file', { to: '/tmp' }],
    ]);
    const first = await agent.prompt('do all three');
    expect(ran).toEqual(['lookup:x']);
    expect(results(first).map((r) => r.toolCallId)).toEqual(['c1']);
    expect(agent.pending.map((r) => r.toolCallId)).toEqual(['c0', 'c2']);
    const [a, b] = agent.pending;
    expect(await agent.respond(a!.requestId, { approve: true })).toEqual([]); // not the last: nothing runs yet
    expect(ran).toEqual(['lookup:x']);
    expect(agent.pending.map((r) => r.toolCallId)).toEqual(['c2']);
    const added = await agent.respond(b!.requestId, { deny: 'no' });
    expect(ran).toEqual(['lookup:x', 'send_email:ann']);
    expect(results(added).map((r) => [r.toolCallId, r.outcome])).toEqual([
      ['c0', 'ok'],
      ['c2', 'denied'],
    ]);
    const turnEnd = events.filter((e) => e.type === 'turn_end').at(-2);
    expect(turnEnd?.type === 'turn_end' && turnEnd.toolResults.map((r) => r.toolCallId)).toEqual(['c0', 'c1', 'c2']);
    expectConsistentTranscript(agent.state.messages);
  });

  it('a stale answer is a typed error: an unknown id, an id already answered', async () => {
    const { agent } = setup([
      ['send_email', { to: 'ann' }],
      ['delete_file', { to: '/tmp' }],
    ]);
    await agent.prompt('go');
    await expect(agent.respond('nope', { approve: true })).rejects.toThrow(StaleApprovalError);
    const { requestId } = agent.pending[0]!;
    await agent.respond(requestId, { approve: true });
    await expect(agent.respond(requestId, { approve: true })).rejects.toMatchObject({
      code: 'stale_approval',
      requestId,
    });
  });

  it('a prompt while approvals are open is refused, calling no model; respond with no suspended run too', async () => {
    const { agent, faux } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('go');
    const calls = faux.callCount;
    await expect(agent.prompt('something else')).rejects.toThrow(InvalidStateError);
    await expect(agent.resume()).rejects.toThrow(/waiting for 1 approval/);
    expect(faux.callCount).toBe(calls);
    const idle = setup([['lookup', { to: 'x' }]]).agent;
    await expect(idle.respond('x', { approve: true })).rejects.toThrow(InvalidStateError);
  });

  it('abortPending: held calls get aborted results, an aborted message closes the run, outcome cancelled', async () => {
    const { agent, ran, events } = setup([
      ['send_email', { to: 'ann' }],
      ['lookup', { to: 'x' }],
    ]);
    await agent.prompt('go');
    const added = await agent.abortPending('changed my mind');
    expect(ran).toEqual(['lookup:x']);
    expect(results(added).map((r) => [r.toolCallId, r.outcome])).toEqual([['c0', 'aborted']]);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    expect(ends(events).at(-1)).toMatchObject({ outcome: 'cancelled' });
    expect(agent.pending).toEqual([]);
    expectConsistentTranscript(agent.state.messages);
    await expect(agent.abortPending()).rejects.toThrow(InvalidStateError);
  });

  it('respond$ emits the resumed run, and unsubscribing cancels it', async () => {
    const { agent } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('go');
    const types: string[] = [];
    await new Promise<void>((resolve) =>
      agent.respond$(agent.pending[0]!.requestId, { approve: true }).subscribe({
        next: (e) => types.push(e.type),
        complete: resolve,
      }),
    );
    expect(types[0]).toBe('agent_start');
    expect(types.at(-1)).toBe('agent_end');
  });

  it('the pending requests are durable: a new Agent on the same checkpointer restores and answers them', async () => {
    const checkpointer = new MemoryCheckpointer();
    const { agent } = setup([['send_email', { to: 'ann' }]], { checkpointer });
    await agent.prompt('go');
    const stored = (await checkpointer.load('t'))!.extra['cubepi:approvals'] as { requests: unknown[] };
    expect(stored.requests).toHaveLength(1);

    const later = setup([], { checkpointer });
    // A second process: its model only has to answer after the batch.
    later.faux.setResponses([fauxMessage('after restart')]);
    await later.agent.restore();
    expect(later.agent.pending.map((r) => r.toolName)).toEqual(['send_email']);
    const added = await later.agent.respond(later.agent.pending[0]!.requestId, { approve: true });
    expect(later.ran).toEqual(['send_email:ann']);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expect((await checkpointer.load('t'))!.extra['cubepi:approvals']).toBeUndefined();
    expectConsistentTranscript((await checkpointer.load('t'))!.messages);
  });

  it('an answer is stored before the call runs; if it cannot be stored, nothing runs and the request stays open', async () => {
    const checkpointer = new MemoryCheckpointer();
    const { agent, ran } = setup([['send_email', { to: 'ann' }]], { checkpointer });
    await agent.prompt('go');
    const saveExtra = vi.spyOn(checkpointer, 'saveExtra').mockRejectedValueOnce(new Error('disk full'));
    await expect(agent.respond(agent.pending[0]!.requestId, { approve: true })).rejects.toThrow('disk full');
    expect(ran).toEqual([]);
    expect(agent.pending).toHaveLength(1);
    saveExtra.mockRestore();
    const order: string[] = [];
    const save = vi.spyOn(checkpointer, 'saveExtra').mockImplementation(async (t, extra) => {
      const answered = (extra['cubepi:approvals'] as { requests: { answer?: unknown }[] } | undefined)?.requests.some(
        (r) => r.answer !== undefined,
      );
      if (answered) order.push('answer stored');
      return MemoryCheckpointer.prototype.saveExtra.call(checkpointer, t, extra);
    });
    const tool = agent.state.tools.find((t) => t.name === 'send_email')!;
    const execute = vi.spyOn(tool, 'execute').mockImplementation(() => (order.push('tool ran'), 'ok'));
    await agent.respond(agent.pending[0]!.requestId, { approve: true });
    expect(order.slice(0, 2)).toEqual(['answer stored', 'tool ran']);
    save.mockRestore();
    execute.mockRestore();
  });

  it('reset() drops the approvals of a suspended run with its transcript: the next prompt runs', async () => {
    const { agent, faux } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('mail ann');
    expect(agent.pending).toHaveLength(1);
    agent.reset();
    expect(agent.pending).toEqual([]);
    faux.setResponses([fauxMessage('fresh start')]);
    const added = await agent.prompt('hello again');
    expect(added.map((m) => textOf(m))).toEqual(['hello again', 'fresh start']);
  });

  it('respond during a run is refused with AgentBusyError', async () => {
    const { agent } = setup([['send_email', { to: 'ann' }]]);
    await agent.prompt('go');
    const id = agent.pending[0]!.requestId;
    const resumed = agent.respond(id, { approve: true });
    await new Promise((r) => setTimeout(r, 0));
    if (agent.state.isStreaming) await expect(agent.respond(id, { approve: true })).rejects.toThrow(AgentBusyError);
    await resumed;
  });
});

describe('decisions', () => {
  it('replace: the call does not run; the value is its result', async () => {
    const { agent, ran } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        {
          name: 'cache',
          beforeToolCall: () => Decision.replace({ content: [{ type: 'text', text: 'cached' }] }, 'cache hit'),
        },
      ],
    });
    const added = await agent.prompt('go');
    expect(ran).toEqual([]);
    expect(results(added)[0]).toMatchObject({ outcome: 'ok', content: [{ type: 'text', text: 'cached' }] });
  });

  it('stop("failed"): the run ends failed, prompt() resolves, every call answered', async () => {
    const events: AgentEvent[] = [];
    const { agent, ran } = setup(
      [
        ['lookup', { to: 'x' }],
        ['lookup', { to: 'y' }],
      ],
      { middleware: [{ name: 'policy', beforeToolCall: () => Decision.stop('failed', 'quota exhausted') }] },
    );
    agent.subscribe((e) => void events.push(e));
    const added = await agent.prompt('go');
    expect(ran).toEqual([]);
    expect(results(added).map((r) => r.outcome)).toEqual(['aborted', 'aborted']);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'error', errorMessage: 'quota exhausted' });
    expect(ends(events)[0]!.outcome).toBe('failed');
    expectConsistentTranscript(agent.state.messages);
  });

  it('stop("cancelled") ends the run as cancelled', async () => {
    const events: AgentEvent[] = [];
    const { agent } = setup([['lookup', { to: 'x' }]], {
      middleware: [{ name: 'p', beforeToolCall: () => Decision.stop('cancelled', 'user left') }],
    });
    agent.subscribe((e) => void events.push(e));
    const added = await agent.prompt('go');
    expect(added.at(-1)).toMatchObject({ stopReason: 'aborted', errorMessage: 'user left' });
    expect(ends(events)[0]!.outcome).toBe('cancelled');
  });

  it('the first denial wins in middleware order: the later gates are not called', async () => {
    const later = vi.fn(() => undefined);
    const { agent } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        { name: 'deny', beforeToolCall: () => ({ block: true, reason: 'blocked by policy' }) },
        { name: 'later', beforeToolCall: later },
      ],
    });
    const added = await agent.prompt('go');
    expect(results(added)[0]).toMatchObject({
      outcome: 'denied',
      content: [{ type: 'text', text: 'blocked by policy' }],
    });
    expect(later).not.toHaveBeenCalled();
  });

  it('wrapToolCall may pause a call (held like a gate pause), even from inside another layer', async () => {
    const outer: unknown[] = [];
    const { agent, ran, events } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        {
          name: 'observer',
          phase: 'observe',
          wrapToolCall: (call, _ctx, next) =>
            next(call).pipe(tap({ next: (v) => outer.push(v), error: (e: unknown) => outer.push(e) })),
        },
        {
          name: 'wrap',
          wrapToolCall: () => of(Decision.pause({ reason: 'wrapper asks', payload: { why: 1 } })),
          nextCalls: 'at-most-once',
        },
      ],
    });
    await agent.prompt('go');
    expect(agent.pending.map((r) => [r.reason, r.payload])).toEqual([['wrapper asks', { why: 1 }]]);
    expect(ran).toEqual([]);
    expect(outer).toHaveLength(1); // the pause reached the outer layer as an error of its `next`, not as a value
    expect(outer[0]).toBeInstanceOf(Error);
    expect(ends(events).map((e) => e.outcome)).toEqual(['suspended']);
  });

  it('a wrapper that holds an approved call again suspends the resumed run again; no model call in between', async () => {
    let seen = 0;
    const { agent, ran, events, faux } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        {
          name: 'twice',
          nextCalls: 'at-most-once',
          wrapToolCall: (call, _ctx, next) =>
            ++seen <= 2 ? of(Decision.pause({ reason: `ask ${seen}` })) : next(call),
        },
      ],
    });
    await agent.prompt('go');
    const first = agent.pending[0]!;
    expect(first.reason).toBe('ask 1');
    expect(await agent.respond(first.requestId, { approve: true })).toEqual([]);
    const second = agent.pending[0]!;
    expect([second.reason, second.toolCallId]).toEqual(['ask 2', first.toolCallId]);
    expect(second.requestId).not.toBe(first.requestId);
    expect(faux.callCount).toBe(1); // the model was not called with a call left unanswered
    expect(agent.state.messages.at(-1)?.role).toBe('assistant'); // the held call still has no result
    await agent.respond(second.requestId, { approve: true });
    expect(ran).toEqual(['lookup:x']);
    expect(agent.pending).toEqual([]);
    expect(ends(events).map((e) => e.outcome)).toEqual(['suspended', 'suspended', 'completed']);
    expectConsistentTranscript(agent.state.messages);
  });

  it('wrapToolCall replace: the value is the result, seen by the layers outside as an outcome; the tool never runs', async () => {
    const outer: unknown[] = [];
    const { agent, ran, events } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        {
          name: 'observer',
          phase: 'observe',
          wrapToolCall: (call, _ctx, next) => next(call).pipe(tap((v) => outer.push(v))),
        },
        {
          name: 'cache',
          wrapToolCall: () =>
            of(Decision.replace<AgentToolResult>({ content: [{ type: 'text', text: 'cached' }] }, 'cache hit')),
          nextCalls: 'at-most-once',
        },
      ],
    });
    const messages = await agent.prompt('go');
    expect(ran).toEqual([]);
    expect(outer).toEqual([{ result: { content: [{ type: 'text', text: 'cached' }] }, isError: false, outcome: 'ok' }]);
    expect(results(messages).map((m) => [textOf(m), m.outcome])).toEqual([['cached', 'ok']]);
    expect(ends(events).map((e) => e.outcome)).toEqual(['completed']);
  });

  it('wrapToolCall stop ends the run with its outcome; the call gets an aborted result', async () => {
    const { agent, ran, events } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        { name: 'budget', wrapToolCall: () => of(Decision.stop('failed', 'budget spent')), nextCalls: 'at-most-once' },
      ],
    });
    const messages = await agent.prompt('go');
    expect(ran).toEqual([]);
    expect(ends(events).map((e) => e.outcome)).toEqual(['failed']);
    expect(results(messages).map((m) => m.outcome)).toEqual(['aborted']);
    expectConsistentTranscript(agent.state.messages);
  });

  it('wrapToolCall continue is no answer for a wrapper: a HookError naming it', async () => {
    const { agent } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        { name: 'confused', wrapToolCall: () => of(Decision.continue()) as never, nextCalls: 'at-most-once' },
      ],
    });
    await expect(agent.prompt('go')).rejects.toSatisfy(
      (e: unknown) => e instanceof HookError && e.middleware === 'confused' && /continue/.test(String(e.cause)),
    );
  });

  it("wrapModelCall replace answers in the model's place: the provider is never called", async () => {
    const provider = new FauxProvider({ responses: [fauxMessage('from the model')] });
    const answer = { ...fauxMessage('from the cache'), stopReason: 'stop' as const };
    const agent = new Agent({
      provider,
      model: 'faux',
      middleware: [
        { name: 'cache', wrapModelCall: () => of(Decision.replace(answer, 'cache hit')), nextCalls: 'at-most-once' },
      ],
    });
    const messages = await agent.prompt('hi');
    expect(messages.map((m) => textOf(m))).toEqual(['hi', 'from the cache']);
    expect(provider.callCount).toBe(0);
  });

  it('wrapModelCall stop ends the run as cancelled; pause is a HookError (a model call cannot be paused)', async () => {
    const events: AgentEvent[] = [];
    const stopping = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('x')] }),
      model: 'faux',
      middleware: [
        { name: 'gate', wrapModelCall: () => of(Decision.stop('cancelled', 'closed')), nextCalls: 'at-most-once' },
      ],
    });
    stopping.subscribe((e) => void events.push(e));
    await stopping.prompt('hi');
    expect(ends(events).map((e) => e.outcome)).toEqual(['cancelled']);
    expectConsistentTranscript(stopping.state.messages);

    const pausing = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('x')] }),
      model: 'faux',
      middleware: [
        {
          name: 'asker',
          wrapModelCall: () => of(Decision.pause({ reason: 'why' })) as never,
          nextCalls: 'at-most-once',
        },
      ],
    });
    await expect(pausing.prompt('hi')).rejects.toSatisfy(
      (e: unknown) => e instanceof HookError && e.middleware === 'asker' && /cannot be paused/.test(String(e.cause)),
    );
  });
});

describe('state', () => {
  it('patches from hooks are applied by one reducer, announced, and read back by later hooks', async () => {
    const seen: unknown[] = [];
    const events: AgentEvent[] = [];
    const { agent } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        {
          name: 'counter',
          beforeToolCall: (ctx) => Decision.continue({ set: { calls: ((ctx.state.values.calls as number) ?? 0) + 1 } }),
          afterToolCall: () => ({ patch: { appendEvents: [{ type: 'audit', tool: 'lookup' }] } }),
          transformSystemPrompt: (prompt, ctx) => (seen.push(ctx.state.values.calls), prompt),
        },
      ],
    });
    agent.subscribe((e) => void events.push(e));
    await agent.prompt('go');
    expect(agent.state.runState.values).toEqual({ calls: 1 });
    expect(agent.state.extra).toEqual({ calls: 1 });
    expect(agent.state.runState.events).toEqual([{ type: 'audit', tool: 'lookup' }]);
    expect(agent.state.runState.changedBy.calls).toMatchObject({ producer: 'counter', version: 1 });
    expect(seen).toEqual([undefined, 1]); // the second model call sees the first call's patch
    const patched = events.filter((e) => e.type === 'state_patched');
    expect(patched.map((e) => e.type === 'state_patched' && [e.producer, e.baseVersion, e.version])).toEqual([
      ['counter', 0, 1],
      ['counter', 1, 2],
    ]);
  });

  it('ctx.extra is read-only: a hook that mutates it fails the run with a HookError naming it', async () => {
    const { agent } = setup([], {
      middleware: [
        {
          name: 'mutator',
          transformSystemPrompt: (p, ctx) => {
            (ctx.extra as Record<string, unknown>).x = 1;
            return p;
          },
        },
      ],
    });
    await expect(agent.prompt('go')).rejects.toThrow(HookError);
  });

  it('two calls of one parallel batch patching one key: StatePatchConflictError naming both producers', async () => {
    const { agent } = setup(
      [
        ['lookup', { to: 'x' }],
        ['lookup', { to: 'y' }],
      ],
      { middleware: [{ name: 'tagger', afterToolCall: (ctx) => ({ patch: { set: { last: ctx.toolCall.id } } }) }] },
    );
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatePatchConflictError);
    expect(error).toMatchObject({ key: 'last', producers: ['tagger', 'tagger'] });
    expectConsistentTranscript(agent.state.messages);
  });

  it('a patch touching a reserved key (cubepi:…) is a HookError; nothing is stored under it', async () => {
    const checkpointer = new MemoryCheckpointer();
    const { agent } = setup([['lookup', { to: 'x' }]], {
      checkpointer,
      middleware: [{ name: 'meddler', onRunStart: () => ({ set: { 'cubepi:approvals': 'oops' } }) }],
    });
    const error = await agent.prompt('go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HookError);
    expect(error).toMatchObject({ middleware: 'meddler', hook: 'onRunStart' });
    expect(String((error as HookError).cause)).toMatch(/reserved/);
    expect((await checkpointer.load('t'))?.extra['cubepi:approvals']).toBeUndefined();
  });

  it('context fragments follow the system prompt', async () => {
    const prompts: string[] = [];
    const faux = new FauxProvider({
      responses: [(_m, _model, ctx) => (prompts.push(ctx.systemPrompt ?? ''), fauxMessage('ok'))],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      systemPrompt: 'Be brief.',
      middleware: [
        { name: 'prefs', onRunStart: () => ({ addContextFragments: [{ id: 'lang', content: 'Answer in French.' }] }) },
      ],
    });
    await agent.prompt('hi');
    expect(prompts).toEqual(['Be brief.\n\nAnswer in French.']);
  });
});

describe('lifecycle and error policy', () => {
  it('onRunStart and onRunEnd run for every middleware, in order; onRunEnd gets the outcome and usage is summed', async () => {
    const calls: string[] = [];
    const events: AgentEvent[] = [];
    const { agent } = setup([['lookup', { to: 'x' }]], {
      middleware: [
        { name: 'a', onRunStart: () => void calls.push('a start'), onRunEnd: (_c, o) => void calls.push(`a end ${o}`) },
        { name: 'b', onRunStart: () => void calls.push('b start'), onRunEnd: (_c, o) => void calls.push(`b end ${o}`) },
      ],
    });
    agent.subscribe((e) => void events.push(e));
    const added = await agent.prompt('go');
    expect(calls).toEqual(['a start', 'b start', 'a end completed', 'b end completed']);
    const end = ends(events)[0]!;
    const total = added.reduce((sum, m) => sum + (m.role === 'assistant' ? m.usage.totalTokens : 0), 0);
    expect(end.usage.totalTokens).toBe(total);
    expect(total).toBeGreaterThan(0);
  });

  it('onRunStart may stop the run before any model call', async () => {
    const { agent, faux } = setup([], {
      middleware: [{ name: 'closed', onRunStart: () => Decision.stop('cancelled', 'out of hours') }],
    });
    const added = await agent.prompt('go');
    expect(faux.callCount).toBe(0);
    expect(added.at(-1)).toMatchObject({ stopReason: 'aborted', errorMessage: 'out of hours' });
  });

  it("onError: 'skip' drops a failing hook's answer, emits hook_error, and the run goes on", async () => {
    const events: AgentEvent[] = [];
    const { agent } = setup([], {
      middleware: [
        {
          name: 'analytics',
          onError: 'skip',
          transformSystemPrompt: () => {
            throw new Error('analytics down');
          },
        },
      ],
    });
    agent.subscribe((e) => void events.push(e));
    const added = await agent.prompt('go');
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expect(events.filter((e) => e.type === 'hook_error')).toEqual([
      {
        type: 'hook_error',
        runId: expect.any(String),
        seq: expect.any(Number),
        middleware: 'analytics',
        hook: 'transformSystemPrompt',
        error: 'analytics down',
      },
    ]);
  });

  it("onError: 'skip' also covers an async failure; a middleware without it still fails the run", async () => {
    const skipped = setup([], {
      middleware: [{ name: 'async', onError: 'skip', transformSystemPrompt: () => Promise.reject(new Error('late')) }],
    });
    await expect(skipped.agent.prompt('go')).resolves.toBeDefined();
    const strict = setup([], {
      middleware: [{ name: 'strict', transformSystemPrompt: () => Promise.reject(new Error('late')) }],
    });
    await expect(strict.agent.prompt('go')).rejects.toThrow(HookError);
  });
});
