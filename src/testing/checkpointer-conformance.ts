/**
 * The `Checkpointer` conformance suite: the contract of `docs/checkpointing.md` as tests any backend can run, under
 * any test runner with `describe` and `it` (vitest, jest, mocha, node:test). It imports no test framework and no
 * `node:` module: its assertions are the kit's own (`./assert.ts`, the rules of `node:assert`'s strict mode), and their
 * errors carry `actual` and `expected` for the runner's diff.
 * @module
 */
import { z } from 'zod';
import { Agent } from '../agent/agent.js';
import { MAX_THREAD_ID_LENGTH } from '../checkpoint/check-arguments.js';
import { ToolGuard } from '../middleware/tool-guard.js';
import { FauxProvider } from '../providers/faux-provider.js';
import { fauxMessage, fauxToolCall } from '../providers/faux-messages.js';
import { defineTool } from '../tools/define-tool.js';
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { serializeMessage, type AssistantMessage, type Message, type UserMessage } from '../types/messages.js';
import { assert } from './assert.js';
import { assertConflict, assertConflictError, codeOf, text, user } from './conformance-helpers.js';
import { forkConformanceTests } from './checkpointer-fork-conformance.js';
import { ownerConformanceTests } from './checkpointer-owner-conformance.js';

/** A backend under test: a checkpointer on an empty store, and how to reach that store again. */
export interface CheckpointerFixture {
  /** The checkpointer under test. Its store must be empty. */
  readonly checkpointer: Checkpointer;
  /**
   * Opens another checkpointer on the same store, as another process would (the same file, a new pool on the same
   * database). Used for "reload after reopening" (the suite then closes `checkpointer` first) and for two writers
   * racing on one thread. Omit it when the backend has no such thing (an in-memory store): those tests then use
   * `checkpointer` itself.
   */
  reopen?(): Checkpointer | Promise<Checkpointer>;
  /**
   * Releases the store (drop the schema, delete the file) after the test. Before it, the suite has closed every
   * checkpointer `reopen` gave it; `checkpointer` may already be closed too. Without it, the suite calls
   * `checkpointer.close?.()`.
   */
  dispose?(): void | Promise<void>;
}

/** Options of {@link checkpointerConformance}. */
export interface CheckpointerConformanceOptions {
  /** The title of the suite (default `Checkpointer conformance`). */
  readonly name?: string | undefined;
  /** The runner's `describe` (default: the global one). */
  readonly describe?: ((name: string, body: () => void) => unknown) | undefined;
  /** The runner's `it` (default: the global one). Called as `it(name, asyncBody)`, or with `timeoutMs` as a third argument. */
  readonly it?: ((name: string, body: () => Promise<void>, timeout?: number) => unknown) | undefined;
  /** A per-test timeout handed to `it` (vitest and jest take it; leave it out for mocha). */
  readonly timeoutMs?: number | undefined;
  /**
   * Whether the backend implements the optional `fork` (default `true`: the fork cases run, and fail on a backend
   * without it). `false` declares a backend without forks: the fork cases are replaced by one that checks `fork` is
   * indeed absent (an `Agent` then refuses `fork()` and `retryFrom()`).
   */
  readonly fork?: boolean | undefined;
  /**
   * Whether the backend implements the optional owners (`claimThread`, `threadOwner`, `listThreads({ owner })`;
   * default `true`). `false` declares a backend without them: the owner cases are replaced by one that checks they
   * are absent (`cubepi/server` then keeps owners in its own memory).
   */
  readonly owners?: boolean | undefined;
}

type Make = () => Checkpointer | CheckpointerFixture | Promise<Checkpointer | CheckpointerFixture>;

interface Store {
  readonly checkpointer: Checkpointer;
  /** Another handle on the store (or the same checkpointer, when the fixture cannot reopen). */
  other(): Promise<Checkpointer>;
  readonly canReopen: boolean;
}

