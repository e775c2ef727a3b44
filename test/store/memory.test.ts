// The memory middleware and the remember tool (issue 33): what one user's threads store is recalled into the next
// thread's request for that user and never into another user's; extraction after a run; TTL; the fragment's producer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Agent,
  factKey,
  MemoryCheckpointer,
  MemoryStore,
  memory,
  MEMORY_EXTRACTION_PROMPT,
  rememberTool,
  type HookContext,
  type Store,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxCallContext } from 'cubepi/testing';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const userNamespace = (ctx: { principal?: { id: string } | undefined }) =>
  ctx.principal === undefined ? undefined : ['users', ctx.principal.id, 'facts'];

/** An agent whose provider records the system prompt of every request, on one thread. */
function agentOn(
  store: Store,
  threadId: string,
  checkpointer: MemoryCheckpointer | SQLiteCheckpointer,
  script: Parameters<typeof fauxMessage>[0][],
) {
  const prompts: string[] = [];
  const responses = script.map((content) => (_m: unknown, _model: unknown, context: FauxCallContext) => {
    prompts.push(context.systemPrompt ?? '');
    return fauxMessage(content);
  });
  const agent = new Agent({
    provider: new FauxProvider({ responses }),
    model: 'faux',
    systemPrompt: 'You are helpful.',
    checkpointer,
    threadId,
    tools: [rememberTool({ store, namespace: userNamespace })],
    middleware: [memory({ store, namespace: (ctx: HookContext) => userNamespace(ctx) })],
  });
  return { agent, prompts };
}

