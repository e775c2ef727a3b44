// Client-side tools with the AI SDK's own Chat (AbstractChat, as @ai-sdk/react's Chat without React) against a cubepi
// server: the server declares the tool (`clientTool`, the AI SDK's tool without `execute`), the run holds the call,
// the Chat's onToolCall runs it and addToolOutput answers it; sendAutomaticallyWhen
// (lastAssistantMessageIsCompleteWithToolCalls) resends, the held call gets the output as its one result, and the
// resumed run streams as the rest of the same assistant message.
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls, type UIMessage } from 'ai';
import { Agent, clientTool, MemoryCheckpointer, type Message, type ToolResultMessage } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lookup, serve, type Served, NodeChat } from './serve-helpers.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

/**
 * Resolves once `condition()` holds, polling (no fixed sleep: it returns as soon as it is true); `poll` runs before
 * each check (and may end the wait by throwing).
 */
async function until(condition: () => boolean, timeoutMs = 20_000, poll?: () => Promise<void>): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    await poll?.();
    if (condition()) return;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const textOf = (message: UIMessage) => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
const resultText = (message: ToolResultMessage) =>
  message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

const getLocation = clientTool({
  name: 'getLocation',
  description: "The user's city, from the browser",
  parameters: z.object({ precise: z.boolean() }),
});

/** Agents whose model calls `calls` (one step), then answers with what it saw of the tool results. */
function agents(calls: () => ReturnType<typeof fauxToolCall>[]) {
  const checkpointer = new MemoryCheckpointer();
  const seen: Message[][] = [];
  const agent = (threadId: string) =>
    new Agent({
      provider: new FauxProvider({
        responses: [
          fauxMessage(calls()),
          (messages: readonly Message[]) => {
            seen.push([...messages]);
            const results = messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');
            return fauxMessage(`Saw: ${results.map(resultText).join(' | ')}`);
          },
        ],
      }),
      model: 'faux',
      tools: [lookup, getLocation],
      checkpointer,
      threadId,
    });
  return { agent, checkpointer, seen };
}

