// cubepi as an MCP server (serveMcp), driven by the SDK's own client: over Streamable HTTP (a real local server) and
// over the SDK's in-memory transport pair.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { finalize, type Observable } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, type AgentEndEvent, type AnyAgentTool, type Provider, type StreamEvent } from 'cubepi';
import { mcpHttpHandler, serveMcp, type McpServeEvent, type ServeMcpOptions, type ServeMcpTarget } from 'cubepi/mcp';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { serveMcpHttp } from './serve-mcp-http.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Serves `target` in memory and connects an SDK client to it. */
async function connectInMemory(target: ServeMcpTarget, options: ServeMcpOptions = {}) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const events: McpServeEvent[] = [];
  let completed = false;
  const subscription = serveMcp(target, serverSide, { name: 'cubepi-test', ...options }).subscribe({
    next: (event) => events.push(event),
    complete: () => (completed = true),
  });
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(async () => {
    subscription.unsubscribe();
    await client.close();
  });
  return { client, events, subscription, completed: () => completed };
}

/** Serves `target` over Streamable HTTP (a server per session) and connects an SDK client to it. */
async function connectHttp(target: Agent | readonly AnyAgentTool[]) {
  const http = await serveMcpHttp(target);
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  cleanups.push(async () => {
    await client.close();
    await http.close();
  });
  return { client };
}

function text(result: object): string {
  return ((result as { content?: unknown }).content as { type: string; text?: string }[])
    .map((block) => block.text ?? '')
    .join('');
}

/** A provider that records its requests' signals and teardowns, over a FauxProvider. */
function spy(inner: Provider) {
  const signals: (AbortSignal | undefined)[] = [];
  let tornDown = 0;
  const provider: Provider = {
    id: inner.id,
    stream: (model, messages, request): Observable<StreamEvent> => {
      signals.push(request?.options?.signal);
      return inner.stream(model, messages, request).pipe(finalize(() => tornDown++));
    },
  };
  return { provider, signals, tornDown: () => tornDown };
}

const weather = defineTool({
  name: 'weather',
  description: 'Current weather for a city',
  parameters: z.object({ city: z.string().min(1) }),
  execute: async (_id, { city }, { onUpdate }) => {
    onUpdate({ content: [{ type: 'text', text: `looking up ${city}` }] });
    await new Promise((resolve) => setTimeout(resolve, 5));
    return `${city}: 21 °C`;
  },
});

describe.each([
  ['Streamable HTTP', connectHttp],
  ['in-memory transport', connectInMemory],
])('serveMcp: an agent as an MCP tool, over %s', (_label, connect) => {
  it('lists the agent tool (and answer_approval, for a client without elicitation), answers a prompt with the final text, and streams progress from the run', async () => {
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('weather', { city: 'Paris' })]), fauxMessage('Sunny, 21 °C.')],
      }),
      model: 'faux',
      tools: [weather],
    });
    const { client } = await connect(agent);
    const { tools } = await client.listTools();
    expect(tools).toEqual([
      expect.objectContaining({
        name: 'ask_agent',
        inputSchema: expect.objectContaining({ type: 'object', required: ['prompt'] }),
      }),
      expect.objectContaining({ name: 'answer_approval' }),
    ]);
    const progress: { progress: number; message?: string | undefined }[] = [];
    const result = await client.callTool({ name: 'ask_agent', arguments: { prompt: 'Weather in Paris?' } }, undefined, {
      onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
    });
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe('Sunny, 21 °C.');
    expect(progress.map((p) => p.message)).toEqual([
      'turn 1',
      'calling weather',
      'weather done',
      'turn 2',
      'Sunny, 21 °C.',
    ]);
    expect(progress.map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);
    expect(agent.state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
  });

  it("the client's cancellation cancels the run: the agent's provider request is aborted", async () => {
    const model = spy(new FauxProvider({ responses: [fauxMessage('x'.repeat(100))], delayMs: 5_000 }));
    const agent = new Agent({ provider: model.provider, model: 'faux' });
    const ends: AgentEndEvent[] = [];
    agent.subscribe((event) => void (event.type === 'agent_end' && ends.push(event)));
    const { client } = await connect(agent);
    const controller = new AbortController();
    const call = client.callTool({ name: 'ask_agent', arguments: { prompt: 'slow' } }, undefined, {
      signal: controller.signal,
    });
    await expect.poll(() => model.signals.length).toBe(1);
    controller.abort('changed my mind');
    await expect(call).rejects.toThrow();
    await expect.poll(() => model.signals[0]!.aborted).toBe(true);
    expect(model.tornDown()).toBe(1);
    await agent.waitForIdle();
    expect(ends.map((end) => end.outcome)).toEqual(['cancelled']);
  });
});