describe('memory middleware', () => {
  it("recalls what user A's first thread remembered in A's second thread, and not in user B's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cubepi-memory-'));
    dirs.push(dir);
    const checkpointer = new SQLiteCheckpointer(join(dir, 'threads.db'));
    const store = checkpointer.store();
    const alice = { id: 'alice' };
    const first = agentOn(store, 'a-1', checkpointer, [
      [fauxToolCall('remember', { fact: 'The user is vegetarian.', key: 'diet' }, { id: 'r1' })],
      'Noted.',
    ]);
    await first.agent.prompt('I am vegetarian, remember that.', { principal: alice });
    expect(first.prompts[0]).toBe('You are helpful.'); // nothing to recall yet
    expect((await store.get(['users', 'alice', 'facts'], 'diet'))?.value).toEqual({ text: 'The user is vegetarian.' });

    const second = agentOn(store, 'a-2', checkpointer, ['Try the lentil soup.']);
    await second.agent.prompt('What should I eat? vegetarian options', { principal: alice });
    expect(second.prompts[0]).toBe(
      'You are helpful.\n\nWhat you remember about the user (from earlier conversations):\n- The user is vegetarian.',
    );
    expect(second.prompts[0]!.startsWith('You are helpful.')).toBe(true); // the cached prefix is unchanged

    const bob = agentOn(store, 'b-1', checkpointer, ['Anything you like.']);
    await bob.agent.prompt('What should I eat? vegetarian options', { principal: { id: 'bob' } });
    expect(bob.prompts[0]).toBe('You are helpful.');
    expect(bob.prompts[0]).not.toContain('vegetarian');

    // The fragment came from a state patch whose producer is the middleware.
    const state = second.agent.state.runState;
    expect(state.contextFragments.map((f) => f.id)).toEqual(['memory']);
    await checkpointer.close();
  });

  it('a run without a namespace (no principal) neither recalls nor writes', async () => {
    const store = new MemoryStore();
    await store.put(['users', 'alice', 'facts'], 'diet', { text: 'The user is vegetarian.' });
    const run = agentOn(store, 't', new MemoryCheckpointer(), ['Hi.']);
    await run.agent.prompt('vegetarian');
    expect(run.prompts[0]).toBe('You are helpful.');
  });

  it('an expired or deleted fact is no longer recalled', async () => {
    const clock = { now: 1_000 };
    const store = new MemoryStore({ now: () => clock.now });
    await store.put(['users', 'alice', 'facts'], 'diet', { text: 'The user is vegetarian.' }, { ttl: 10_000 });
    await store.put(['users', 'alice', 'facts'], 'city', { text: 'The user lives in Lyon.' });
    const checkpointer = new MemoryCheckpointer();
    const before = agentOn(store, 't1', checkpointer, ['ok']);
    await before.agent.prompt('the user', { principal: { id: 'alice' } });
    expect(before.prompts[0]).toContain('vegetarian');
    clock.now += 10_000;
    await store.delete(['users', 'alice', 'facts'], 'city');
    const after = agentOn(store, 't2', checkpointer, ['ok']);
    await after.agent.prompt('the user', { principal: { id: 'alice' } });
    expect(after.prompts[0]).toBe('You are helpful.');
  });

  it("extract: 'model' asks the run's model with the fixed prompt after the run and stores each fact", async () => {
    const store = new MemoryStore();
    const requests: FauxCallContext[] = [];
    const provider = new FauxProvider({
      responses: [
        (_m, _model, context) => (requests.push(context), fauxMessage('Sure, tea it is.')),
        (_m, _model, context) => (
          requests.push(context),
          fauxMessage('- The user prefers green tea.\n- The user lives in Lyon.\n')
        ),
      ],
    });
    const agent = new Agent({
      provider,
      model: 'faux',
      middleware: [memory({ store, namespace: userNamespace, extract: 'model' })],
    });
    await agent.prompt('I live in Lyon and I like green tea.', { principal: { id: 'alice' } });
    expect(requests[1]?.systemPrompt).toBe(MEMORY_EXTRACTION_PROMPT);
    const facts = (await store.list(['users', 'alice'])).items.map((item) => item.value);
    expect(facts).toEqual(
      expect.arrayContaining([{ text: 'The user prefers green tea.' }, { text: 'The user lives in Lyon.' }]),
    );
    expect(facts).toHaveLength(2);
  });

  it('extract as a function stores what it returns, keyed by text (the same fact once)', async () => {
    const store = new MemoryStore();
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('ok'), fauxMessage('ok')] }),
      model: 'faux',
      middleware: [
        memory({ store, namespace: userNamespace, extract: (ctx) => [{ text: `said: ${ctx.newMessages.length}` }] }),
      ],
    });
    await agent.prompt('one', { principal: { id: 'alice' } });
    await agent.prompt('two', { principal: { id: 'alice' } });
    expect((await store.list(['users', 'alice'])).items.map((i) => i.value)).toEqual([{ text: 'said: 2' }]);
  });

  it('a fact the remember tool stores and the same fact extracted after the run share one key (stored once)', async () => {
    const store = new MemoryStore();
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('remember', { fact: 'Likes green tea.' }, { id: 'r1' })]),
          fauxMessage('ok'),
        ],
      }),
      model: 'faux',
      tools: [rememberTool({ store, namespace: userNamespace })],
      middleware: [memory({ store, namespace: userNamespace, extract: () => [{ text: '  likes GREEN tea.' }] })],
    });
    await agent.prompt('remember that', { principal: { id: 'alice' } });
    const items = (await store.list(['users', 'alice'])).items;
    expect(items.map((i) => i.key)).toEqual([factKey('Likes green tea.')]);
    expect(factKey('  likes GREEN tea.')).toBe(factKey('Likes green tea.'));
  });

  it('the remember tool answers an error result (not a failed run) when there is no namespace', async () => {
    const store = new MemoryStore();
    const run = agentOn(store, 't', new MemoryCheckpointer(), [
      [fauxToolCall('remember', { fact: 'x' }, { id: 'r1' })],
      'done',
    ]);
    const added = await run.agent.prompt('remember x');
    const result = added.find((m) => m.role === 'toolResult');
    expect(result).toMatchObject({ isError: true });
    expect((await store.list([])).items).toEqual([]);
  });
});
