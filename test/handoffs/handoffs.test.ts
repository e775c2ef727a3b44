import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  handoff,
  HookError,
  lastN,
  MemoryCheckpointer,
  removeToolCalls,
  UnknownAgentError,
  type AgentEvent,
  type Message,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { deferred, expectConsistentTranscript, resultText } from '../helpers.js';

/** What a faux model received on each call. */
interface Seen {
  systemPrompt: string | undefined;
  tools: string[];
  messages: Message[];
}

function recording(responses: ((seen: Seen) => ReturnType<typeof fauxMessage>)[]) {
  const seen: Seen[] = [];
  const faux = new FauxProvider({
    responses: responses.map((respond) => (messages, _model, ctx) => {
      const entry = {
        systemPrompt: ctx.systemPrompt,
        tools: (ctx.tools ?? []).map((tool) => tool.name),
        messages: [...messages],
      };
      seen.push(entry);
      return respond(entry);
    }),
  });
  return { faux, seen };
}

const lookup = defineTool({
  name: 'lookup_invoice',
  description: 'Finds an invoice',
  parameters: z.object({ id: z.string() }),
  execute: (_id, { id }) => `invoice ${id}: 42 EUR`,
});

const note = defineTool({
  name: 'note',
  description: 'Takes a note',
  parameters: z.object({ text: z.string() }),
  execute: (_id, { text }) => `noted ${text}`,
});

