// `cubepi mcp` (serveMcp over cubepi's stdio transport) fed what a broken or hostile client writes, byte for byte: it
// answers JSON-RPC errors and keeps serving. The command runs from the sources (tsx) as a child process.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

interface Served {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every line the server wrote to stdout, parsed. */
  readonly lines: Record<string, unknown>[];
  send(text: string): void;
  /** The next line written after the `count` seen so far. */
  next(count: number): Promise<Record<string, unknown>>;
  readonly exit: Promise<number | null>;
}

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill();
});

function serve(): Served {
  const child = spawn(process.execPath, ['--import', 'tsx', main, 'mcp', '--delay', '0'], {
    cwd: root,
    stdio: 'pipe',
    env: { ...process.env, NO_COLOR: '1' },
  });
  children.push(child);
  const lines: Record<string, unknown>[] = [];
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    pending += chunk;
    for (let at = pending.indexOf('\n'); at !== -1; at = pending.indexOf('\n')) {
      lines.push(JSON.parse(pending.slice(0, at)) as Record<string, unknown>);
      pending = pending.slice(at + 1);
    }
  });
  child.stderr.resume();
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    send: (text) => void child.stdin.write(text),
    next: async (count) => {
      await expect.poll(() => lines.length > count || child.exitCode !== null, { timeout: 15_000 }).toBe(true);
      expect(lines.length, 'the server answered before exiting').toBeGreaterThan(count);
      return lines[count]!;
    },
    exit,
  };
}

const request = (id: number, method: string, params: Record<string, unknown> = {}) =>
  `${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`;

describe('cubepi mcp over stdio, fed a broken client', () => {
  it('answers JSON-RPC errors for what it cannot read, or may not answer yet, and keeps serving', async () => {
    const server = serve();
    // Before initialize: only pings.
    server.send(request(1, 'tools/list'));
    expect(await server.next(0)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32600, message: 'MCP error -32600: the session is not initialized: send initialize first' },
    });
    server.send('this is not JSON\n');
    expect(await server.next(1)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    expect((server.lines[1]!.error as { message: string }).message).toMatch(/^Parse error: /);
    server.send('{"jsonrpc":"2.0","id":7,"method":42}\n');
    expect(await server.next(2)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32600, message: 'Invalid Request: its method is not a string' },
    });
    server.send('[1,2,3]\n');
    expect(await server.next(3)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: the message is an array, not a JSON-RPC object' },
    });
    // An 11 MB line (the SDK's transport closed on it, and the command exited 0 without a word).
    server.send(`${request(8, 'tools/call', { name: 'weather', arguments: { city: 'x'.repeat(11 * 1024 * 1024) } })}`);
    expect(await server.next(4)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: `Invalid Request: a message over ${10 * 1024 * 1024} bytes was dropped` },
    });
    // Still serving: initialize, then a call.
    server.send(
      request(2, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      }),
    );
    expect(await server.next(5)).toMatchObject({ id: 2, result: { serverInfo: { name: 'cubepi' } } });
    server.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    server.send(request(3, 'tools/call', { name: 'weather', arguments: { city: 'Oslo' } }));
    expect(await server.next(6)).toMatchObject({
      id: 3,
      result: { content: [{ type: 'text', text: 'Oslo: 7 °C, clear' }] },
    });
    expect(server.child.exitCode).toBe(null);
    // The end of stdin ends the server, cleanly.
    server.child.stdin.end();
    expect(await server.exit).toBe(0);
  });
});