/**
 * Registers the conformance tests of the `Checkpointer` contract for one backend. `make` is called once per test and
 * must give a checkpointer on an **empty** store (a fresh file, schema or table prefix), either as is or as a
 * {@link CheckpointerFixture} that also says how to reopen and dispose of it.
 *
 * Covered: `load` of an unknown thread; append order and `seq`; the stored JSON value (byte-stable, canonical key
 * order, U+0000 and lone surrogates included); empty appends; `expectedSeq` conflicts writing nothing; concurrent
 * appends to different threads and to one thread; two writers on one thread (exactly one wins, nothing duplicated);
 * `extra` replace semantics; `listThreads` order, counts, pagination and cursors that survive deletion; delete;
 * reload after reopening; copies, not aliases; refused writes leaving nothing behind; and `fork` (unless `fork: false`):
 * the shared prefix and copied `extra`, independence of fork and parent, forks at 0 and at `seq`, chains 40 deep with
 * cut-offs below a parent's own, `ThreadInfo.parent`, deleting a parent with forks refused (`ThreadHasForksError`),
 * bad forks refused with typed errors that write nothing, and a fork through another handle while the parent grows;
 * and owners (unless `owners: false`): `claimThread`, `threadOwner`, `listThreads({ owner })`, a fork's owner, racing
 * claims. Errors are recognised by their
 * `code`, so a backend built against another copy of cubepi passes too.
 *
 * @example
 * // vitest (globals off): pass describe and it
 * import { describe, it } from 'vitest';
 * import { checkpointerConformance } from 'cubepi/testing';
 * checkpointerConformance(() => new MyCheckpointer(freshStore()), { name: 'MyCheckpointer', describe, it });
 */
