// Seed 004: "任何匹配下面 Protocol 的对象就是 Checkpointer" — load / append / save_extra alone. `fromSeedCheckpointer`
// adapts such an object to cubepi's Checkpointer: the conformance kit runs against it, and what the protocol cannot
// do (list threads; delete without a deleteThread) is asserted as the documented typed refusal.
import { describe, expect, it } from 'vitest';
import {
  Agent,
  CheckpointCorruptionError,
  CheckpointUnsupportedError,
  ConfigurationError,
  fromSeedCheckpointer,
  InvalidInputError,
  InvalidStateError,
  ThreadConflictError,
  type Message,
  type SeedCheckpointer,
} from 'cubepi';
import { checkpointerConformance, FauxProvider, fauxMessage } from 'cubepi/testing';

/** The user's code: a seed-protocol store on a Map (sync methods, `append` returns nothing). */
function mapBackend(withDelete: boolean) {
  const threads = new Map<string, { messages: Message[]; extra: Record<string, unknown> }>();
  const thread = (id: string) => threads.get(id) ?? threads.set(id, { messages: [], extra: {} }).get(id)!;
  const calls = { load: 0, append: 0 };
  const backend: SeedCheckpointer = {
    load: (id) => (calls.load++, threads.get(id) ?? null),
    append: (id, messages) => void (calls.append++, thread(id).messages.push(...messages)),
    saveExtra: (id, extra) => void (thread(id).extra = extra),
    ...(withDelete ? { deleteThread: (id: string) => void threads.delete(id) } : {}),
  };
  return { backend, threads, calls };
}

const user = (text: string): Message => ({ role: 'user', content: text, timestamp: 1 });

// The kit's cases that reach `listThreads` (every earlier assertion of theirs passed when it is the refusal that ends
// them), and, without a backend deleteThread, those that delete.
const LISTING = [
  'an empty append writes nothing, creates nothing, and still checks expectedSeq',
  'saveExtra on a new thread creates it with no messages',
  'listThreads lists newest first, with message counts and timestamps',
  'listThreads pages with limit and the cursor of the last thread, each thread exactly once',
  'a cursor stays valid when its thread is deleted (a loop may delete what it lists)',
  'deleteThread removes the thread and only it; its id then starts again from seq 0',
  'a thread id that is empty, too long, not well-formed or has U+0000 is refused before any I/O',
  'thread ids are kept exactly: distinct ids never share a thread, and listThreads returns them as written',
];

/** An `it` that runs the kit's case as it is, or, for a refused one, asserts it ends with the typed refusal. */
function refusing(refused: ReadonlyMap<string, string>, seen: Set<string>) {
  return (name: string, body: () => Promise<void>) => {
    const operation = refused.get(name);
    if (operation === undefined) return it(name, body);
    seen.add(name);
    return it(`${name} — refused: CheckpointUnsupportedError (${operation})`, async () => {
      const error = await body().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(CheckpointUnsupportedError);
      expect(error).toMatchObject({ code: 'checkpoint_unsupported', operation });
    });
  };
}

describe('fromSeedCheckpointer: the conformance kit', () => {
  const withDelete = new Map(LISTING.map((name) => [name, 'listThreads']));
  const bare = new Map(withDelete);
  bare.set('deleteThread removes the thread and only it; its id then starts again from seq 0', 'deleteThread');
  const seen = new Set<string>();
  checkpointerConformance(() => fromSeedCheckpointer(mapBackend(true).backend), {
    name: 'a seed backend with deleteThread',
    describe,
    it: refusing(withDelete, seen),
    fork: false,
    owners: false,
  });
  checkpointerConformance(() => fromSeedCheckpointer(mapBackend(false).backend), {
    name: 'a bare seed backend (load, append, saveExtra)',
    describe,
    it: refusing(bare, seen),
    fork: false,
    owners: false,
  });
  it('every refusal listed is a case of the kit (none renamed away)', () => {
    expect([...seen].sort()).toEqual([...LISTING].sort());
  });
});

