/**
 * The fork cases of the `Checkpointer` conformance suite (`checkpointerConformance` registers them): `fork` shares a
 * prefix without copying it, stays independent of its parent, loads at any depth, shows in `listThreads`, keeps a
 * parent with forks from being deleted, and refuses bad input with typed errors that write nothing.
 * @module
 */
import type { Checkpointer, ForkOptions, ForkResult } from '../checkpoint/checkpointer.js';
import { assert } from './assert.js';
import { assertConflictError, codeOf, text, user } from './conformance-helpers.js';

/** What a fork case gets: the checkpointer under test and another handle on its store. */
export interface ForkCaseStore {
  readonly checkpointer: Checkpointer;
  other(): Promise<Checkpointer>;
}

type Register = (name: string, body: (store: ForkCaseStore) => Promise<void>) => void;
type Forking = Checkpointer & { fork(threadId: string, options: ForkOptions): Promise<ForkResult> };

/** Registers the fork cases with `test`; each case fails, saying so, on a backend without `fork`. */
export function forkConformanceTests(test: Register): void {
  const forkTest = (name: string, body: (checkpointer: Forking, store: ForkCaseStore) => Promise<void>) =>
    test(`fork: ${name}`, (store) => body(forking(store.checkpointer), store));

  forkTest("shares the parent's messages [0, atSeq), copies its extra, and resolves with seq = atSeq", async (c) => {
    await c.append('p', ['a', 'b', 'c', 'd', 'e'].map(user));
    await c.saveExtra('p', { plan: { step: 2 } });
    assert.deepEqual(await c.fork('p', { atSeq: 3, newThreadId: 'f' }), { threadId: 'f', seq: 3 });
    const fork = await c.load('f');
    assert.deepEqual(fork?.messages.map(text), ['a', 'b', 'c']);
    assert.equal(fork?.seq, 3);
    assert.deepEqual(fork?.extra, { plan: { step: 2 } });
    assert.deepEqual(
      await c.load('p'),
      { messages: ['a', 'b', 'c', 'd', 'e'].map(user), extra: { plan: { step: 2 } }, seq: 5 },
      'the parent is unchanged',
    );
  });

  forkTest('a fork and its parent are independent: appends and saveExtra on one never change the other', async (c) => {
    await c.append('p', ['a', 'b', 'c'].map(user));
    await c.saveExtra('p', { k: 'parent' });
    await c.fork('p', { atSeq: 2, newThreadId: 'f' });
    assert.deepEqual(await c.append('f', [user('f1'), user('f2')], { expectedSeq: 2 }), { seq: 4 });
    assert.deepEqual(await c.append('p', [user('p1')], { expectedSeq: 3 }), { seq: 4 });
    await c.saveExtra('f', { k: 'fork' });
    assert.deepEqual(await c.load('f'), { messages: ['a', 'b', 'f1', 'f2'].map(user), extra: { k: 'fork' }, seq: 4 });
    assert.deepEqual(await c.load('p'), { messages: ['a', 'b', 'c', 'p1'].map(user), extra: { k: 'parent' }, seq: 4 });
    // expectedSeq is the fork's own: its seq starts at atSeq.
    await assert.rejects(c.append('f', [user('stale')], { expectedSeq: 2 }), (e: unknown) => {
      assertConflictError(e, 'f', 2, 4);
      return true;
    });
  });

  forkTest('forks at 0 (an empty thread with the extra) and at seq (the whole thread)', async (c) => {
    await c.append('p', ['a', 'b'].map(user));
    await c.saveExtra('p', { k: 1 });
    assert.deepEqual(await c.fork('p', { atSeq: 0, newThreadId: 'empty' }), { threadId: 'empty', seq: 0 });
    assert.deepEqual(await c.load('empty'), { messages: [], extra: { k: 1 }, seq: 0 });
    assert.deepEqual(await c.fork('p', { atSeq: 2, newThreadId: 'whole' }), { threadId: 'whole', seq: 2 });
    assert.deepEqual((await c.load('whole'))?.messages.map(text), ['a', 'b']);
    // A thread with no messages (saveExtra only) forks at 0.
    await c.saveExtra('bare', { only: true });
    await c.fork('bare', { atSeq: 0, newThreadId: 'bare-fork' });
    assert.deepEqual(await c.load('bare-fork'), { messages: [], extra: { only: true }, seq: 0 });
  });

  forkTest("a fork of a fork loads to any depth, also at a cut-off below its parent's own", async (c) => {
    // A reference model: each thread's expected transcript.
    const expected = new Map<string, string[]>([['t0', ['root-0', 'root-1', 'root-2']]]);
    await c.append('t0', expected.get('t0')!.map(user));
    const depth = 40;
    for (let d = 1; d <= depth; d++) {
      const parent = expected.get(`t${d - 1}`)!;
      // Mostly at the parent's end; every fifth fork cuts below the parent's own cut-off (into a grandparent's rows).
      const atSeq = d % 5 === 0 ? Math.max(0, parent.length - 3) : parent.length - (d % 2);
      await c.fork(`t${d - 1}`, { atSeq, newThreadId: `t${d}` });
      const mine = [...parent.slice(0, atSeq), `own-${d}-a`, `own-${d}-b`];
      await c.append(`t${d}`, [user(`own-${d}-a`), user(`own-${d}-b`)], { expectedSeq: atSeq });
      expected.set(`t${d}`, mine);
    }
    for (const [threadId, messages] of expected) {
      const saved = await c.load(threadId);
      assert.deepEqual(saved?.messages.map(text), messages, `${threadId} loads its own history`);
      assert.equal(saved?.seq, messages.length);
    }
  });

  forkTest("listThreads shows a fork's parent and cut-off, and nothing for a thread that is not a fork", async (c) => {
    await c.append('p', ['a', 'b', 'c'].map(user));
    await c.fork('p', { atSeq: 2, newThreadId: 'f' });
    await c.fork('f', { atSeq: 1, newThreadId: 'ff' });
    await c.append('ff', [user('x')]);
    const listed = await c.listThreads();
    assert.deepEqual(
      listed.map((t) => [t.threadId, t.messageCount, t.parent]),
      [
        ['ff', 2, { threadId: 'f', atSeq: 1 }],
        ['f', 2, { threadId: 'p', atSeq: 2 }],
        ['p', 3, undefined],
      ],
    );
  });

  forkTest('a thread with forks is not deleted: ThreadHasForksError names them and nothing changes', async (c) => {
    await c.append('p', ['a', 'b'].map(user));
    await c.fork('p', { atSeq: 1, newThreadId: 'f1' });
    await c.fork('p', { atSeq: 2, newThreadId: 'f2' });
    await c.fork('f1', { atSeq: 1, newThreadId: 'f1-1' });
    await assert.rejects(c.deleteThread('p'), (error: unknown) => {
      assert.equal(codeOf(error), 'thread_has_forks', `a ThreadHasForksError, got ${String(error)}`);
      const { threadId, forks } = error as { threadId: unknown; forks: unknown };
      assert.deepEqual({ threadId, forks }, { threadId: 'p', forks: ['f1', 'f2'] });
      return true;
    });
    await assert.rejects(c.deleteThread('f1'), (error: unknown) => codeOf(error) === 'thread_has_forks');
    assert.deepEqual((await c.load('p'))?.messages.map(text), ['a', 'b']);
    assert.deepEqual((await c.load('f1-1'))?.messages.map(text), ['a']);
    // Newest first, as listThreads lists them, deletes every fork before its parent.
    for (const info of await c.listThreads()) await c.deleteThread(info.threadId);
    assert.deepEqual(await c.listThreads(), []);
    assert.equal(await c.load('p'), null);
    // The ids are free again, and a new thread under the parent's id shares nothing with the old forks.
    await c.append('p', [user('new')]);
    assert.deepEqual(await c.load('p'), { messages: [user('new')], extra: {}, seq: 1 });
  });

  forkTest('deleting a fork leaves its parent and its siblings whole; the parent can then be deleted', async (c) => {
    await c.append('p', ['a', 'b', 'c'].map(user));
    await c.fork('p', { atSeq: 2, newThreadId: 'f' });
    await c.fork('p', { atSeq: 3, newThreadId: 'g' });
    await c.append('f', [user('fx')]);
    await c.deleteThread('f');
    assert.equal(await c.load('f'), null);
    assert.deepEqual((await c.load('p'))?.messages.map(text), ['a', 'b', 'c']);
    assert.deepEqual((await c.load('g'))?.messages.map(text), ['a', 'b', 'c']);
    await c.deleteThread('g');
    await c.deleteThread('p');
    assert.deepEqual(await c.listThreads(), []);
  });

  forkTest('bad forks are typed errors that write nothing', async (c) => {
    await c.append('p', ['a', 'b'].map(user));
    await c.append('taken', [user('t')]);
    const refused = async (call: Promise<unknown>, code: string, what: string) =>
      assert.rejects(call, (error: unknown) => codeOf(error) === code, what);
    await refused(c.fork('missing', { atSeq: 0, newThreadId: 'n' }), 'invalid_input', 'a missing parent');
    for (const atSeq of [3, -1, 1.5, Number.NaN, '1' as unknown as number]) {
      await refused(c.fork('p', { atSeq, newThreadId: 'n' }), 'invalid_input', `atSeq ${String(atSeq)}`);
    }
    for (const newThreadId of ['', 'a\u0000b', 'x\ud800', undefined as unknown as string]) {
      await refused(c.fork('p', { atSeq: 1, newThreadId }), 'invalid_input', `newThreadId ${String(newThreadId)}`);
    }
    await refused(c.fork('', { atSeq: 0, newThreadId: 'n' }), 'invalid_input', 'an invalid parent id');
    await assert.rejects(c.fork('p', { atSeq: 1, newThreadId: 'taken' }), (error: unknown) => {
      assertConflictError(error, 'taken', 0, 1);
      return true;
    });
    await assert.rejects(c.fork('p', { atSeq: 1, newThreadId: 'p' }), (error: unknown) => {
      assertConflictError(error, 'p', 0, 2);
      return true;
    });
    assert.deepEqual(
      (await c.listThreads()).map((t) => [t.threadId, t.messageCount]),
      [
        ['taken', 1],
        ['p', 2],
      ],
      'nothing was written',
    );
    assert.deepEqual((await c.load('taken'))?.messages.map(text), ['t']);
  });

  forkTest('another handle on the store sees a fork, and forks while the parent grows', async (c, store) => {
    const other = forking(await store.other());
    await c.append('p', [user('m0')]);
    let seq = 1;
    for (let i = 1; i <= 5; i++) {
      const [, forked] = await Promise.all([
        c.append('p', [user(`m${i}`)], { expectedSeq: seq }),
        other.fork('p', { atSeq: seq, newThreadId: `f${i}` }),
      ]);
      assert.deepEqual(forked, { threadId: `f${i}`, seq });
      seq++;
    }
    const all = Array.from({ length: 6 }, (_, i) => `m${i}`);
    for (let i = 1; i <= 5; i++) {
      assert.deepEqual((await c.load(`f${i}`))?.messages.map(text), all.slice(0, i), `f${i} from the first handle`);
    }
    assert.deepEqual((await other.load('p'))?.messages.map(text), all);
  });
}

/** The checkpointer, with a `fork` the cases can call: a backend without one fails them, saying so. */
function forking(checkpointer: Checkpointer): Forking {
  if (typeof checkpointer.fork !== 'function') {
    throw new TypeError(
      'this checkpointer has no fork(); implement it, or pass { fork: false } to checkpointerConformance to declare ' +
        'a backend without forks',
    );
  }
  return checkpointer as Forking;
}
