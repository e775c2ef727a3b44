import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  CompositeMemberError,
  ConfigurationError,
  defineTool,
  EMPTY_USAGE,
  labelledAnswers,
  parallel,
  race,
  runComposite,
  sequence,
  supervise,
  textOf,
  ToolGuard,
  type CompositeEndEvent,
  type Usage,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxResponse } from 'cubepi/testing';
import { deferred, expectConsistentTranscript } from '../helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-compose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tokens = (n: number): Usage => ({ ...EMPTY_USAGE, input: n, totalTokens: n });
const agent = (responses: FauxResponse[], options: Partial<ConstructorParameters<typeof Agent>[0]> = {}) =>
  new Agent({ provider: new FauxProvider({ responses }), model: 'faux', ...options });

describe('composites: answers, numbering, invalid arguments', () => {
  it('sequence passes each answer on and numbers every event of the run in one sequence', async () => {
    const prompts: string[] = [];
    const echo =
      (reply: string): FauxResponse =>
      (messages) => {
        prompts.push(textOf(messages[messages.length - 1]!));
        return fauxMessage(reply);
      };
    const events = await lastValueFrom(
      sequence({ name: 'a', agent: agent([echo('one')]) }, { name: 'b', agent: agent([echo('two')]) })
        .run$('start')
        .pipe(toArray()),
    );
    expect(prompts).toEqual(['start', 'one']);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toMatchObject({ type: 'composite_start', kind: 'sequence', members: ['a', 'b'] });
    const end = events.at(-1) as CompositeEndEvent;
    expect(end).toMatchObject({ type: 'composite_end', outcome: 'completed', answer: 'two' });
    expect(end.results.map((result) => [result.name, result.outcome, result.answer])).toEqual([
      ['a', 'completed', 'one'],
      ['b', 'completed', 'two'],
    ]);
    // Every member event names its member; the member's own events are in their own order.
    const members = events.filter((event) => event.type === 'member_event');
    expect(members.map((event) => event.path.slice(0, 3).join('/'))).toContain('sequence/1/b');
    expect(members.find((event) => event.member === 'a')!.event.type).toBe('agent_start');
  });

  it('parallel merges with a labelled concatenation by default, or with `merge`', async () => {
    const make = () => [
      { name: 'x', agent: () => agent([fauxMessage('ex')]) },
      { name: 'y', agent: () => agent([fauxMessage('why')]) },
    ];
    const end = await runComposite(parallel(...make()), 'q');
    expect(end.answer).toBe('## x\n\nex\n\n## y\n\nwhy');
    expect(end.answer).toBe(
      labelledAnswers([
        { name: 'x', index: 0, answer: 'ex' },
        { name: 'y', index: 1, answer: 'why' },
      ]),
    );
    const joined = await runComposite(
      parallel(...make(), { merge: (answers) => answers.map((a) => a.answer).join('+') }),
      'q',
    );
    expect(joined.answer).toBe('ex+why');
  });

  it("a factory gets its member context, with a thread suggested from the run's threadId", async () => {
    const seen: unknown[] = [];
    const end = await runComposite(
      sequence({
        name: 'solo',
        agent: (ctx) => {
          seen.push({ name: ctx.name, index: ctx.index, threadId: ctx.threadId, input: ctx.input });
          return agent([fauxMessage('hi')]);
        },
      }),
      'go',
      { threadId: 't1' },
    );
    expect(end.answer).toBe('hi');
    expect(seen).toEqual([{ name: 'solo', index: 0, threadId: 't1/sequence/0-solo', input: 'go' }]);
  });

  it('is cold: nothing runs before a subscription, and each subscription is its own run', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two')] });
    const composite = race({ name: 'only', agent: () => new Agent({ provider: faux, model: 'faux' }) });
    const run$ = composite.run$('go');
    expect(faux.callCount).toBe(0);
    expect((await runComposite(composite, 'go')).answer).toBe('one');
    expect((await lastValueFrom(run$.pipe(toArray()))).at(-1)).toMatchObject({ answer: 'two' });
    expect(faux.callCount).toBe(2);
  });

  it('invalid arguments are ConfigurationErrors', () => {
    expect(() => sequence()).toThrow(ConfigurationError);
    expect(() => parallel({ budget: { tokens: 5 } })).toThrow(/at least 1 member/);
    expect(() => race({ name: 'a', agent: 42 as never })).toThrow(/not an Agent/);
    expect(() => sequence({ name: 'a b', agent: agent([]) })).toThrow(/name/);
    const one = agent([]);
    expect(() => sequence({ name: 'a', agent: one }, { name: 'a', agent: one })).toThrow(/two members are named "a"/);
    expect(() => sequence(one, { budget: { tokens: -1 } })).toThrow(/budget.tokens/);
    expect(() => supervise(one, [])).toThrow(/at least one worker/);
    expect(() => supervise('x' as never, [{ name: 'w', description: 'd', agent: one }])).toThrow(ConfigurationError);
  });
});

