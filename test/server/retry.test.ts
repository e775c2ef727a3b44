// `POST /threads/:id/retry` on a real SQLite checkpointer: the thread is forked before a message and run from there
// (the edited user message on the fork), the original thread untouched and still served under its id; a seq naming a
// tool result is 400 with nothing forked; another principal's thread is 404.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { AgentServerError, getThread, retryFrom, startRun } from 'cubepi/client';
import { bearerToken } from 'cubepi/server';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { lookup, serve, type Served } from './serve-helpers.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

function text(message: Message | undefined): string {
  if (message === undefined) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

/** While true, new agents stream a long answer slowly (a run to cancel). */
let slow = false;

/** Answers "echo: <the last user text>"; a prompt with "tool" in it first calls `lookup`. */
function provider(): FauxProvider {
  if (slow) {
    return new FauxProvider({ delayMs: 5, chunkSize: 1, responses: [fauxMessage('x'.repeat(5000))] });
  }
  const script = (messages: readonly Message[]) => {
    const last = messages.at(-1);
    const prompt = text(messages.findLast((message) => message.role === 'user'));
    if (last?.role === 'user' && prompt.includes('tool')) return fauxMessage([fauxToolCall('lookup', { word: 'x' })]);
    return fauxMessage(`echo: ${prompt}`);
  };
  return new FauxProvider({ responses: Array.from({ length: 50 }, () => script) });
}

describe('POST /threads/:id/retry', () => {
  let dir = '';
  let checkpointer: SQLiteCheckpointer;
  let served: Served;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cubepi-retry-'));
    checkpointer = new SQLiteCheckpointer(join(dir, 'threads.db'));
    served = await serve({
      agent: (threadId) => new Agent({ provider: provider(), model: 'faux', tools: [lookup], checkpointer, threadId }),
      checkpointer,
      authenticate: bearerToken({ [ALICE]: 'alice', [BOB]: 'bob' }),
    });
    await lastValueFrom(startRun(served.base, 'first', 'hello', { token: ALICE }).pipe(toArray()));
    await lastValueFrom(startRun(served.base, 'first', 'use a tool', { token: ALICE }).pipe(toArray()));
  }, 60_000);

  afterAll(async () => {
    await served.close();
    await checkpointer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('forks before the user message, sends the edited one on the fork, and leaves the original untouched', async () => {
    const before = (await checkpointer.load('first'))!;
    expect(before.messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'toolResult',
      'assistant',
    ]);
    let fork: { runId: string; threadId: string } | undefined;
    const events = await lastValueFrom(
      retryFrom(
        served.base,
        'first',
        { seq: 2, input: 'edited question' },
        { token: ALICE, onFork: (f) => (fork = f) },
      ).pipe(toArray()),
    );
    expect(fork).toBeDefined();
    expect(fork!.threadId).not.toBe('first');
    expect(events.at(-1)?.type).toBe('agent_end');

    const forked = (await checkpointer.load(fork!.threadId))!;
    expect(forked.messages.slice(0, 2)).toEqual(before.messages.slice(0, 2));
    expect(text(forked.messages[2])).toBe('edited question');
    expect(text(forked.messages[3])).toBe('echo: edited question');
    expect(forked.messages).toHaveLength(4);

    const after = (await checkpointer.load('first'))!;
    expect(after.messages).toEqual(before.messages);
    // The server still serves the original under its id (its agent was not moved to the fork).
    const remote = await getThread(served.base, 'first', { token: ALICE });
    expect(remote.messages).toEqual(before.messages);

    const listed = await checkpointer.listThreads();
    expect(listed.find((info) => info.threadId === fork!.threadId)?.parent).toEqual({ threadId: 'first', atSeq: 2 });
    expect(await checkpointer.threadOwner(fork!.threadId)).toBe('alice');
  }, 60_000);

  it('regenerates an assistant message (no input) on a fork', async () => {
    let forkId = '';
    await lastValueFrom(
      retryFrom(served.base, 'first', { seq: 1 }, { token: ALICE, onFork: (f) => (forkId = f.threadId) }).pipe(
        toArray(),
      ),
    );
    const forked = (await checkpointer.load(forkId))!;
    expect(forked.messages.map((message) => text(message))).toEqual(['hello', 'echo: hello']);
  }, 60_000);

  it('refuses a seq that names a tool result with 400, forking nothing', async () => {
    const count = (await checkpointer.listThreads()).length;
    const response = await fetch(`${served.base}/threads/first/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ seq: 4 }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_input');
    expect(await checkpointer.listThreads()).toHaveLength(count);
  });

  it("answers 404 for another principal's thread, forking nothing", async () => {
    const count = (await checkpointer.listThreads()).length;
    const refused = await lastValueFrom(
      retryFrom(served.base, 'first', { seq: 0 }, { token: BOB }).pipe(toArray()),
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AgentServerError);
    expect((refused as AgentServerError).status).toBe(404);
    expect(await checkpointer.listThreads()).toHaveLength(count);
  });

  it("cancels the fork's run on the server when the client unsubscribes", { timeout: 60_000 }, async () => {
    slow = true;
    try {
      let forkId = '';
      const subscription = retryFrom(
        served.base,
        'first',
        { seq: 0, input: 'a long one' },
        {
          token: ALICE,
          onFork: (fork) => (forkId = fork.threadId),
        },
      ).subscribe({ error: () => undefined });
      await expect.poll(() => forkId, { timeout: 30_000 }).not.toBe('');
      // Streaming on the server (the fork holds the prompt), then the client leaves.
      await expect.poll(async () => (await checkpointer.load(forkId))?.messages.length ?? 0).toBeGreaterThan(0);
      subscription.unsubscribe();
      await expect
        .poll(
          async () => {
            const last = (await checkpointer.load(forkId))!.messages.at(-1);
            return last?.role === 'assistant' ? last.stopReason : undefined;
          },
          { timeout: 30_000 },
        )
        .toBe('aborted');
    } finally {
      slow = false;
    }
  });

  it('answers 400 for a body without a seq', async () => {
    const response = await fetch(`${served.base}/threads/first/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'x' }),
    });
    expect(response.status).toBe(400);
  });
});