describe('client-side tools through useChat (AbstractChat)', () => {
  it('onToolCall → addToolOutput → automatic resend: the model sees the output, one result per call', async () => {
    const { agent, checkpointer, seen } = agents(() => [
      fauxToolCall('getLocation', { precise: true }, { id: 'loc1' }),
    ]);
    served = await serve({ agent, flushMs: 0 });
    const toolCalls: { toolName: string; input: unknown }[] = [];
    const chat: NodeChat = new NodeChat({
      id: 'client-1',
      transport: new DefaultChatTransport({ api: `${served.base}/chat` }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        toolCalls.push({ toolName: toolCall.toolName, input: toolCall.input });
        if (toolCall.toolName === 'getLocation') {
          void chat.addToolOutput({ tool: 'getLocation', toolCallId: toolCall.toolCallId, output: { city: 'Paris' } });
        }
      },
    });
    await chat.sendMessage({ text: 'Where am I?' });
    await until(() => chat.status === 'ready' && textOf(chat.messages.at(-1)!).startsWith('Saw:'));
    expect(chat.error).toBeUndefined();
    // Run once, on the held call's input; the resumed stream does not show the call again.
    expect(toolCalls).toEqual([{ toolName: 'getLocation', input: { precise: true } }]);
    expect(chat.messages).toHaveLength(2);
    const answered = chat.messages.at(-1)!;
    expect(textOf(answered)).toBe('Saw: {"city":"Paris"}');
    expect(answered.parts.filter((part) => part.type === 'tool-getLocation')).toEqual([
      expect.objectContaining({ state: 'output-available', toolCallId: 'loc1', output: { city: 'Paris' } }),
    ]);
    // The model's next turn saw the output as the call's result.
    const last = seen[0]!.at(-1) as ToolResultMessage;
    expect([last.role, last.toolCallId, resultText(last)]).toEqual(['toolResult', 'loc1', '{"city":"Paris"}']);
    const stored = (await checkpointer.load('client-1'))!.messages;
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(stored.filter((m) => m.role === 'toolResult').map((m) => m.toolCallId)).toEqual(['loc1']);
  });

  it('a server tool and a client tool in one step: the server runs its own, the client answers the other', async () => {
    const { agent, checkpointer } = agents(() => [
      fauxToolCall('lookup', { word: 'cube' }, { id: 'srv' }),
      fauxToolCall('getLocation', { precise: false }, { id: 'cli' }),
    ]);
    served = await serve({ agent, flushMs: 0 });
    const chat: NodeChat = new NodeChat({
      id: 'client-2',
      transport: new DefaultChatTransport({ api: `${served.base}/chat` }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        if (toolCall.toolName !== 'getLocation') return;
        void chat.addToolOutput({ tool: 'getLocation', toolCallId: toolCall.toolCallId, output: 'Oslo' });
      },
    });
    await chat.sendMessage({ text: 'Define cube, and where am I?' });
    await until(() => chat.status === 'ready' && textOf(chat.messages.at(-1)!).startsWith('Saw:'));
    expect(chat.error).toBeUndefined();
    expect(textOf(chat.messages.at(-1)!)).toBe('Saw: cube: a word | Oslo');
    const stored = (await checkpointer.load('client-2'))!.messages;
    expect(stored.filter((m) => m.role === 'toolResult').map((m) => m.toolCallId)).toEqual(['srv', 'cli']);
  });

  it('addToolOutput with an error: the call gets one error result with the errorText', async () => {
    const { agent, checkpointer } = agents(() => [fauxToolCall('getLocation', { precise: true }, { id: 'loc' })]);
    served = await serve({ agent, flushMs: 0 });
    const chat: NodeChat = new NodeChat({
      id: 'client-3',
      transport: new DefaultChatTransport({ api: `${served.base}/chat` }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) =>
        void chat.addToolOutput({
          state: 'output-error',
          tool: 'getLocation',
          toolCallId: toolCall.toolCallId,
          errorText: 'permission denied',
        }),
    });
    await chat.sendMessage({ text: 'Where am I?' });
    await until(() => chat.status === 'ready' && textOf(chat.messages.at(-1)!).startsWith('Saw:'));
    const results = (await checkpointer.load('client-3'))!.messages.filter(
      (m): m is ToolResultMessage => m.role === 'toolResult',
    );
    expect(results.map((r) => [r.toolCallId, r.isError, resultText(r)])).toEqual([['loc', true, 'permission denied']]);
  });

  it('an output for a call the thread does not hold is refused with 409 stale_approval', async () => {
    const { agent } = agents(() => [fauxToolCall('getLocation', { precise: true }, { id: 'loc' })]);
    served = await serve({ agent, flushMs: 0 });
    const response = await fetch(`${served.base}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'nothing-held',
        trigger: 'submit-message',
        messages: [
          {
            id: 'a1',
            role: 'assistant',
            parts: [
              { type: 'tool-getLocation', toolCallId: 'x', state: 'output-available', input: {}, output: 'Rome' },
            ],
          },
        ],
      }),
    });
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('stale_approval');
  });
});

describe("cubepi's own approvals route and client tools", () => {
  it('POST /threads/:id/approvals/:requestId with { output } answers a held client call; with approve, 400', async () => {
    const { agent, checkpointer } = agents(() => [fauxToolCall('getLocation', { precise: true }, { id: 'loc' })]);
    served = await serve({ agent, flushMs: 0 });
    const started = await fetch(`${served.base}/threads/route-1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Where am I?' }),
    });
    expect(started.status).toBe(201);
    let pending: { requestId: string; clientTool?: boolean }[] = [];
    await until(
      () => pending.length > 0,
      20_000,
      async () => {
        const thread = (await (await fetch(`${served!.base}/threads/route-1`)).json()) as { pending: typeof pending };
        pending = thread.pending;
      },
    );
    expect(pending[0]!.clientTool).toBe(true);
    const url = `${served.base}/threads/route-1/approvals/${encodeURIComponent(pending[0]!.requestId)}`;
    const post = (body: unknown) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ approve: true })).status).toBe(400);
    const answered = await post({ output: 'Lisbon' });
    expect(answered.status).toBe(200);
    let count = 0;
    await until(
      () => count === 4,
      20_000,
      async () => void (count = (await checkpointer.load('route-1'))?.messages.length ?? 0),
    );
    const stored = (await checkpointer.load('route-1'))!.messages;
    expect(stored.filter((m): m is ToolResultMessage => m.role === 'toolResult').map(resultText)).toEqual(['Lisbon']);
  });
});