describe('fromSeedCheckpointer: what the refused cases check before listThreads', () => {
  it('an empty append writes nothing and checks expectedSeq; saveExtra creates a thread at seq 0', async () => {
    const { backend, threads } = mapBackend(true);
    const checkpointer = fromSeedCheckpointer(backend);
    expect(await checkpointer.append('t', [])).toEqual({ seq: 0 });
    expect(threads.has('t')).toBe(false);
    await checkpointer.append('t', [user('a'), user('b')]);
    expect(await checkpointer.append('t', [], { expectedSeq: 2 })).toEqual({ seq: 2 });
    await expect(checkpointer.append('t', [], { expectedSeq: 1 })).rejects.toMatchObject({ expected: 1, actual: 2 });
    await checkpointer.saveExtra('new', { k: 1 });
    expect(await checkpointer.load('new')).toEqual({ messages: [], extra: { k: 1 }, seq: 0 });
    expect(await checkpointer.append('new', [user('a')], { expectedSeq: 0 })).toEqual({ seq: 1 });
  });

  it('deleteThread goes to the backend’s; the id then starts again from seq 0', async () => {
    const checkpointer = fromSeedCheckpointer(mapBackend(true).backend);
    await checkpointer.append('gone', [user('a'), user('b')]);
    await checkpointer.deleteThread('gone');
    expect(await checkpointer.load('gone')).toBeNull();
    await expect(checkpointer.append('gone', [user('x')], { expectedSeq: 2 })).rejects.toBeInstanceOf(
      ThreadConflictError,
    );
    expect(await checkpointer.append('gone', [user('new')], { expectedSeq: 0 })).toEqual({ seq: 1 });
  });

  it('bad thread ids and bad list options are InvalidInputError, before the backend is asked', async () => {
    const { backend, calls } = mapBackend(false);
    const checkpointer = fromSeedCheckpointer(backend);
    for (const call of [
      () => checkpointer.load(''),
      () => checkpointer.append('a\u0000b', [user('a')]),
      () => checkpointer.saveExtra('', {}),
      () => checkpointer.deleteThread(''),
      () => checkpointer.listThreads({ limit: 0 }),
    ]) {
      await expect(call()).rejects.toBeInstanceOf(InvalidInputError);
    }
    expect(calls).toEqual({ load: 0, append: 0 });
  });
});

describe('fromSeedCheckpointer: its contract', () => {
  it('refuses a backend without one of the three methods', () => {
    const { backend } = mapBackend(false);
    expect(() => fromSeedCheckpointer({ ...backend, saveExtra: undefined } as unknown as SeedCheckpointer)).toThrow(
      ConfigurationError,
    );
    expect(() => fromSeedCheckpointer(backend, { conflictCheck: 'maybe' as 'none' })).toThrow(ConfigurationError);
  });

  it('seq is the count of messages load returns: checked by reloading before each append', async () => {
    const { backend, threads, calls } = mapBackend(false);
    const checkpointer = fromSeedCheckpointer(backend);
    expect(await checkpointer.append('t', [user('a')], { expectedSeq: 0 })).toEqual({ seq: 1 });
    // Another writer of the same store (the user's own code) appends behind the adapter's back: the reload sees it.
    threads.get('t')!.messages.push(user('elsewhere'));
    await expect(checkpointer.append('t', [user('b')], { expectedSeq: 1 })).rejects.toMatchObject({
      code: 'thread_conflict',
      expected: 1,
      actual: 2,
    });
    expect(threads.get('t')!.messages).toHaveLength(2);
    expect(calls.load).toBe(2);
  });

  it("conflictCheck 'none': expectedSeq trusted, no load before the append", async () => {
    const { backend, threads, calls } = mapBackend(false);
    const checkpointer = fromSeedCheckpointer(backend, { conflictCheck: 'none' });
    expect(await checkpointer.append('t', [user('a'), user('b')], { expectedSeq: 0 })).toEqual({ seq: 2 });
    threads.get('t')!.messages.push(user('elsewhere'));
    expect(await checkpointer.append('t', [user('c')], { expectedSeq: 2 })).toEqual({ seq: 3 });
    expect(calls.load).toBe(0);
  });

  it('a value the backend returns that is not a message is a CheckpointCorruptionError naming thread and seq', async () => {
    const checkpointer = fromSeedCheckpointer({
      load: async () => ({ messages: [user('ok'), { role: 'robot' } as unknown as Message] }),
      append: () => undefined,
      saveExtra: () => undefined,
    });
    const error: unknown = await checkpointer.load('t').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointCorruptionError);
    expect(error).toMatchObject({ threadId: 't', seq: 1 });
  });

  it('no fork, no owners, no blobs: files stay inline, fork() is refused by the Agent', async () => {
    const checkpointer = fromSeedCheckpointer(mapBackend(false).backend);
    expect('fork' in checkpointer).toBe(false);
    expect('claimThread' in checkpointer).toBe(false);
    expect(checkpointer.blobs).toBeUndefined();
    const faux = new FauxProvider({ responses: [fauxMessage('one')] });
    const agent = new Agent({ provider: faux, model: 'faux', checkpointer, threadId: 'chat' });
    await agent.prompt('hi');
    await expect(agent.fork()).rejects.toBeInstanceOf(InvalidStateError);
  });

  it('an Agent persists through it and a second Agent restores the thread; two stale writers conflict', async () => {
    const { backend, threads } = mapBackend(false);
    const checkpointer = fromSeedCheckpointer(backend);
    const faux = new FauxProvider({ responses: [fauxMessage('one'), fauxMessage('two'), fauxMessage('three')] });
    const first = new Agent({ provider: faux, model: 'faux', checkpointer, threadId: 'chat' });
    const second = new Agent({ provider: faux, model: 'faux', checkpointer, threadId: 'chat' });
    await first.prompt('hi');
    await second.prompt('again'); // loads the two messages first
    expect(threads.get('chat')!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    // `first` last saw seq 2; the store is at 4: its next write is a typed conflict, nothing written.
    await expect(first.prompt('stale')).rejects.toBeInstanceOf(ThreadConflictError);
    expect(threads.get('chat')!.messages).toHaveLength(4);
  });
});
