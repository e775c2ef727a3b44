// A `useChat` front end against a cubepi server, unchanged: the AI SDK's own DefaultChatTransport posts to /chat and
// its own readUIMessageStream reads the answer; its abort (useChat's stop()) cancels the run; its reconnectToStream
// (useChat({ resume: true })) replays the active run.
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { fromAgentEvents, runEventsUrl } from 'cubepi/client';
import { lastValueFrom, toArray } from 'rxjs';
import { agentFactory, ANSWER, serve, type Served } from './serve-helpers.js';

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

  it('refuses what it cannot serve with 400: a regenerate trigger, no user message, an invalid chat id', async () => {
    const factory = agentFactory();
    served = await serve({ agent: factory.agent });
    const post = (body: unknown) =>
      fetch(`${served!.base}/chat`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) }).then(
        (r) => r.status,
      );
    expect(await post({ id: 'c', messages: [userMessage('x')], trigger: 'regenerate-message' })).toBe(400);
    expect(await post({ id: 'c', messages: [] })).toBe(400);
    expect(await post({ id: '', messages: [userMessage('x')] })).toBe(400);
    expect(await post({ id: 'c', messages: [{ id: 'a', role: 'assistant', parts: [] }] })).toBe(400);
    expect(factory.created).toEqual([]);
  });
});
