// A cubepi agent server on a loopback port for tests: SSE through `toNodeListener`, WebSocket through
// `attachWebSocket`, agents scripted with the FauxProvider.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AbstractChat, type ChatState, type UIMessage } from 'ai';
import { z } from 'zod';
import { Agent, defineTool, MemoryCheckpointer, type AgentOptions, type Message } from 'cubepi';
import {
  attachWebSocket,
  createAgentServer,
  toNodeListener,
  type AgentServer,
  type AgentServerOptions,
} from 'cubepi/server';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

export interface Served {
  readonly base: string;
  readonly server: AgentServer;
  readonly http: Server;
  close(): Promise<void>;
}

/** Serves `options` on 127.0.0.1:0, with WebSocket. */
export async function serve(options: AgentServerOptions): Promise<Served> {
  const server = createAgentServer(options);
  const http = createServer(toNodeListener(server));
  await attachWebSocket(http, server);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    server,
    http,
    close: async () => {
      server.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** A tool that answers after a short wait, honouring its signal. */
export const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a word up',
  parameters: z.object({ word: z.string() }),
  execute: async (_id, { word }, { signal }) => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, 5);
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason as Error)), { once: true });
    });
    return { content: [{ type: 'text', text: `${word}: a word` }] };
  },
});

/** The long answer the scripted model streams (multi-byte characters included, so a cut can split one). */
export const ANSWER = Array.from({ length: 120 }, (_, i) => `Satz ${i} — ünïcödé ✓ `).join('');

/** A scripted model: one tool call, then {@link ANSWER} in `chunkSize`-character chunks, `delayMs` apart. */
export function scriptedProvider(delayMs = 0, chunkSize = 3): FauxProvider {
  return new FauxProvider({
    delayMs,
    chunkSize,
    responses: [
      fauxMessage([fauxToolCall('lookup', { word: 'cube' })]),
      (messages: readonly Message[]) => fauxMessage(`${ANSWER}(${messages.length} messages)`),
    ],
  });
}

/** An agent per thread over one shared MemoryCheckpointer, with `scriptedProvider`. */
export function agentFactory(
  extra: Partial<AgentOptions> = {},
  delayMs = 0,
  chunkSize = 3,
): { agent: (threadId: string) => Agent; checkpointer: MemoryCheckpointer; created: string[] } {
  const checkpointer = new MemoryCheckpointer();
  const created: string[] = [];
  return {
    checkpointer,
    created,
    agent: (threadId) => {
      created.push(threadId);
      return new Agent({
        provider: scriptedProvider(delayMs, chunkSize),
        model: 'faux',
        tools: [lookup],
        checkpointer,
        threadId,
        ...extra,
      });
    },
  };
}

/** The AI SDK's own `AbstractChat` with a plain array state (what `@ai-sdk/react`'s `Chat` adds, minus React). */
export class NodeChat extends AbstractChat<UIMessage> {
  constructor(
    init: ConstructorParameters<typeof AbstractChat<UIMessage>>[0] extends infer I ? Omit<I, 'state'> : never,
  ) {
    const state: ChatState<UIMessage> = {
      status: 'ready',
      error: undefined,
      messages: [],
      pushMessage: (message) => void state.messages.push(message),
      popMessage: () => void state.messages.pop(),
      replaceMessage: (index, message) => void (state.messages[index] = message),
      snapshot: (thing) => structuredClone(thing),
    };
    super({ ...init, state });
  }
}