describe('composites: failures', () => {
  it('sequence: a failing member fails the composite with a typed error naming it; later members never start', async () => {
    const later = new FauxProvider({ responses: [fauxMessage('never')] });
    const composite = sequence(
      { name: 'first', agent: agent([fauxMessage('ok')]) },
      { name: 'broken', agent: agent([]) }, // no response queued: the provider's error ends its run failed
      { name: 'third', agent: new Agent({ provider: later, model: 'faux' }) },
    );
    const error = await runComposite(composite, 'go').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompositeMemberError);
    expect(error).toMatchObject({ member: 'broken', index: 1, kind: 'sequence' });
    expect((error as CompositeMemberError).message).toMatch(/No more faux responses queued/);
    expect((error as CompositeMemberError).results.map((r) => r.outcome)).toEqual(['completed', 'failed', 'not_run']);
    expect(later.callCount).toBe(0);
  });

  it("a factory that throws is the member's failure", async () => {
    const error = await runComposite(
      sequence({
        name: 'bad',
        agent: () => {
          throw new Error('no agent today');
        },
      }),
      'go',
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompositeMemberError);
    expect((error as Error).message).toMatch(/"bad" failed: no agent today/);
  });

  it('parallel: a failing member does not cancel its siblings; every result is reported', async () => {
    const end = (await lastValueFrom(
      parallel({ name: 'good', agent: agent([fauxMessage('fine')]) }, { name: 'bad', agent: agent([]) }).run$('go'),
    )) as CompositeEndEvent;
    expect(end.outcome).toBe('failed');
    expect(end.error).toMatchObject({ member: 'bad', index: 1 });
    expect(end.results.map((r) => [r.name, r.outcome, r.answer])).toEqual([
      ['good', 'completed', 'fine'],
      ['bad', 'failed', undefined],
    ]);
  });

  it('race: a failing member does not win; the first to complete does', async () => {
    const end = await runComposite(
      race({ name: 'bad', agent: agent([]) }, { name: 'good', agent: agent([fauxMessage('won')]) }),
      'go',
    );
    expect(end).toMatchObject({ outcome: 'completed', winner: 'good', answer: 'won' });
  });
});

describe('composites: one budget', () => {
  it('sequence: spending the shared budget stops the composite; no later member starts', async () => {
    const later = new FauxProvider({ responses: [fauxMessage('never')] });
    const end = await runComposite(
      sequence(
        { name: 'a', agent: agent([fauxMessage('a1', { usage: tokens(60) })]) },
        { name: 'b', agent: agent([fauxMessage('b1', { usage: tokens(60) })]) },
        { name: 'c', agent: new Agent({ provider: later, model: 'faux' }) },
        { budget: { tokens: 100 } },
      ),
      'go',
    );
    expect(end.outcome).toBe('stopped');
    expect(end.stop).toEqual({ reason: 'budget', bound: { tokens: 100 }, spent: { usd: 0, tokens: 120 } });
    expect(later.callCount).toBe(0);
  });

  it('parallel: one member reaching the budget cancels the others mid-request', async () => {
    const started = deferred();
    let signalFired = false;
    const hang = defineTool({
      name: 'hang',
      description: 'd',
      parameters: z.object({}),
      execute: (_id, _args, { signal }) =>
        new Promise((resolve) => {
          started.resolve();
          signal.addEventListener('abort', () => {
            signalFired = true;
            resolve({ content: [{ type: 'text', text: 'stopped' }] });
          });
        }),
    });
    const slow = agent([fauxMessage([fauxToolCall('hang', {})]), fauxMessage('never')], { tools: [hang] });
    // The spender spends only once the other member's tool runs: its `gate` tool waits for it.
    const gate = defineTool({
      name: 'gate',
      description: 'd',
      parameters: z.object({}),
      execute: async () => (await started.promise, { content: [{ type: 'text', text: 'open' }] }),
    });
    const spender = agent([fauxMessage([fauxToolCall('gate', {})]), fauxMessage('big', { usage: tokens(500) })], {
      tools: [gate],
    });
    const end = await runComposite(
      parallel({ name: 'slow', agent: slow }, { name: 'spender', agent: spender }, { budget: { tokens: 100 } }),
      'go',
    );
    expect(end.outcome).toBe('stopped');
    expect(end.stop?.reason).toBe('budget');
    expect(signalFired).toBe(true);
    expect(end.results[0]!.outcome).toBe('cancelled');
    expectConsistentTranscript(slow.state.messages);
  });

  it("supervise: a worker's spend counts against the budget shared with the manager, and stops both", async () => {
    const managerFaux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('research', { prompt: 'dig' })], { usage: tokens(40) }),
        fauxMessage('never answered'),
      ],
    });
    const manager = new Agent({ provider: managerFaux, model: 'faux' });
    const worker = () => agent([fauxMessage('found it', { usage: tokens(80) })]);
    const end = await runComposite(
      supervise(manager, [{ name: 'research', description: 'Researches', createAgent: worker }], {
        budget: { tokens: 100 },
      }),
      'go',
    );
    expect(end.outcome).toBe('stopped');
    expect(end.stop).toMatchObject({ reason: 'budget', spent: { tokens: 120 } });
    expect(managerFaux.callCount).toBe(1); // the manager's second call never went out
    expectConsistentTranscript(manager.state.messages);
  });

  it("supervise: workers are the manager's tools, their answers its tool results", async () => {
    const manager = agent([
      fauxMessage([fauxToolCall('research', { prompt: 'dig' })]),
      (messages) => fauxMessage(`manager saw: ${textOf(messages.at(-1)!)}`),
    ]);
    const events = await lastValueFrom(
      supervise(manager, [
        { name: 'research', description: 'Researches', createAgent: () => agent([fauxMessage('found it')]) },
      ])
        .run$('go')
        .pipe(toArray()),
    );
    const end = events.at(-1) as CompositeEndEvent;
    expect(end).toMatchObject({ outcome: 'completed', answer: 'manager saw: found it' });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    const worker = events.filter((event) => event.type === 'member_event' && event.member === 'research');
    expect(worker.map((event) => event.type === 'member_event' && event.event.type)).toContain('agent_end');
    // The manager's wrapped copies of the worker's events are not emitted twice.
    expect(
      events.filter(
        (event) =>
          event.type === 'member_event' && event.member === 'manager' && event.event.type === 'tool_execution_update',
      ),
    ).toEqual([]);
  });
});

