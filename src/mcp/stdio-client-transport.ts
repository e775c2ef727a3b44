/**
 * The client side of MCP over stdio: a server started as a child process, its stdout read by {@link JsonRpcLineReader}.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcLineReader, type JsonRpcLine } from './json-rpc-lines.js';

/** How to start the server, and the longest message read from it. */
export interface StdioServerCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  readonly stderr?: 'inherit' | 'ignore' | 'pipe' | undefined;
  readonly maxMessageBytes: number;
}

/** A message from the server over `maxMessageBytes`: the connection is closed (nothing else can tell its end). */
export class McpMessageTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the server sent a message over maxMessageBytes (${maxBytes} bytes); the connection was closed`);
    this.name = 'McpMessageTooLargeError';
  }
}

/**
 * An SDK `Transport` to a server started as a child process, as the SDK's `StdioClientTransport` (same default
 * environment, same stopping sequence: stdin closed, then SIGTERM, then SIGKILL, two seconds apart), read in linear
 * time. A line the server sends that is shaped like a response but invalid (`"result": null`) becomes an error
 * response for its request at once, instead of a request left waiting for its timeout; other invalid lines are
 * reported to `onerror`. A line over `maxMessageBytes` closes the connection with {@link McpMessageTooLargeError}.
 */
export class StdioClientLineTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;

  private child: ChildProcess | undefined;
  private readonly reader: JsonRpcLineReader;

  constructor(private readonly server: StdioServerCommand) {
    this.reader = new JsonRpcLineReader(server.maxMessageBytes, (line) => this.received(line));
  }

  start(): Promise<void> {
    if (this.child !== undefined) return Promise.reject(new Error('the transport is already started'));
    return new Promise((resolve, reject) => {
      const child = spawnCommand(this.server.command, [...this.server.args], {
        env: { ...getDefaultEnvironment(), ...this.server.env },
        stdio: ['pipe', 'pipe', this.server.stderr ?? 'inherit'],
        shell: false,
        windowsHide: process.platform === 'win32',
        cwd: this.server.cwd,
      });
      this.child = child;
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('close', () => {
        this.child = undefined;
        this.reader.stop();
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.reader.push(chunk));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      // Piped but read by nobody, a full stderr pipe would block the server: it is drained.
      child.stderr?.resume();
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (stdin == null) return Promise.reject(new Error('Not connected'));
    return new Promise((resolve) => {
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    this.reader.stop();
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const within = (ms: number) =>
      Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // already gone
    }
    await within(2_000);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await within(2_000);
    }
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  private received(line: JsonRpcLine): void {
    switch (line.kind) {
      case 'message':
        return this.onmessage?.(line.message);
      case 'invalid_response':
        // Its request fails now, with why, rather than waiting out its timeout.
        return this.onmessage?.({
          jsonrpc: '2.0',
          id: line.id,
          error: { code: ErrorCode.InternalError, message: `the server sent an invalid response: ${line.detail}` },
        });
      case 'too_large':
        this.onerror?.(new McpMessageTooLargeError(line.maxBytes));
        void this.close();
        return;
      case 'parse_error':
        return this.onerror?.(new Error(`the server sent a line that is not JSON: ${line.detail}`));
      case 'invalid_request':
        return this.onerror?.(new Error(`the server sent a message that is not JSON-RPC: ${line.detail}`));
    }
  }
}

type Spawn = typeof spawn;

/**
 * `child_process.spawn`, except on Windows, where a command such as `npx` is a `.cmd` shim that `spawn` cannot start
 * without a shell: there it is the SDK's own `cross-spawn` (resolved from the SDK's package, whose dependency it is).
 */
function spawnCommand(...args: Parameters<Spawn>): ChildProcess {
  if (process.platform !== 'win32') return spawn(...args);
  const require = createRequire(import.meta.url);
  const sdk = require.resolve('@modelcontextprotocol/sdk/client/stdio.js');
  const crossSpawn = createRequire(sdk)('cross-spawn') as Spawn;
  return crossSpawn(...args);
}