describe('handoff()', () => {
  it('switches to the target from the next turn: its provider, system prompt and tools; the call gets one result', async () => {
    const billingModel = recording([() => fauxMessage('Your invoice is 42 EUR.')]);
    const billing = new Agent({
      name: 'billing',
      provider: billingModel.faux,
      model: 'faux',
      systemPrompt: 'You handle invoices.',
      tools: [lookup],
    });
    const triageModel = recording([() => fauxMessage([fauxToolCall('transfer_to_billing', {}, { id: 'h1' })])]);
    const triage = new Agent({
      name: 'triage',
      provider: triageModel.faux,
      model: 'faux',
      systemPrompt: 'You route customers.',
      tools: [note, handoff(billing, { description: 'Invoices and payments' })],
    });
    const events: AgentEvent[] = [];
    triage.subscribe((event) => void events.push(event));
    const added = await triage.prompt('I was charged twice');

    expect(triageModel.seen.map((s) => [s.systemPrompt, s.tools])).toEqual([
      ['You route customers.', ['note', 'transfer_to_billing']],
    ]);
    expect(billingModel.seen.map((s) => [s.systemPrompt, s.tools])).toEqual([
      ['You handle invoices.', ['lookup_invoice']],
    ]);
    // The transcript went with it: the prompt, the handoff call and its one result.
    expect(billingModel.seen[0]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult']);
    const result = added.find((m) => m.role === 'toolResult')!;
    expect(resultText(result as never)).toBe('Transferred to billing');
    expect(result).toMatchObject({ isError: false, details: { handoff: { from: 'triage', to: 'billing' } } });
    expectConsistentTranscript(triage.state.messages);

    const handoffEvent = events.find((e) => e.type === 'handoff');
    expect(handoffEvent).toMatchObject({ from: 'triage', to: 'billing', toolCallId: 'h1', turnIndex: 0 });
    const starts = events.filter((e) => e.type === 'turn_start');
    expect(starts.map((e) => (e as { agent?: string }).agent)).toEqual(['triage', 'billing']);
    expect(events.find((e) => e.type === 'agent_start')).toMatchObject({ agent: 'triage' });
    // The switch is stored as run state, before the handoff event.
    const patchIndex = events.findIndex(
      (e) => e.type === 'state_patched' && e.producer === 'handoff' && 'handoff.active' in (e.patch.set ?? {}),
    );
    expect(patchIndex).toBeGreaterThan(events.findIndex((e) => e.type === 'turn_end'));
    expect(patchIndex).toBeLessThan(events.indexOf(handoffEvent!));
    expect(triage.state.extra['handoff.active']).toEqual({ agent: 'billing', tool: 'transfer_to_billing', at: 3 });
  });

  it('keeps the handed-to agent for the next run of the thread', async () => {
    const billingModel = recording([() => fauxMessage('First.'), () => fauxMessage('Second.')]);
    const billing = new Agent({ name: 'billing', provider: billingModel.faux, model: 'faux', systemPrompt: 'B' });
    const triageModel = recording([() => fauxMessage([fauxToolCall('transfer_to_billing', {})])]);
    const triage = new Agent({
      name: 'triage',
      provider: triageModel.faux,
      model: 'faux',
      systemPrompt: 'T',
      tools: [handoff(billing, { description: 'billing' })],
    });
    await triage.prompt('one');
    const events: AgentEvent[] = [];
    triage.subscribe((event) => void events.push(event));
    await triage.prompt('two');
    expect(triageModel.seen).toHaveLength(1);
    expect(billingModel.seen.map((s) => s.systemPrompt)).toEqual(['B', 'B']);
    expect(events.find((e) => e.type === 'agent_start')).toMatchObject({ agent: 'billing' });
  });

  it('applies inputFilter to the conversation before the handoff, not to what the target adds after it', async () => {
    const billingModel = recording([
      () => fauxMessage([fauxToolCall('lookup_invoice', { id: '7' }, { id: 'l1' })]),
      () => fauxMessage('Done.'),
    ]);
    const billing = new Agent({ name: 'billing', provider: billingModel.faux, model: 'faux', tools: [lookup] });
    const triageModel = recording([
      () => fauxMessage([fauxToolCall('note', { text: 'x' }, { id: 'n1' })]),
      () => fauxMessage([fauxToolCall('transfer_to_billing', {}, { id: 'h1' })]),
    ]);
    const triage = new Agent({
      name: 'triage',
      provider: triageModel.faux,
      model: 'faux',
      tools: [note, handoff(billing, { description: 'billing', inputFilter: removeToolCalls })],
    });
    await triage.prompt('charged twice');
    // First billing call: the tool traffic before the handoff is gone.
    expect(billingModel.seen[0]!.messages.map((m) => m.role)).toEqual(['user']);
    // Second: billing's own call and result are kept.
    expect(billingModel.seen[1]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult']);
    // The stored transcript is whole.
    expect(triage.state.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'toolResult',
      'assistant',
      'toolResult',
      'assistant',
      'toolResult',
      'assistant',
    ]);
    expectConsistentTranscript(triage.state.messages);
  });

  it('lastN keeps the last messages without a leading tool result', () => {
    const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 0 });
    const result: Message = {
      role: 'toolResult',
      toolCallId: 'c',
      toolName: 'x',
      content: [],
      isError: false,
      timestamp: 0,
    };
    expect(lastN(2)([user('a'), user('b'), result, user('c')])).toEqual([user('c')]);
    expect(lastN(3)([user('a'), user('b'), result, user('c')])).toEqual([user('b'), result, user('c')]);
    expect(() => lastN(0)).toThrow(RangeError);
  });

  it('two handoffs in one batch: the first wins, the other gets an error result; other calls run', async () => {
    const billingModel = recording([() => fauxMessage('billing here')]);
    const support = new Agent({ name: 'support', provider: new FauxProvider(), model: 'faux' });
    const billing = new Agent({ name: 'billing', provider: billingModel.faux, model: 'faux' });
    const triageModel = recording([
      () =>
        fauxMessage([
          fauxToolCall('note', { text: 'a' }, { id: 'n1' }),
          fauxToolCall('transfer_to_billing', {}, { id: 'h1' }),
          fauxToolCall('transfer_to_support', {}, { id: 'h2' }),
        ]),
    ]);
    const triage = new Agent({
      name: 'triage',
      provider: triageModel.faux,
      model: 'faux',
      tools: [note, handoff(billing, { description: 'b' }), handoff(support, { description: 's' })],
    });
    const events: AgentEvent[] = [];
    triage.subscribe((event) => void events.push(event));
    const added = await triage.prompt('help');
    const results = added.filter((m) => m.role === 'toolResult');
    expect(results.map((m) => [m.toolCallId, m.isError, resultText(m)])).toEqual([
      ['n1', false, 'noted a'],
      ['h1', false, 'Transferred to billing'],
      [
        'h2',
        true,
        'Not transferred to support: this turn already handed off to billing (the first handoff of a turn wins)',
      ],
    ]);
    expect(events.filter((e) => e.type === 'handoff')).toHaveLength(1);
    expect(billingModel.seen).toHaveLength(1);
    expectConsistentTranscript(triage.state.messages);
  });

  it('bounds ping-pong with maxHandoffs: past it the model gets an error result and the active agent goes on', async () => {
    const aProvider = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('transfer_to_b', {}, { id: 'x1' })]),
        fauxMessage([fauxToolCall('transfer_to_b', {}, { id: 'x3' })]),
        fauxMessage('a stays'),
      ],
    });
    const bProvider = new FauxProvider({ responses: [fauxMessage([fauxToolCall('transfer_to_a', {}, { id: 'x2' })])] });
    const a2 = new Agent({ name: 'a', provider: aProvider, model: 'faux', maxHandoffs: 2 });
    const b2 = new Agent({ name: 'b', provider: bProvider, model: 'faux' });
    a2.setTools([handoff(b2, { description: 'to b' })]);
    b2.setTools([handoff(a2, { description: 'to a' })]);
    const events: AgentEvent[] = [];
    a2.subscribe((event) => void events.push(event));
    const added = await a2.prompt('go');
    expect(events.filter((e) => e.type === 'handoff').map((e) => (e as { to: string }).to)).toEqual(['b', 'a']);
    const third = added.find((m) => m.role === 'toolResult' && m.toolCallId === 'x3')!;
    expect(third).toMatchObject({ isError: true });
    expect(resultText(third as never)).toContain('limit of 2 handoffs');
    expect(added.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'a stays' }] });
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'completed' });
    expectConsistentTranscript(a2.state.messages);
  });

  it('runs onHandoff with who hands to whom; a throw is a HookError that stops the run with no switch', async () => {
    const calls: unknown[] = [];
    const billing = new Agent({ name: 'billing', provider: new FauxProvider(), model: 'faux' });
    const triage = new Agent({
      name: 'triage',
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('transfer_to_billing', {}, { id: 'h1' })])] }),
      model: 'faux',
      tools: [
        handoff(billing, {
          description: 'b',
          onHandoff: async (ctx) => {
            calls.push({ from: ctx.from, to: ctx.to, toolCallId: ctx.toolCallId, turnIndex: ctx.turnIndex });
            await Promise.resolve();
            throw new Error('CRM down');
          },
        }),
      ],
    });
    const events: AgentEvent[] = [];
    triage.subscribe((event) => void events.push(event));
    const failure = await triage.prompt('hi').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(HookError);
    expect(failure).toMatchObject({ middleware: 'handoff:transfer_to_billing', hook: 'onHandoff' });
    expect(calls).toEqual([{ from: 'triage', to: 'billing', toolCallId: 'h1', turnIndex: 0 }]);
    expect(events.some((e) => e.type === 'handoff')).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'failed' });
    expect(triage.state.extra['handoff.active']).toBeUndefined();
    expectConsistentTranscript(triage.state.messages);
  });

  it('a run cancelled during onHandoff does not switch; the call gets its one (aborted) result', async () => {
    const entered = deferred();
    let signalled = false;
    const billingFaux = new FauxProvider({ responses: [fauxMessage('never')] });
    const billing = new Agent({ name: 'billing', provider: billingFaux, model: 'faux' });
    const triage = new Agent({
      name: 'triage',
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('transfer_to_billing', {}, { id: 'h1' })])] }),
      model: 'faux',
      tools: [
        handoff(billing, {
          description: 'b',
          onHandoff: ({ signal }) =>
            new Promise<void>((_resolve, reject) => {
              entered.resolve();
              signal.addEventListener('abort', () => {
                signalled = true;
                reject(signal.reason as Error);
              });
            }),
        }),
      ],
    });
    const events: AgentEvent[] = [];
    triage.subscribe((event) => void events.push(event));
    const run = triage.prompt('hi');
    await entered.promise;
    triage.abort('user left');
    const added = await run;
    expect(signalled).toBe(true);
    expect(added.find((m) => m.role === 'toolResult')).toMatchObject({
      toolCallId: 'h1',
      isError: true,
      outcome: 'aborted',
    });
    expect(events.some((e) => e.type === 'handoff')).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
    expect(billingFaux.callCount).toBe(0);
    expect(triage.state.extra['handoff.active']).toBeUndefined();
    expectConsistentTranscript(triage.state.messages);
  });

  it('a thread whose active agent this Agent cannot reach fails with UnknownAgentError, calling no model', async () => {
    const checkpointer = new MemoryCheckpointer();
    const billing = new Agent({
      name: 'billing',
      provider: new FauxProvider({ responses: [fauxMessage('b')] }),
      model: 'faux',
    });
    const triage = new Agent({
      name: 'triage',
      provider: new FauxProvider({ responses: [fauxMessage([fauxToolCall('transfer_to_billing', {})])] }),
      model: 'faux',
      checkpointer,
      threadId: 't-unknown',
      tools: [handoff(billing, { description: 'b' })],
    });
    await triage.prompt('hi');
    const lonelyFaux = new FauxProvider({ responses: [fauxMessage('wrong agent')] });
    const lonely = new Agent({
      name: 'triage',
      provider: lonelyFaux,
      model: 'faux',
      checkpointer,
      threadId: 't-unknown',
    });
    const failure = await lonely.prompt('again').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UnknownAgentError);
    expect(failure).toMatchObject({ agent: 'billing', known: ['triage'] });
    expect(lonelyFaux.callCount).toBe(0);
    expect((await checkpointer.load('t-unknown'))!.messages).toHaveLength(triage.state.messages.length);
  });

  it('refuses a target without a name, and bad options', () => {
    const unnamed = new Agent({ provider: new FauxProvider(), model: 'faux' });
    expect(() => handoff(unnamed, { description: 'x' })).toThrow(/needs a `name`/);
    expect(() => handoff({} as Agent, { description: 'x' })).toThrow(/expected an Agent/);
    expect(() => new Agent({ name: 'bad name', provider: new FauxProvider(), model: 'faux' })).toThrow(/`name`/);
    expect(() => new Agent({ maxHandoffs: -1, provider: new FauxProvider(), model: 'faux' })).toThrow(/maxHandoffs/);
  });
});