export function checkpointerConformance(make: Make, options: CheckpointerConformanceOptions = {}): void {
  const globals = globalThis as {
    describe?: CheckpointerConformanceOptions['describe'] | undefined;
    it?: CheckpointerConformanceOptions['it'] | undefined;
  };
  const describe = options.describe ?? globals.describe;
  const it = options.it ?? globals.it;
  if (typeof describe !== 'function' || typeof it !== 'function') {
    throw new TypeError('checkpointerConformance needs describe and it: pass them in the options, or enable globals');
  }
  const test = (name: string, body: (store: Store) => Promise<void>) => {
    const run = () => withStore(make, body);
    if (options.timeoutMs === undefined) it(name, run);
    else it(name, run, options.timeoutMs);
  };

  describe(options.name ?? 'Checkpointer conformance', () => {
    test('load of a thread never written is null', async ({ checkpointer }) => {
      assert.equal(await checkpointer.load('never'), null);
    });

    test('append stores messages after the last one and resolves with seq, the number stored', async ({
      checkpointer,
    }) => {
      assert.deepEqual(await checkpointer.append('t', [user('a'), user('b')]), { seq: 2 });
      assert.deepEqual(await checkpointer.append('t', [user('c')]), { seq: 3 });
      assert.deepEqual(await checkpointer.append('t', [user('d'), user('e')], { expectedSeq: 3 }), { seq: 5 });
      const saved = await checkpointer.load('t');
      assert.ok(saved);
      assert.deepEqual(saved.messages.map(text), ['a', 'b', 'c', 'd', 'e']);
      assert.equal(saved.seq, 5);
    });

    test('load returns the JSON value appended, byte-stable, with keys in canonical order', async ({
      checkpointer,
    }) => {
      const written = richMessages();
      await checkpointer.append('t', written);
      const saved = await checkpointer.load('t');
      assert.ok(saved);
      assert.equal(saved.messages.length, written.length);
      for (let i = 0; i < written.length; i++) {
        const expected = serializeMessage(written[i]!);
        assert.equal(serializeMessage(saved.messages[i]!), expected, `message ${i}: same JSON value`);
        assert.equal(JSON.stringify(saved.messages[i]), expected, `message ${i}: keys in canonical order`);
      }
    });

    test('an empty append writes nothing, creates nothing, and still checks expectedSeq', async ({ checkpointer }) => {
      assert.deepEqual(await checkpointer.append('t', []), { seq: 0 });
      assert.equal(await checkpointer.load('t'), null);
      assert.deepEqual(await checkpointer.listThreads(), []);
      await checkpointer.append('t', [user('a'), user('b')]);
      assert.deepEqual(await checkpointer.append('t', [], { expectedSeq: 2 }), { seq: 2 });
      await assertConflict(checkpointer.append('t', [], { expectedSeq: 1 }), 't', 1, 2);
    });

    test('expectedSeq: a match appends; a mismatch rejects with ThreadConflictError and writes nothing', async ({
      checkpointer,
    }) => {
      assert.deepEqual(await checkpointer.append('t', [user('a')], { expectedSeq: 0 }), { seq: 1 });
      assert.deepEqual(await checkpointer.append('t', [user('b')], { expectedSeq: 1 }), { seq: 2 });
      await assertConflict(checkpointer.append('t', [user('stale')], { expectedSeq: 1 }), 't', 1, 2);
      await assertConflict(checkpointer.append('t', [user('ahead')], { expectedSeq: 3 }), 't', 3, 2);
      assert.deepEqual((await checkpointer.load('t'))?.messages.map(text), ['a', 'b']);
      await assertConflict(checkpointer.append('new', [user('x')], { expectedSeq: 2 }), 'new', 2, 0);
      assert.equal(await checkpointer.load('new'), null);
    });

    test('concurrent appends to different threads all land, each thread in its own order', async ({ checkpointer }) => {
      const threads = Array.from({ length: 8 }, (_, i) => `thread-${i}`);
      await Promise.all(
        threads.map(async (threadId) => {
          for (let k = 0; k < 5; k++) {
            const { seq } = await checkpointer.append(threadId, [user(`${threadId}/${k}`)], { expectedSeq: k });
            assert.equal(seq, k + 1);
          }
        }),
      );
      for (const threadId of threads) {
        const saved = await checkpointer.load(threadId);
        assert.deepEqual(
          saved?.messages.map(text),
          [0, 1, 2, 3, 4].map((k) => `${threadId}/${k}`),
        );
      }
    });

    test('concurrent appends to one thread all land, each batch whole and contiguous', async ({ checkpointer }) => {
      const batches = Array.from({ length: 10 }, (_, b) => [0, 1, 2].map((k) => user(`${b}.${k}`)));
      const results = await Promise.all(batches.map((batch) => checkpointer.append('t', batch)));
      assert.deepEqual(
        results.map((r) => r.seq).sort((a, b) => a - b),
        [3, 6, 9, 12, 15, 18, 21, 24, 27, 30],
      );
      const texts = (await checkpointer.load('t'))?.messages.map(text) ?? [];
      assert.equal(texts.length, 30);
      const seen = new Set<string>();
      for (let i = 0; i < 30; i += 3) {
        const b = texts[i]!.split('.')[0]!;
        assert.deepEqual(texts.slice(i, i + 3), [`${b}.0`, `${b}.1`, `${b}.2`], `batch at seq ${i} is whole`);
        assert.ok(!seen.has(b), `batch ${b} stored once`);
        seen.add(b);
      }
    });

    test('two writers on one thread: exactly one wins, the other gets ThreadConflictError, nothing duplicated', async (store) => {
      const a = store.checkpointer;
      const b = await store.other();
      await a.append('t', [user('start')]);
      let transcript = ['start'];
      for (let round = 0; round < 10; round++) {
        const [seenByA, seenByB] = await Promise.all([a.load('t'), b.load('t')]);
        const seq = transcript.length;
        assert.equal(seenByA?.seq, seq);
        assert.equal(seenByB?.seq, seq);
        const fromA = [`a${round}`];
        const fromB = [`b${round}.0`, `b${round}.1`];
        const [resultA, resultB] = await Promise.allSettled([
          a.append('t', fromA.map(user), { expectedSeq: seq }),
          b.append('t', fromB.map(user), { expectedSeq: seq }),
        ]);
        const winners = [resultA, resultB].filter((r) => r.status === 'fulfilled');
        assert.equal(winners.length, 1, `round ${round}: exactly one writer wins`);
        const won = resultA.status === 'fulfilled' ? fromA : fromB;
        const lost = resultA.status === 'fulfilled' ? resultB : resultA;
        assert.equal(lost.status, 'rejected');
        assertConflictError(lost.reason, 't', seq, seq + won.length);
        transcript = [...transcript, ...won];
        assert.deepEqual((await a.load('t'))?.messages.map(text), transcript, `round ${round}: the winner's only`);
      }
    });

    test('saveExtra replaces the record (a key removed is removed) and leaves the messages alone', async ({
      checkpointer,
    }) => {
      await checkpointer.append('t', [user('a')]);
      assert.deepEqual((await checkpointer.load('t'))?.extra, {});
      await checkpointer.saveExtra('t', { plan: { step: 2, done: ['x'] }, mood: 'ok' });
      assert.deepEqual((await checkpointer.load('t'))?.extra, { plan: { step: 2, done: ['x'] }, mood: 'ok' });
      await checkpointer.saveExtra('t', { plan: { step: 3 } });
      const saved = await checkpointer.load('t');
      assert.deepEqual(saved?.extra, { plan: { step: 3 } });
      assert.deepEqual(saved?.messages.map(text), ['a']);
      assert.equal(saved?.seq, 1);
      assert.deepEqual(await checkpointer.append('t', [user('b')], { expectedSeq: 1 }), { seq: 2 });
    });

    test('saveExtra on a new thread creates it with no messages', async ({ checkpointer }) => {
      await checkpointer.saveExtra('t', { k: 1 });
      assert.deepEqual(await checkpointer.load('t'), { messages: [], extra: { k: 1 }, seq: 0 });
      const [info] = await checkpointer.listThreads();
      assert.equal(info?.threadId, 't');
      assert.equal(info?.messageCount, 0);
      assert.deepEqual(await checkpointer.append('t', [user('a')], { expectedSeq: 0 }), { seq: 1 });
    });

    test('listThreads lists newest first, with message counts and timestamps', async ({ checkpointer }) => {
      assert.deepEqual(await checkpointer.listThreads(), []);
      for (let i = 1; i <= 5; i++) {
        await checkpointer.append(
          `t${i}`,
          Array.from({ length: i }, (_, k) => user(`${k}`)),
        );
      }
      const before = await checkpointer.listThreads();
      assert.deepEqual(
        before.map((t) => [t.threadId, t.messageCount]),
        [
          ['t5', 5],
          ['t4', 4],
          ['t3', 3],
          ['t2', 2],
          ['t1', 1],
        ],
      );
      for (const info of before) {
        assert.ok(Number.isFinite(info.createdAt) && info.createdAt > 0, 'createdAt is a time in ms');
        assert.ok(info.updatedAt >= info.createdAt, 'updatedAt is not before createdAt');
        assert.equal(typeof info.cursor, 'string');
      }
      // Writing an old thread changes its count and updatedAt, not its place: the order is creation order.
      await checkpointer.append('t1', [user('late')]);
      const after = await checkpointer.listThreads();
      assert.deepEqual(
        after.map((t) => t.threadId),
        ['t5', 't4', 't3', 't2', 't1'],
      );
      const t1 = after.find((t) => t.threadId === 't1')!;
      assert.equal(t1.messageCount, 2);
      assert.ok(t1.updatedAt >= before.find((t) => t.threadId === 't1')!.updatedAt);
    });

    test('listThreads pages with limit and the cursor of the last thread, each thread exactly once', async ({
      checkpointer,
    }) => {
      for (let i = 1; i <= 5; i++) await checkpointer.append(`t${i}`, [user('x')]);
      const pages: string[][] = [];
      let after: string | undefined;
      for (;;) {
        const page = await checkpointer.listThreads(after === undefined ? { limit: 2 } : { limit: 2, after });
        assert.ok(page.length <= 2, 'a page holds at most limit threads');
        if (page.length === 0) break;
        pages.push(page.map((t) => t.threadId));
        after = page[page.length - 1]!.cursor;
        assert.ok(pages.length <= 5, 'pagination ends');
      }
      assert.deepEqual(pages, [['t5', 't4'], ['t3', 't2'], ['t1']]);
    });

    test('a cursor stays valid when its thread is deleted (a loop may delete what it lists)', async ({
      checkpointer,
    }) => {
      for (let i = 1; i <= 5; i++) await checkpointer.append(`t${i}`, [user('x')]);
      const deleted: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await checkpointer.listThreads(after === undefined ? { limit: 2 } : { limit: 2, after });
        if (page.length === 0) break;
        for (const info of page) {
          await checkpointer.deleteThread(info.threadId);
          deleted.push(info.threadId);
        }
        after = page[page.length - 1]!.cursor;
        assert.ok(deleted.length <= 5, 'pagination ends');
      }
      assert.deepEqual(deleted, ['t5', 't4', 't3', 't2', 't1']);
      assert.deepEqual(await checkpointer.listThreads(), []);
    });

    test('listThreads rejects a limit that is not a positive integer', async ({ checkpointer }) => {
      for (const limit of [0, -1, 1.5]) {
        await assert.rejects(checkpointer.listThreads({ limit }), `limit ${limit} is refused`);
      }
    });

    test('deleteThread removes the thread and only it; its id then starts again from seq 0', async ({
      checkpointer,
    }) => {
      await checkpointer.append('gone', [user('a'), user('b')]);
      await checkpointer.saveExtra('gone', { k: 1 });
      await checkpointer.append('kept', [user('c')]);
      await checkpointer.deleteThread('gone');
      assert.equal(await checkpointer.load('gone'), null);
      assert.deepEqual(
        (await checkpointer.listThreads()).map((t) => t.threadId),
        ['kept'],
      );
      assert.deepEqual((await checkpointer.load('kept'))?.messages.map(text), ['c']);
      await assertConflict(checkpointer.append('gone', [user('x')], { expectedSeq: 2 }), 'gone', 2, 0);
      assert.deepEqual(await checkpointer.append('gone', [user('new')], { expectedSeq: 0 }), { seq: 1 });
      assert.deepEqual(await checkpointer.load('gone'), { messages: [user('new')], extra: {}, seq: 1 });
      await checkpointer.deleteThread('never-was');
    });

    test('a reopened store loads what was written (where the backend can reopen)', async (store) => {
      const written = richMessages();
      await store.checkpointer.append('t', written);
      await store.checkpointer.saveExtra('t', { k: [1, 2] });
      if (store.canReopen) await store.checkpointer.close?.();
      const reopened = await store.other();
      const saved = await reopened.load('t');
      assert.ok(saved);
      assert.deepEqual(saved.messages.map(serializeMessage), written.map(serializeMessage));
      assert.deepEqual(saved.extra, { k: [1, 2] });
      assert.equal(saved.seq, written.length);
      assert.deepEqual(await reopened.append('t', [user('more')], { expectedSeq: written.length }), {
        seq: written.length + 1,
      });
    });

    test('what load returns and what append and saveExtra were given are copies, not the store', async ({
      checkpointer,
    }) => {
      const content = [{ type: 'text' as const, text: 'original' }];
      const message: UserMessage = { role: 'user', content, timestamp: 1 };
      const batch: Message[] = [message];
      const extra = { list: [1] };
      await checkpointer.append('t', batch);
      await checkpointer.saveExtra('t', extra);
      // Change what was given…
      content[0]!.text = 'changed';
      content.push({ type: 'text', text: 'added' });
      batch.push(user('pushed'));
      extra.list.push(2);
      const first = await checkpointer.load('t');
      assert.deepEqual(first, {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'original' }], timestamp: 1 }],
        extra: { list: [1] },
        seq: 1,
      });
      // …and what was loaded.
      (first.messages[0] as { content: { text: string }[] }).content[0]!.text = 'mutated';
      first.messages.push(user('pushed'));
      first.extra.list.push(3);
      assert.deepEqual(await checkpointer.load('t'), {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'original' }], timestamp: 1 }],
        extra: { list: [1] },
        seq: 1,
      });
    });

    test('a message that cannot be serialised is refused, and nothing of its batch is written', async ({
      checkpointer,
    }) => {
      const bad = { ...user('bad'), metadata: { big: BigInt(1) } } as unknown as Message;
      await assert.rejects(checkpointer.append('t', [user('ok'), bad]));
      assert.equal(await checkpointer.load('t'), null);
      await checkpointer.append('t', [user('a')]);
      await assert.rejects(checkpointer.append('t', [user('ok'), bad], { expectedSeq: 1 }));
      assert.deepEqual((await checkpointer.load('t'))?.messages.map(text), ['a']);
      assert.deepEqual(await checkpointer.append('t', [user('b')], { expectedSeq: 1 }), { seq: 2 });
    });

    test('a thread id that is empty, too long, not well-formed or has U+0000 is refused before any I/O', async ({
      checkpointer,
    }) => {
      const bad: unknown[] = [
        '',
        'x'.repeat(MAX_THREAD_ID_LENGTH + 1),
        'user-\ud800',
        'user-\udfff',
        '\udc00\ud800',
        'a\u0000b',
        undefined,
        null,
        42,
        { toString: () => 't' },
      ];
      for (const id of bad) {
        for (const call of [
          () => checkpointer.load(id as string),
          () => checkpointer.append(id as string, [user('a')]),
          () => checkpointer.saveExtra(id as string, { k: 1 }),
          () => checkpointer.deleteThread(id as string),
        ]) {
          await assert.rejects(call(), (error: unknown) => codeOf(error) === 'invalid_input', `id ${String(id)}`);
        }
      }
      assert.deepEqual(await checkpointer.listThreads(), [], 'nothing was written');
    });

    test('a run suspended for approval is stored: another handle restores its requests, answers and completes it', async (store) => {
      const { checkpointer } = store;
      const ran: string[] = [];
      const agentOn = (store: Checkpointer, responses: Parameters<FauxProvider['setResponses']>[0]) =>
        new Agent({
          provider: new FauxProvider({ responses }),
          model: 'faux',
          tools: [
            defineTool({
              name: 'pay',
              description: 'pays',
              parameters: z.object({ amount: z.number() }),
              execute: (_id, { amount }) => (ran.push(`pay ${amount}`), `paid ${amount}`),
            }),
          ],
          middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['pay'] }) })],
          checkpointer: store,
          threadId: 'approvals',
        });
      const first = agentOn(checkpointer, [fauxMessage([fauxToolCall('pay', { amount: 5 }, { id: 'c1' })])]);
      await first.prompt('pay 5');
      assert.equal(first.pending.length, 1);
      assert.deepEqual(ran, []);

      const second = agentOn(await store.other(), [fauxMessage('paid')]);
      await second.restore();
      assert.deepEqual(
        second.pending.map((r) => [r.toolCallId, r.toolName, r.args]),
        [['c1', 'pay', { amount: 5 }]],
        'the pending request is restored from the store',
      );
      const added = await second.respond(second.pending[0]!.requestId, { approve: true });
      assert.deepEqual(ran, ['pay 5']);
      assert.equal(added.at(-1)?.role, 'assistant');
      const stored = await checkpointer.load('approvals');
      assert.ok(stored);
      assert.deepEqual(
        stored.messages.map((m) => m.role),
        ['user', 'assistant', 'toolResult', 'assistant'],
      );
      assert.equal(stored.extra['cubepi:approvals'], undefined, 'the answered batch is cleared');
    });

    test('thread ids are kept exactly: distinct ids never share a thread, and listThreads returns them as written', async ({
      checkpointer,
    }) => {
      const ids = [
        'x'.repeat(MAX_THREAD_ID_LENGTH),
        'caf\u00e9', // NFC
        'cafe\u0301', // NFD: the same text to a person, another id
        'emoji-\ud83d\ude00',
        'emoji-\ud83d\ude01',
        'space and\ttab\nnewline',
        'quote\'"back\\slash',
        '%_*?[]',
        '\u202eright-to-left',
        'CASE',
        'case',
      ];
      for (let i = 0; i < ids.length; i++) await checkpointer.append(ids[i]!, [user(`m${i}`)]);
      for (let i = 0; i < ids.length; i++) {
        assert.deepEqual((await checkpointer.load(ids[i]!))?.messages.map(text), [`m${i}`], `id #${i}`);
      }
      const listed = (await checkpointer.listThreads({ limit: 1000 })).map((info) => info.threadId);
      assert.deepEqual([...listed].sort(), [...ids].sort(), 'listThreads returns every id unaltered');
      for (const id of listed) await checkpointer.deleteThread(id);
      assert.deepEqual(await checkpointer.listThreads(), [], 'deleting what was listed leaves nothing');
    });

    if (options.fork === false) {
      test('fork: declared absent ({ fork: false }), and absent', async ({ checkpointer }) => {
        assert.equal(typeof checkpointer.fork, 'undefined', 'the backend has fork(): drop { fork: false }');
      });
    } else {
      forkConformanceTests(test);
    }
    if (options.owners === false) {
      test('owners: declared absent ({ owners: false }), and absent', async ({ checkpointer }) => {
        assert.equal(
          typeof checkpointer.claimThread,
          'undefined',
          'the backend has claimThread(): drop { owners: false }',
        );
        assert.equal(
          typeof checkpointer.threadOwner,
          'undefined',
          'the backend has threadOwner(): drop { owners: false }',
        );
      });
    } else {
      ownerConformanceTests(test);
    }
  });
}