describe('composites: approvals and checkpoints', () => {
  it('a member that suspends ends the sequence suspended with its requests; answering it and starting at the next member continues', async () => {
    const deploy = defineTool({
      name: 'deploy',
      description: 'd',
      parameters: z.object({}),
      execute: () => ({ content: [{ type: 'text', text: 'deployed' }] }),
    });
    const guarded = agent([fauxMessage([fauxToolCall('deploy', {})]), fauxMessage('deploy finished')], {
      tools: [deploy],
      middleware: [new ToolGuard({ policy: () => ({ ask: 'deploys need a person' }) })],
    });
    const prompts: string[] = [];
    const reporter = agent([
      (messages) => {
        prompts.push(textOf(messages.at(-1)!));
        return fauxMessage('reported');
      },
    ]);
    const composite = sequence({ name: 'ops', agent: guarded }, { name: 'report', agent: reporter });
    const end = await runComposite(composite, 'ship it');
    expect(end.outcome).toBe('suspended');
    expect(end.pending).toHaveLength(1);
    const [pending] = end.pending!;
    expect(pending!.name).toBe('ops');
    expect(pending!.agent).toBe(guarded);
    expect(pending!.requests.map((request) => request.toolName)).toEqual(['deploy']);
    expect(end.results.map((r) => r.outcome)).toEqual(['suspended', 'not_run']);
    expect(prompts).toEqual([]);

    const messages = await pending!.agent.respond(pending!.requests[0]!.requestId, { approve: true });
    const answer = textOf(messages.filter((m) => m.role === 'assistant').at(-1)!);
    expect(answer).toBe('deploy finished');
    const rest = await runComposite(composite, answer, { startAt: pending!.index + 1 });
    expect(rest).toMatchObject({ outcome: 'completed', answer: 'reported' });
    expect(prompts).toEqual(['deploy finished']);
  });

  it('each member stores its run on its own thread; after a cancel the stored transcript is consistent', async () => {
    const store = new SQLiteCheckpointer(join(dir, 'threads.db'));
    const started = deferred();
    let signalFired = false;
    const hang = defineTool({
      name: 'hang',
      description: 'd',
      parameters: z.object({}),
      execute: (_id, _args, { signal }) =>
        new Promise((resolve) => {
          started.resolve();
          signal.addEventListener('abort', () => {
            signalFired = true;
            resolve({ content: [{ type: 'text', text: 'late' }] });
          });
        }),
    });
    const agents: Agent[] = [];
    const member = (responses: FauxResponse[]) => (ctx: { threadId?: string | undefined }) => {
      const made = agent(responses, { tools: [hang], checkpointer: store, threadId: ctx.threadId! });
      agents.push(made);
      return made;
    };
    const composite = sequence(
      { name: 'a', agent: member([fauxMessage('first')]) },
      { name: 'b', agent: member([fauxMessage([fauxToolCall('hang', {})]), fauxMessage('never')]) },
    );
    const events: string[] = [];
    const subscription = composite.run$('go', { threadId: 'job-1' }).subscribe((event) => events.push(event.type));
    await started.promise;
    subscription.unsubscribe();
    const count = events.length;
    await agents[1]!.waitForIdle();
    expect(signalFired).toBe(true);
    expect(events.length).toBe(count); // nothing after the unsubscribe
    expect(events).not.toContain('composite_end');

    const first = await store.load('job-1/sequence/0-a');
    expect(first!.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const second = await store.load('job-1/sequence/1-b');
    const stored = second!.messages;
    expect(textOf(stored[0]!)).toBe('first');
    expectConsistentTranscript(stored);
    const last = stored.at(-1)!;
    expect(last.role === 'assistant' && last.stopReason).toBe('aborted');
  });
});
