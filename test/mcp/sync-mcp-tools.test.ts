// syncMcpTools and Agent.dispose against the real stdio MCP server (test/mcp/servers/tools-server.ts): a tool list that
// changes mid-run reaches the next turn's request and never the running batch; disposing the agent ends the server.
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent, defineTool, InvalidStateError, type AnyAgentTool, type ToolResultMessage } from 'cubepi';
import { mcpTools, syncMcpTools, type McpToolSet } from 'cubepi/mcp';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { NEVER } from 'rxjs';
import { z } from 'zod';
import { collect, resultText } from '../helpers.js';
import { bundledScript } from '../bundled-script.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const serverScript = fileURLToPath(new URL('./servers/tools-server.ts', import.meta.url));
/** `serverScript` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let serverScriptBundle: string;
beforeAll(async () => {
  serverScriptBundle = await bundledScript(serverScript);
});

const opened: McpToolSet[] = [];
afterEach(async () => {
  for (const set of opened.splice(0)) await set.close();
});

function stdioTools(): McpToolSet {
  const set = mcpTools({
    command: process.execPath,
    args: [serverScriptBundle],
    cwd: root,
    stderr: 'ignore',
  });
  opened.push(set);
  return set;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('syncMcpTools', () => {
  it("refreshes the agent's tools on list_changed: the next turn's request lists them, the running batch does not", async () => {
    const requests: string[][] = [];
    const faux = new FauxProvider({
      responses: [
        // Turn 0: add a tool on the server, wait until the agent has it, then call it in the same batch.
        (_messages, _model, { tools }) => (
          requests.push(tools.map((tool) => tool.name)),
          fauxMessage([
            fauxToolCall('add_tool', {}, { id: 'c1' }),
            fauxToolCall('await_refresh', {}, { id: 'c2' }),
            fauxToolCall('added', {}, { id: 'c3' }),
          ])
        ),
        // Turn 1: the new tool is in the request, and works.
        (_messages, _model, { tools }) => (
          requests.push(tools.map((tool) => tool.name)),
          fauxMessage([fauxToolCall('added', {}, { id: 'c4' })])
        ),
        (_messages, _model, { tools }) => (requests.push(tools.map((tool) => tool.name)), fauxMessage('done')),
      ],
    });
    const holder: { agent?: Agent } = {};
    let batchSawTools: readonly string[] = [];
    // Holds the batch until the agent's tools include the server's new one (the refresh landed mid-batch).
    const awaitRefresh = defineTool({
      name: 'await_refresh',
      description: 'Waits until the agent has the tool "added"',
      parameters: z.object({}),
      execute: async () => {
        const tools = () => holder.agent!.state.tools.map((tool) => tool.name);
        await expect.poll(tools, { timeout: 10_000 }).toContain('added');
        batchSawTools = tools();
        return 'refreshed';
      },
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [awaitRefresh], toolExecution: 'sequential' });
    holder.agent = agent;
    const installed = await syncMcpTools(agent, stdioTools());
    expect(installed.map((tool) => tool.name)).not.toContain('added');
    expect(agent.state.tools.map((tool) => tool.name)).toEqual([
      'await_refresh',
      ...installed.map((tool) => tool.name),
    ]);

    const events = await collect(agent.prompt$('go'));
    const results = events.flatMap((event) =>
      event.type === 'message_end' && event.message.role === 'toolResult' ? [event.message] : [],
    );
    expect(results.map((result) => [result.toolCallId, result.isError])).toEqual([
      ['c1', false],
      ['c2', false],
      ['c3', true],
      ['c4', false],
    ]);
    // The agent had the new tool before the batch's third call, yet the batch kept the tools it started with.
    expect(batchSawTools).toContain('added');
    expect(resultText(results[2]!)).toContain('added');
    expect(resultText(results[2]!)).toMatch(/not found|unknown|no tool/i);
    expect(resultText(results[3]!)).toBe('I am new');
    expect(requests[0]).not.toContain('added');
    expect(requests[1]).toContain('added');
    expect(requests[1]).toContain('await_refresh');
    await agent.dispose();
  });

  it("a refresh whose tools clash with the agent's keeps the previous tools and reports the error", async () => {
    const errors: unknown[] = [];
    const set = stdioTools();
    const clash: AnyAgentTool = defineTool({
      name: 'added',
      description: 'Already here',
      parameters: z.object({}),
      execute: () => 'mine',
    });
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('add_tool', {})]), fauxMessage('done')] });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [clash] });
    const installed = await syncMcpTools(agent, set, { onError: (error) => errors.push(error) });
    await agent.prompt('go');
    await expect.poll(() => errors.length, { timeout: 10_000 }).toBe(1);
    expect(String(errors[0])).toContain('two tools are named "added"');
    expect(agent.state.tools).toEqual([clash, ...installed]);
    await agent.dispose();
  });

  it('an agent disposed during the first listing: rejects, and the set is closed', async () => {
    const set = stdioTools();
    const agent = new Agent({ provider: new FauxProvider(), model: 'faux' });
    const synced = syncMcpTools(agent, set);
    await agent.dispose();
    await expect(synced).rejects.toThrow(InvalidStateError);
    await expect(set.tools()).rejects.toThrow('is closed');
  });
});

describe('Agent.dispose', () => {
  it("ends the stdio MCP server's process, refuses further runs, and is idempotent", async () => {
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('pid', {})]), fauxMessage('done')] });
    const agent = new Agent({ provider: faux, model: 'faux' });
    await syncMcpTools(agent, stdioTools());
    const added = await agent.prompt('which process?');
    const pid = Number(resultText(added.find((message) => message.role === 'toolResult') as ToolResultMessage));
    expect(pid).toBeGreaterThan(0);
    expect(isAlive(pid)).toBe(true);

    const disposed = agent.dispose();
    expect(agent.dispose()).toBe(disposed);
    await disposed;
    await expect.poll(() => isAlive(pid), { timeout: 10_000 }).toBe(false);
    await expect(agent.prompt('again')).rejects.toThrow(InvalidStateError);
    expect(() => agent.onDispose(() => undefined)).toThrow(InvalidStateError);
  });

  it('cancels the active run first, then runs every closer in reverse order, even when one fails', async () => {
    const order: string[] = [];
    const seen: (AbortSignal | undefined)[] = [];
    const agent = new Agent({
      provider: {
        id: 'hang',
        stream: (_model, _messages, request) => {
          seen.push(request?.options?.signal);
          return NEVER;
        },
      },
      model: 'm',
    });
    agent.onDispose(() => void order.push('first'));
    agent.onDispose(() => {
      order.push('second');
      throw new Error('second failed');
    });
    const unregister = agent.onDispose(() => void order.push('never'));
    unregister();
    const run = agent.prompt('hi');
    await expect.poll(() => seen.length).toBe(1);
    await expect(agent.dispose()).rejects.toThrow('second failed');
    expect(seen[0]!.aborted).toBe(true);
    const added = await run;
    expect(added.at(-1)).toMatchObject({ stopReason: 'aborted' });
    expect(order).toEqual(['second', 'first']);
  });

  it('Symbol.asyncDispose disposes the agent', async () => {
    const agent = new Agent({ provider: new FauxProvider({ responses: [] }), model: 'faux' });
    let closed = false;
    agent.onDispose(() => void (closed = true));
    const asyncDispose = (Symbol as unknown as { asyncDispose: symbol }).asyncDispose;
    await (agent as unknown as Record<symbol, () => Promise<void>>)[asyncDispose]!();
    expect(closed).toBe(true);
  });
});
