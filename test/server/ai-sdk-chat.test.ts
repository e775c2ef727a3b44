// A `useChat` front end against a cubepi server, unchanged: the AI SDK's own DefaultChatTransport posts to /chat and
// its own readUIMessageStream reads the answer; its abort (useChat's stop()) cancels the run; its reconnectToStream
// (useChat({ resume: true })) replays the active run. And the `ai` package's own Chat (AbstractChat, as
// @ai-sdk/react's Chat without React) to the end: regenerate(), and addToolApprovalResponse with sendAutomaticallyWhen.
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import { Agent, MemoryCheckpointer, ToolGuard, type Message } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { fromAgentEvents, runEventsUrl } from 'cubepi/client';
import { lastValueFrom, toArray } from 'rxjs';
import { agentFactory, ANSWER, lookup, serve, type Served, NodeChat } from './serve-helpers.js';

const JSON_TYPE = { 'content-type': 'application/json' };

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const userMessage = (text: string): UIMessage => ({ id: 'u1', role: 'user', parts: [{ type: 'text', text }] });

async function lastMessage(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) last = message;
  return last!;
}

const textOf = (message: UIMessage) => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

describe("the AI SDK's chat transport against POST /chat", () => {
  it('gets the answer as one UI message: the tool call with its output, then the text', async () => {
    served = await serve({ agent: agentFactory().agent, flushMs: 0 });
    const transport = new DefaultChatTransport({ api: `${served.base}/chat` });
    const stream = await transport.sendMessages({
      chatId: 'chat-1',
      messages: [userMessage('Define cube')],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const message = await lastMessage(stream);
    expect(message.role).toBe('assistant');
    const tool = message.parts.find((part) => part.type === 'tool-lookup');
    expect(tool).toMatchObject({ state: 'output-available', input: { word: 'cube' } });
    expect(textOf(message)).toContain(ANSWER);
    // The thread is stored on the server under the chat id.
    const stored = (await (await fetch(`${served.base}/threads/chat-1`)).json()) as { messages: unknown[] };
    expect(stored.messages).toHaveLength(4); // the prompt, the tool call, its result, the answer
  });

  it("aborting the request (useChat's stop) cancels the run on the server", async () => {
    served = await serve({ agent: agentFactory({}, 2, 10).agent, flushMs: 0 });
    const transport = new DefaultChatTransport({ api: `${served.base}/chat` });
    const abort = new AbortController();
    const stream = await transport.sendMessages({
      chatId: 'chat-2',
      messages: [userMessage('Define cube')],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: abort.signal,
    });
    const reader = stream.getReader();
    let runId: string | undefined; // the UI message's id is the run's
    for (;;) {
      const { value } = await reader.read();
      if (value?.type === 'start') runId = value.messageId;
      if (value?.type === 'text-delta') break;
    }
    abort.abort();
    await reader.cancel().catch(() => undefined);
    const events = await lastValueFrom(fromAgentEvents(runEventsUrl(served.base, runId!)).pipe(toArray()));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
  });

  it('reconnectToStream replays the active run from its start, and answers 204 when there is none', async () => {
    served = await serve({ agent: agentFactory({}, 1, 40).agent, flushMs: 0 });
    const transport = new DefaultChatTransport({ api: `${served.base}/chat` });
    expect(await transport.reconnectToStream({ chatId: 'chat-3' })).toBeNull();
    const first = await transport.sendMessages({
      chatId: 'chat-3',
      messages: [userMessage('Define cube')],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const resumed = await transport.reconnectToStream({ chatId: 'chat-3' });
    expect(resumed).not.toBeNull();
    const [a, b] = await Promise.all([lastMessage(first), lastMessage(resumed!)]);
    expect(textOf(b)).toBe(textOf(a));
    expect(textOf(b)).toContain(ANSWER);
  });

  it('refuses what it cannot serve with 400: another trigger, no user message, an invalid chat id', async () => {
    const factory = agentFactory();
    served = await serve({ agent: factory.agent });
    const post = (body: unknown) =>
      fetch(`${served!.base}/chat`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) }).then(
        (r) => r.status,
      );
    expect(await post({ id: 'c', messages: [userMessage('x')], trigger: 'resume-stream' })).toBe(400);
    expect(await post({ id: 'c', messages: [] })).toBe(400);
    expect(await post({ id: '', messages: [userMessage('x')] })).toBe(400);
    expect(await post({ id: 'c', messages: [{ id: 'a', role: 'assistant', parts: [] }] })).toBe(400);
    expect(factory.created).toEqual([]);
  });
});

/** Resolves once `condition()` holds, polling (no fixed sleep: it returns as soon as it is true). */
async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const storedMessages = async (base: string, threadId: string) =>
  ((await (await fetch(`${base}/threads/${threadId}`)).json()) as { messages: { role: string }[] }).messages;

describe("the AI SDK's Chat to the end: regenerate and approvals", () => {
  it('regenerate() answers the last prompt again, on a fork the chat id then serves', async () => {
    // A model that can answer three times: the prompt, the regenerate, the next prompt (each a tool call, then text).
    const checkpointer = new MemoryCheckpointer();
    const created: string[] = [];
    const answer = (messages: readonly Message[]) => fauxMessage(`${ANSWER}(${messages.length} messages)`);
    const call = fauxMessage([fauxToolCall('lookup', { word: 'cube' })]);
    const agent = (threadId: string) => {
      created.push(threadId);
      const responses = [call, answer, call, answer, call, answer];
      return new Agent({
        provider: new FauxProvider({ responses }),
        model: 'faux',
        tools: [lookup],
        checkpointer,
        threadId,
      });
    };
    served = await serve({ agent, flushMs: 0 });
    const chat = new NodeChat({ id: 'regen-1', transport: new DefaultChatTransport({ api: `${served.base}/chat` }) });
    await chat.sendMessage({ text: 'Define cube' });
    expect(chat.status).toBe('ready');
    const first = chat.messages.at(-1)!;
    expect(textOf(first)).toContain(`${ANSWER}(3 messages)`);

    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(2);
    const again = chat.messages.at(-1)!;
    expect(again.role).toBe('assistant');
    expect(again.id).not.toBe(first.id); // a new run
    // The scripted model calls the tool again, then answers on the same history as the first time.
    expect(again.parts.find((part) => part.type === 'tool-lookup')).toMatchObject({ state: 'output-available' });
    expect(textOf(again)).toContain(`${ANSWER}(3 messages)`);
    // The chat id serves the fork: one prompt and one answer, not two; the original thread is unchanged.
    expect(await storedMessages(served.base, 'regen-1')).toHaveLength(4);
    expect((await checkpointer.load('regen-1'))!.messages).toHaveLength(4);
    expect(created).toEqual(['regen-1']); // one agent, moved to the fork

    // The next prompt goes on the fork.
    await chat.sendMessage({ text: 'And sphere?' });
    expect(chat.error).toBeUndefined();
    expect(await storedMessages(served.base, 'regen-1')).toHaveLength(8);
  });

  it('after a regenerate, an agent made again for the chat (evicted) is made for the fork', async () => {
    const checkpointer = new MemoryCheckpointer();
    const created: string[] = [];
    const answer = (messages: readonly Message[]) => fauxMessage(`answer to ${messages.length}`);
    const agent = (threadId: string) => {
      created.push(threadId);
      return new Agent({
        provider: new FauxProvider({ responses: [answer, answer] }),
        model: 'faux',
        checkpointer,
        threadId,
      });
    };
    served = await serve({ agent, flushMs: 0, maxAgents: 1 });
    const transport = new DefaultChatTransport({ api: `${served.base}/chat` });
    const chat = new NodeChat({ id: 'evict-1', transport });
    await chat.sendMessage({ text: 'one' });
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    const other = new NodeChat({ id: 'evict-2', transport });
    await other.sendMessage({ text: 'two' }); // evicts the agent of evict-1 (maxAgents: 1)
    expect(created).toHaveLength(2);
    const stored = (await (await fetch(`${served.base}/threads/evict-1`)).json()) as { messages: unknown[] };
    expect(created).toHaveLength(3);
    expect(created[2]).not.toBe('evict-1'); // the fork's id
    expect((await checkpointer.load(created[2]!))!.messages).toHaveLength(2);
    expect(stored.messages).toHaveLength(2);
  });

  it('regenerate on a thread with no answer to retry is 409 and runs nothing', async () => {
    served = await serve({ agent: agentFactory().agent });
    const response = await fetch(`${served.base}/chat`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ id: 'empty', messages: [], trigger: 'regenerate-message' }),
    });
    expect(response.status).toBe(409);
  });

  it('addToolApprovalResponse with sendAutomaticallyWhen answers the held call and streams the resumed run', async () => {
    const factory = agentFactory({ middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })] });
    served = await serve({ agent: factory.agent, flushMs: 0 });
    const chat = new NodeChat({
      id: 'approve-1',
      transport: new DefaultChatTransport({ api: `${served.base}/chat` }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: 'Define cube' });
    const held = chat.messages.at(-1)!.parts.find((part) => part.type === 'tool-lookup') as {
      state: string;
      approval?: { id: string };
    };
    expect(held).toMatchObject({ state: 'approval-requested' });

    await chat.addToolApprovalResponse({ id: held.approval!.id, approved: true });
    await until(() => chat.status === 'ready' && textOf(chat.messages.at(-1)!).includes(ANSWER));
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(2); // the resumed run goes on in the assistant message that asked
    const answered = chat.messages.at(-1)!;
    expect(answered.parts.find((part) => part.type === 'tool-lookup')).toMatchObject({
      state: 'output-available',
      output: { content: [{ type: 'text', text: 'cube: a word' }] },
    });
    const stored = await storedMessages(served.base, 'approve-1');
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
  });

  it("a denial reaches the model as the call's denial, with the reason", async () => {
    const factory = agentFactory({ middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['lookup'] }) })] });
    served = await serve({ agent: factory.agent, flushMs: 0 });
    const chat = new NodeChat({
      id: 'deny-1',
      transport: new DefaultChatTransport({ api: `${served.base}/chat` }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: 'Define cube' });
    const held = chat.messages.at(-1)!.parts.find((part) => part.type === 'tool-lookup') as {
      approval?: { id: string };
    };
    await chat.addToolApprovalResponse({ id: held.approval!.id, approved: false, reason: 'not today' });
    await until(() => chat.status === 'ready' && textOf(chat.messages.at(-1)!).includes(ANSWER));
    expect(chat.messages.at(-1)!.parts.find((part) => part.type === 'tool-lookup')).toMatchObject({
      state: 'output-denied',
    });
    const stored = (await storedMessages(served.base, 'deny-1')) as { role: string; content?: unknown }[];
    expect(JSON.stringify(stored[2])).toContain('not today');
  });

  it('answers to requests no longer pending are 409 stale_approval', async () => {
    served = await serve({ agent: agentFactory().agent });
    const response = await fetch(`${served.base}/chat`, {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({
        id: 'stale-1',
        trigger: 'submit-message',
        messages: [
          userMessage('x'),
          {
            id: 'a1',
            role: 'assistant',
            parts: [
              {
                type: 'tool-lookup',
                toolCallId: 'c1',
                state: 'approval-responded',
                input: {},
                approval: { id: 'gone', approved: true },
              },
            ],
          },
        ],
      }),
    });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ error: { code: 'stale_approval' } });
  });
});
