/**
 * The owner cases of the `Checkpointer` conformance suite (`checkpointerConformance` registers them unless
 * `owners: false`): `claimThread` creates a thread owned by its first claimant and never changes an owner,
 * `threadOwner` tells missing, unowned and owned threads apart, `listThreads({ owner })` pages through one owner's
 * threads, a fork keeps its parent's owner, and two handles claiming at once agree on one winner.
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { assert } from './assert.js';
import { codeOf, text, user } from './conformance-helpers.js';

/** What an owner case gets: the checkpointer under test and another handle on its store. */
export interface OwnerCaseStore {
  readonly checkpointer: Checkpointer;
  other(): Promise<Checkpointer>;
}

type Register = (name: string, body: (store: OwnerCaseStore) => Promise<void>) => void;
type Owning = Checkpointer & Required<Pick<Checkpointer, 'claimThread' | 'threadOwner'>>;

/** Registers the owner cases with `test`; each fails, saying so, on a backend without `claimThread`/`threadOwner`. */
export function ownerConformanceTests(test: Register): void {
  const ownerTest = (name: string, body: (checkpointer: Owning, store: OwnerCaseStore) => Promise<void>) =>
    test(`owners: ${name}`, (store) => body(owning(store.checkpointer), store));

  ownerTest('claimThread creates an empty thread owned by its first claimant and never changes it', async (c) => {
    assert.equal(await c.threadOwner('t'), undefined, 'a thread never written has no owner: undefined');
    assert.equal(await c.claimThread('t', 'alice'), 'alice');
    assert.deepEqual(await c.load('t'), { messages: [], extra: {}, seq: 0 }, 'the claimed thread is empty');
    assert.equal(await c.claimThread('t', 'bob'), 'alice', 'a second claimant is told the owner');
    assert.equal(await c.claimThread('t', 'alice'), 'alice');
    await c.append('t', [user('hi')], { expectedSeq: 0 });
    await c.saveExtra('t', { k: 1 });
    assert.equal(await c.threadOwner('t'), 'alice', 'append and saveExtra keep the owner');
    assert.deepEqual((await c.load('t'))?.messages.map(text), ['hi']);
  });

  ownerTest('a thread written without a claim is unowned (null), and a claim does not adopt it', async (c) => {
    await c.append('plain', [user('a')]);
    await c.saveExtra('extra-only', { k: 1 });
    assert.equal(await c.threadOwner('plain'), null);
    assert.equal(await c.threadOwner('extra-only'), null);
    assert.equal(await c.claimThread('plain', 'mallory'), null, 'an unowned thread stays unowned');
    assert.equal(await c.threadOwner('plain'), null);
    const listed = await c.listThreads();
    assert.deepEqual(
      listed.map((info) => [info.threadId, info.owner]),
      [
        ['extra-only', undefined],
        ['plain', undefined],
      ],
      'an unowned thread is listed without owner',
    );
  });

  ownerTest('listThreads({ owner }) lists only that owner’s threads, newest first, paged by cursor', async (c) => {
    for (let i = 0; i < 7; i++) await c.claimThread(`t${i}`, i % 2 === 0 ? 'alice' : 'bob');
    await c.append('unowned', [user('x')]);
    const all = await c.listThreads();
    assert.deepEqual(
      all.map((info) => [info.threadId, info.owner]),
      [
        ['unowned', undefined],
        ['t6', 'alice'],
        ['t5', 'bob'],
        ['t4', 'alice'],
        ['t3', 'bob'],
        ['t2', 'alice'],
        ['t1', 'bob'],
        ['t0', 'alice'],
      ],
    );
    const first = await c.listThreads({ owner: 'alice', limit: 3 });
    assert.deepEqual(
      first.map((info) => info.threadId),
      ['t6', 't4', 't2'],
    );
    const second = await c.listThreads({ owner: 'alice', limit: 3, after: first.at(-1)!.cursor });
    assert.deepEqual(
      second.map((info) => info.threadId),
      ['t0'],
    );
    assert.deepEqual(
      (await c.listThreads({ owner: 'bob' })).map((info) => info.threadId),
      ['t5', 't3', 't1'],
    );
    assert.deepEqual(await c.listThreads({ owner: 'nobody' }), []);
  });

  ownerTest('a fork keeps its parent’s owner; a deleted thread can be claimed anew', async (c) => {
    await c.claimThread('p', 'alice');
    await c.append('p', [user('a'), user('b')], { expectedSeq: 0 });
    await c.fork!('p', { atSeq: 1, newThreadId: 'f' });
    assert.equal(await c.threadOwner('f'), 'alice');
    await c.deleteThread('f');
    assert.equal(await c.threadOwner('f'), undefined);
    assert.equal(await c.claimThread('f', 'bob'), 'bob');
  });

  ownerTest('two handles claiming one thread at once agree on a single owner', async (c, store) => {
    const other = await store.other();
    for (let round = 0; round < 5; round++) {
      const id = `race-${round}`;
      const [a, b] = await Promise.all([c.claimThread(id, 'alice'), owning(other).claimThread(id, 'bob')]);
      assert.equal(a, b, 'both claimants see the same owner');
      assert.ok(a === 'alice' || a === 'bob');
      assert.equal(await c.threadOwner(id), a);
    }
  });

  ownerTest('a bad owner or thread id is refused with invalid_input and writes nothing', async (c) => {
    for (const owner of ['', 42, null, undefined]) {
      await assert.rejects(c.claimThread('t', owner as unknown as string), (error: unknown) => {
        assert.equal(codeOf(error), 'invalid_input', `owner ${String(owner)}: got ${String(error)}`);
        return true;
      });
    }
    await assert.rejects(c.claimThread('', 'alice'), (error: unknown) => codeOf(error) === 'invalid_input');
    await assert.rejects(c.listThreads({ owner: '' }), (error: unknown) => codeOf(error) === 'invalid_input');
    assert.equal(await c.threadOwner('t'), undefined);
    assert.deepEqual(await c.listThreads(), []);
  });
}

function owning(checkpointer: Checkpointer): Owning {
  assert.equal(typeof checkpointer.claimThread, 'function', 'the backend has no claimThread(): pass { owners: false }');
  assert.equal(typeof checkpointer.threadOwner, 'function', 'the backend has no threadOwner(): pass { owners: false }');
  return checkpointer as Owning;
}
