// mcpTools against a hostile stdio server that writes JSON-RPC by hand (test/mcp/servers/raw-server.ts): what no SDK
// server would send — a result nested 5,000 levels deep, `result: null`, a -32000 error, a 20 MB line — and what the
// tool result says for each. The client side is the SDK's Client, as in every mcpTools call.
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Agent, type AgentEvent, type AnyAgentTool, type ToolResultMessage } from 'cubepi';
import { mcpTools, type McpToolDetails, type McpToolSet, type McpToolsOptions } from 'cubepi/mcp';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { collect, resultText } from '../helpers.js';
import { bundledScript } from '../bundled-script.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const rawServer = fileURLToPath(new URL('./servers/raw-server.ts', import.meta.url));
/** `rawServer` bundled once for this file (`bundledScript`): its processes start without compiling it. */
let rawServerBundle: string;
beforeAll(async () => {
  rawServerBundle = await bundledScript(rawServer);
});

const sets: McpToolSet[] = [];
afterEach(async () => {
  for (const set of sets.splice(0)) await set.close();
});

function openRaw(options: McpToolsOptions = {}): McpToolSet {
  const set = mcpTools(
    { command: process.execPath, args: [rawServerBundle], cwd: root, stderr: 'ignore' },
    { restartBackoffMs: 20, ...options },
  );
  sets.push(set);
  return set;
}

/** Runs an agent whose model calls `name` with `args`, then answers; returns the tool results. */
async function call(
  tools: readonly AnyAgentTool[],
  name: string,
  args: Record<string, unknown> = {},
): Promise<ToolResultMessage> {
  const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall(name, args)]), fauxMessage('done')] });
  const events: AgentEvent[] = await collect(new Agent({ provider: faux, model: 'faux', tools }).prompt$('go'));
  const results = events.flatMap((event) =>
    event.type === 'message_end' && event.message.role === 'toolResult' ? [event.message] : [],
  );
  expect(results).toHaveLength(1);
  return results[0]!;
}

describe('mcpTools with a hostile stdio server', () => {
  it('structuredContent nested 5,000 levels deep is an error result, and the connection goes on', async () => {
    const tools = await openRaw().tools();
    const deep = await call(tools, 'deep', { depth: 5_000 });
    expect(deep.isError).toBe(true);
    expect(resultText(deep)).toBe(
      'MCP tool deep (server raw) returned an invalid result: its structuredContent nests deeper than 64 levels',
    );
    expect(deep.details).toEqual({ server: 'raw', tool: 'deep' });
    // Shallow enough is kept, and given to the model as JSON when there is no other content.
    const fine = await call(tools, 'deep', { depth: 10 });
    expect(fine.isError).toBe(false);
    expect(resultText(fine)).toBe(`${'{"a":'.repeat(10)}1${'}'.repeat(10)}`);
    expect((fine.details as McpToolDetails).structuredContent).toBeDefined();
    expect(resultText(await call(tools, 'echo', { text: 'still here' }))).toBe('still here');
  });

  it("a JSON-RPC error with code -32000 reports the server's message, and claims no restart", async () => {
    const tools = await openRaw().tools();
    const failed = await call(tools, 'server_error');
    expect(failed.isError).toBe(true);
    expect(resultText(failed)).toBe(
      'MCP tool server_error (server raw) failed: MCP error -32000: the database is locked',
    );
    expect(resultText(await call(tools, 'echo', { text: 'same connection' }))).toBe('same connection');
  });

  it('`result: null` is an error result at once, not a wait for the timeout', async () => {
    // A timeout the test would notice only by failing its own: the answer must not be the timeout's.
    const tools = await openRaw({ timeoutMs: 30_000 }).tools();
    const result = await call(tools, 'null_result');
    expect(result.isError).toBe(true);
    expect(resultText(result)).toBe(
      'MCP tool null_result (server raw) failed: MCP error -32603: the server sent an invalid response: its result is null, not an object',
    );
    expect(resultText(await call(tools, 'echo', { text: 'and on' }))).toBe('and on');
  });

  it('a 20 MB result arrives whole; a line over maxMessageBytes closes the connection with a clear error', async () => {
    const set = openRaw({ maxResultChars: 30_000_000, maxMessageBytes: 24 * 1024 * 1024 });
    const tools = await set.tools();
    const whole = await call(tools, 'big', { bytes: 20_000_000 });
    expect(whole.isError).toBe(false);
    expect(resultText(whole)).toBe('y'.repeat(20_000_000));
    expect(whole.details).toEqual({ server: 'raw', tool: 'big' });
    const over = await call(tools, 'big', { bytes: 25 * 1024 * 1024 });
    expect(over.isError).toBe(true);
    expect(resultText(over)).toBe(
      `MCP server raw sent a message over maxMessageBytes (${24 * 1024 * 1024} bytes) during the call: the connection was closed; it will be restarted on the next call`,
    );
    expect(resultText(await call(tools, 'echo', { text: 'restarted' }))).toBe('restarted');
  });
});