describe('serveMcp: the server', () => {
  it('answers isError for a prompt that is not a string and for a second call while the agent is busy', async () => {
    const agent = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('done')], delayMs: 50 }),
      model: 'faux',
    });
    const { client, events } = await connectInMemory(agent);
    const bad = await client.callTool({ name: 'ask_agent', arguments: { prompt: 42 } });
    expect(bad).toMatchObject({ isError: true });
    expect(text(bad)).toBe('Invalid arguments: `prompt` must be a string');
    const [first, second] = await Promise.all([
      client.callTool({ name: 'ask_agent', arguments: { prompt: 'one' } }),
      client.callTool({ name: 'ask_agent', arguments: { prompt: 'two' } }),
    ]);
    expect(text(first)).toBe('done');
    expect(second.isError).toBe(true);
    expect(text(second)).toMatch(/^The agent failed: prompt\(\): a run is already active/);
    expect(
      events.filter((e) => e.type !== 'connected').map((e) => [e.type, e.type === 'call_end' && e.isError]),
    ).toEqual([
      ['call_start', false],
      ['call_end', true],
      ['call_start', false],
      ['call_start', false],
      ['call_end', true],
      ['call_end', false],
    ]);
  });

  it('with a function, each call gets a fresh agent: calls run side by side; options.tools are served too', async () => {
    let made = 0;
    const { client } = await connectInMemory(
      () => {
        made++;
        return new Agent({
          provider: new FauxProvider({ responses: [fauxMessage(`agent ${made}`)], delayMs: 20 }),
          model: 'faux',
        });
      },
      { tools: [weather], toolName: 'ask' },
    );
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['ask', 'answer_approval', 'weather']);
    const answers = await Promise.all([
      client.callTool({ name: 'ask', arguments: { prompt: 'one' } }),
      client.callTool({ name: 'ask', arguments: { prompt: 'two' } }),
    ]);
    expect(answers.map((answer) => [answer.isError ?? false, text(answer)])).toEqual([
      [false, 'agent 1'],
      [false, 'agent 2'],
    ]);
    expect(text(await client.callTool({ name: 'weather', arguments: { city: 'Rome' } }))).toBe('Rome: 21 °C');
  });

  it('refuses two tools of one name', () => {
    expect(() => serveMcp([weather], InMemoryTransport.createLinkedPair()[1], { tools: [weather] })).toThrow(
      'serveMcp: two tools are named "weather"',
    );
  });

  it('unsubscribing closes the server: the client sees the connection close', async () => {
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux' });
    const { client, subscription } = await connectInMemory(agent);
    let closed = false;
    client.onclose = () => (closed = true);
    subscription.unsubscribe();
    await expect.poll(() => closed).toBe(true);
  });

  it('completes when the transport closes', async () => {
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux' });
    const { client, completed } = await connectInMemory(agent);
    await client.close();
    await expect.poll(completed).toBe(true);
  });
});

describe('serveMcp: cubepi tools as MCP tools', () => {
  it('lists each tool with its JSON Schema, validates arguments, runs it with progress', async () => {
    const { client } = await connectInMemory([weather]);
    const { tools } = await client.listTools();
    expect(tools).toEqual([
      expect.objectContaining({
        name: 'weather',
        description: 'Current weather for a city',
        inputSchema: expect.objectContaining({ properties: { city: { type: 'string', minLength: 1 } } }),
      }),
    ]);
    const invalid = await client.callTool({ name: 'weather', arguments: { city: '' } });
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toMatch(/^Invalid arguments for tool "weather":\n- city: /);
    const progress: (string | undefined)[] = [];
    const result = await client.callTool({ name: 'weather', arguments: { city: 'Oslo' } }, undefined, {
      onprogress: (p) => progress.push(p.message),
    });
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe('Oslo: 21 °C');
    expect(progress).toEqual(['looking up Oslo']);
    const unknown = await client.callTool({ name: 'nope', arguments: {} });
    expect(unknown).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Tool nope not found' }] });
  });

  it("the client's cancellation aborts the tool's signal", async () => {
    let signal: AbortSignal | undefined;
    const waits = defineTool({
      name: 'waits',
      description: 'Waits until cancelled',
      parameters: z.object({}),
      execute: (_id, _args, context) => ((signal = context.signal), new Promise<string>(() => undefined)),
    });
    const { client } = await connectInMemory([waits]);
    const controller = new AbortController();
    const call = client.callTool({ name: 'waits', arguments: {} }, undefined, { signal: controller.signal });
    await expect.poll(() => signal).toBeDefined();
    expect(signal!.aborted).toBe(false);
    controller.abort();
    await expect(call).rejects.toThrow();
    await expect.poll(() => signal!.aborted).toBe(true);
  });
});

describe('mcpHttpHandler: serveMcp over Streamable HTTP, a session per client', () => {
  it('serves several clients at once, each in its own session; DELETE ends a session, an unknown one gets 404', async () => {
    let made = 0;
    const handler = mcpHttpHandler(() => {
      made++;
      return new Agent({ provider: new FauxProvider({ responses: [fauxMessage(`answer ${made}`)] }), model: 'faux' });
    });
    const server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
    cleanups.push(async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const one = new Client({ name: 'one', version: '1.0.0' });
    const two = new Client({ name: 'two', version: '1.0.0' });
    const oneTransport = new StreamableHTTPClientTransport(url);
    await one.connect(oneTransport);
    await two.connect(new StreamableHTTPClientTransport(url));
    expect(handler.sessions).toBe(2);
    const answers = await Promise.all([
      one.callTool({ name: 'ask_agent', arguments: { prompt: 'a' } }),
      two.callTool({ name: 'ask_agent', arguments: { prompt: 'b' } }),
    ]);
    expect(answers.map(text).sort()).toEqual(['answer 1', 'answer 2']);

    const sessionId = oneTransport.sessionId!;
    await oneTransport.terminateSession();
    expect(handler.sessions).toBe(1);
    const stale = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(stale.status).toBe(404);
    await one.close();
    await two.close();
  });

  it('a request without a session that is not initialize opens none', async () => {
    const handler = mcpHttpHandler([weather]);
    const server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(response.status).toBe(400);
    expect(handler.sessions).toBe(0);
  });
});
