// A chat regenerated on one server keeps serving its fork on a new server over the same SQLite file: the chat id →
// fork mapping is stored with the original thread (`cubepi:head`), not only in the first process's memory. Driven
// with the `ai` package's own Chat (AbstractChat, as @ai-sdk/react's Chat without React) and DefaultChatTransport.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultChatTransport } from 'ai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Agent, MemoryCheckpointer, type Message } from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { getThread } from 'cubepi/client';
import { FauxProvider, fauxMessage } from 'cubepi/testing';
import { serve, type Served, NodeChat } from './serve-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'cubepi-chat-head-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opened: { served: Served; checkpointer: SQLiteCheckpointer | undefined }[] = [];
afterEach(async () => {
  for (const { served, checkpointer } of opened.splice(0)) {
    await served.close();
    await checkpointer?.close();
  }
});

/** Every answer of every model in the file is numbered, so each stored answer says which request made it. */
let answers = 0;
const textOf = (message: Message) =>
  message.role === 'assistant' ? message.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';

/** A server (its `checkpointer` option set: the registry reads and writes the mapping through it) on `file`. */
async function serveOn(file: string) {
  const checkpointer = new SQLiteCheckpointer(file);
  const created: string[] = [];
  const served = await serve({
    checkpointer,
    flushMs: 0,
    agent: (threadId) => {
      created.push(threadId);
      return new Agent({
        provider: new FauxProvider({
          responses: Array.from({ length: 4 }, () => () => fauxMessage(`answer ${++answers}`)),
        }),
        model: 'faux',
        checkpointer,
        threadId,
      });
    },
  });
  opened.push({ served, checkpointer });
  return { served, checkpointer, created };
}

describe('the chat id → fork map stored with the thread', () => {
  it('a new server on the same file serves the fork for the chat id: its thread, its stream route, its next prompt', async () => {
    const file = join(dir, 'restart.db');
    answers = 0;
    const first = await serveOn(file);
    const chat = new NodeChat({
      id: 'chat-r',
      transport: new DefaultChatTransport({ api: `${first.served.base}/chat` }),
    });
    await chat.sendMessage({ text: 'one' });
    await chat.regenerate(); // chat-r → fork 1
    await chat.regenerate(); // fork 1 → fork 2 (a fork of the fork)
    expect(chat.error).toBeUndefined();
    expect(first.created).toEqual(['chat-r']); // one agent, moved twice
    const forks = (await first.checkpointer.listThreads()).filter((t) => t.parent !== undefined);
    expect(forks).toHaveLength(2);
    const fork1 = forks.find((t) => t.parent!.threadId === 'chat-r')!.threadId;
    const fork2 = forks.find((t) => t.parent!.threadId === fork1)!.threadId;
    const original = (await first.checkpointer.load('chat-r'))!;
    expect(original.messages.map(textOf)).toEqual(['', 'answer 1']);
    expect((await first.checkpointer.load(fork2))!.messages.map(textOf)).toEqual(['', 'answer 3']);
    // The first process stops; a second one opens the same file.
    await first.served.close();
    await first.checkpointer.close();
    opened.splice(0);

    const second = await serveOn(file);
    // GET /chat/:id/stream opens the chat's thread: the agent is made for the newest fork (and nothing is active).
    const resume = await fetch(`${second.served.base}/chat/chat-r/stream`);
    expect(resume.status).toBe(204);
    expect(second.created).toEqual([fork2]);
    // The thread the chat shows is the fork's.
    expect((await getThread(second.served.base, 'chat-r')).messages.map(textOf)).toEqual(['', 'answer 3']);
    // The next prompt goes on the fork.
    const again = new NodeChat({
      id: 'chat-r',
      transport: new DefaultChatTransport({ api: `${second.served.base}/chat` }),
    });
    await again.sendMessage({ text: 'two' });
    expect(again.error).toBeUndefined();
    expect((await second.checkpointer.load(fork2))!.messages.map(textOf)).toEqual(['', 'answer 3', '', 'answer 4']);
    expect((await getThread(second.served.base, 'chat-r')).messages).toHaveLength(4);
    expect(second.created).toEqual([fork2]);
    // The original thread's messages are unchanged (its extra holds the mapping), and so is the first fork.
    const after = (await second.checkpointer.load('chat-r'))!;
    expect(after.messages).toEqual(original.messages);
    expect(after.seq).toBe(original.seq);
    expect(after.extra['cubepi:head']).toEqual({ of: 'chat-r', threadId: fork2 });
    expect((await second.checkpointer.load(fork1))!.messages.map(textOf)).toEqual(['', 'answer 2']);
  });

  it('a fork of the original thread (which copies its extra) does not inherit the mapping', async () => {
    const file = join(dir, 'copy.db');
    answers = 0;
    const first = await serveOn(file);
    const chat = new NodeChat({
      id: 'chat-c',
      transport: new DefaultChatTransport({ api: `${first.served.base}/chat` }),
    });
    await chat.sendMessage({ text: 'one' });
    await chat.regenerate();
    await first.checkpointer.fork('chat-c', { atSeq: 2, newThreadId: 'copy-of-c' });
    expect((await first.checkpointer.load('copy-of-c'))!.extra['cubepi:head']).toBeDefined();
    // The copy serves itself: its thread is its own two messages, and its agent is made for it.
    expect((await getThread(first.served.base, 'copy-of-c')).messages.map(textOf)).toEqual(['', 'answer 1']);
    expect(first.created).toEqual(['chat-c', 'copy-of-c']);
  });

  it('without the server checkpointer option the mapping stays in memory and nothing is written', async () => {
    const checkpointer = new MemoryCheckpointer();
    const served = await serve({
      flushMs: 0,
      agent: (threadId) =>
        new Agent({
          provider: new FauxProvider({ responses: [fauxMessage('a'), fauxMessage('b')] }),
          model: 'faux',
          checkpointer,
          threadId,
        }),
    });
    opened.push({ served, checkpointer: undefined });
    const chat = new NodeChat({ id: 'chat-m', transport: new DefaultChatTransport({ api: `${served.base}/chat` }) });
    await chat.sendMessage({ text: 'one' });
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect((await checkpointer.load('chat-m'))!.extra['cubepi:head']).toBeUndefined();
    expect((await getThread(served.base, 'chat-m')).messages.map(textOf)).toEqual(['', 'b']);
  });
});