async function withStore(make: Make, body: (store: Store) => Promise<void>): Promise<void> {
  const made = await make();
  const fixture: CheckpointerFixture = isCheckpointer(made) ? { checkpointer: made } : made;
  const reopened: Checkpointer[] = [];
  const reopen = fixture.reopen?.bind(fixture);
  const store: Store = {
    checkpointer: fixture.checkpointer,
    canReopen: reopen !== undefined,
    other: async () => {
      if (reopen === undefined) return fixture.checkpointer;
      const handle = await reopen();
      reopened.push(handle);
      return handle;
    },
  };
  try {
    await body(store);
  } finally {
    for (const handle of reopened) await handle.close?.();
    if (fixture.dispose !== undefined) await fixture.dispose();
    else await fixture.checkpointer.close?.();
  }
}

function isCheckpointer(value: Checkpointer | CheckpointerFixture): value is Checkpointer {
  return typeof (value as Checkpointer).load === 'function';
}

/** Messages of every kind, with what tends to break stores: unsorted keys, unicode, U+0000, lone surrogates. */
function richMessages(): Message[] {
  const usage = {
    output: 7,
    input: 12,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    totalTokens: 19,
    cost: { total: 0.5, input: 0.25, output: 0.25, cacheRead: 0, cacheWrite: 0 },
  };
  // `responseId: undefined` on purpose: a field set to undefined is dropped by every store, as JSON drops it.
  const assistant = {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'hmm', signature: 'sig==' },
      { type: 'text', text: 'Looking up 🌍 «Zürich»' },
      {
        type: 'toolCall',
        id: 'call_1',
        name: 'search',
        arguments: { zeta: 1, alpha: { y: [3, 1.5, -2e-7], x: null } },
      },
    ],
    stopReason: 'toolUse',
    usage,
    provider: 'faux',
    model: 'faux-1',
    responseId: undefined,
    timestamp: 1_700_000_000_001,
  } as unknown as AssistantMessage;
  return [
    { role: 'user', content: 'plain', timestamp: 1_700_000_000_000, metadata: { b: 1, a: 'x' } },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'with a NUL \u0000 and a lone surrogate \ud800 and "quotes" \\ backslash' },
        { type: 'image', data: 'aGVsbG8=', mimeType: 'image/png' },
      ],
      timestamp: 1_700_000_000_000,
    },
    assistant,
    {
      role: 'toolResult',
      toolCallId: 'call_1',
      toolName: 'search',
      content: [{ type: 'text', text: 'line 1\nline 2\ttab' }],
      details: { rows: [{ b: 2, a: 1 }], total: 1e21, empty: {}, nothing: [] },
      isError: false,
      timestamp: 1_700_000_000_002,
    },
  ];
}
