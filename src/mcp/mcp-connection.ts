/**
 * The connection to one MCP server: its source, opened lazily, restarted after a crash, closed on request.
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import { StdioClientLineTransport } from './stdio-client-transport.js';

/** An MCP server started as a child process, spoken to over its stdin and stdout. */
export interface McpStdioSource {
  readonly command: string;
  readonly args?: readonly string[] | undefined;
  /**
   * Environment variables for the server, added to the SDK's safe default set (`PATH`, `HOME`, …): the server does
   * not inherit the whole environment of your process.
   */
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  /** What happens to the server's stderr: `inherit` (default: your process's stderr), `ignore` or `pipe`. */
  readonly stderr?: 'inherit' | 'ignore' | 'pipe' | undefined;
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpSource {
  readonly url: string | URL;
  /** Sent with every request (e.g. `Authorization`). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/**
 * Where the tools come from: a command to start (stdio), a Streamable HTTP endpoint, or an SDK `Client` you connected
 * yourself (it stays yours: `close()` leaves it open, and it is not restarted).
 */
export type McpSource = McpStdioSource | McpHttpSource | Client;

/** What a connection needs of `McpToolsOptions`. */
export interface ConnectionSettings {
  readonly name: string | undefined;
  readonly maxMessageBytes: number;
  readonly maxRestarts: number;
  readonly restartBackoffMs: number;
}

/** The connection to one server: opened lazily, reopened after a crash (bounded, with backoff), closed on request. */
export class McpConnection {
  /** Called when the server says its tool list changed (`notifications/tools/list_changed`). */
  onToolsChanged: (() => void) | undefined;

  private client: Client | undefined;
  private opening: Promise<Client> | undefined;
  private closed = false;
  /** Restarts since the last call that succeeded. */
  private restarts = 0;
  /** Whether the connection we opened has been lost (the next open is a restart). */
  private lost = false;
  private serverName: string | undefined;
  /** The first transport error of the current connection, which may explain why it closed. */
  firstError: Error | undefined;

  constructor(
    private readonly source: McpSource,
    private readonly settings: ConnectionSettings,
  ) {
    if (!isClient(source)) transportOf(source, settings.maxMessageBytes); // refuses an invalid source at once
  }

  /** The server's name for messages. */
  get name(): string {
    return this.settings.name ?? this.serverName ?? describeSource(this.source);
  }

  /** The connected client, opening (or reopening) the connection when needed. */
  get(): Promise<Client> {
    if (this.closed) return Promise.reject(new Error(`the connection to MCP server ${this.name} is closed`));
    if (isClient(this.source)) {
      this.serverName ??= this.source.getServerVersion()?.name;
      return Promise.resolve(this.source);
    }
    if (this.client !== undefined) return Promise.resolve(this.client);
    this.opening ??= this.open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** A call succeeded: the server works again, so its restart budget is whole again. */
  succeeded(): void {
    this.restarts = 0;
  }

  private async open(): Promise<Client> {
    if (this.lost) {
      if (this.restarts >= this.settings.maxRestarts) {
        throw new Error(
          `MCP server ${this.name} stopped and was restarted ${this.restarts} times without a successful call; not restarted again`,
        );
      }
      this.restarts++;
      await sleep(this.settings.restartBackoffMs * 2 ** (this.restarts - 1));
      if (this.closed) throw new Error(`the connection to MCP server ${this.name} is closed`);
    }
    const client = new Client({ name: 'cubepi', version: '0.2.0' }, { capabilities: {} });
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.lost = true;
    };
    // Transport errors (a bad line on stdout, a message over the size limit, a dropped stream) fail the requests in
    // flight; the first one says why a connection closed (what follows it is usually its consequence: the rest of a
    // refused message read as lines).
    client.onerror = (error) => (this.firstError ??= error);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.onToolsChanged?.());
    try {
      this.firstError = undefined;
      await client.connect(transportOf(this.source as McpStdioSource | McpHttpSource, this.settings.maxMessageBytes));
    } catch (error) {
      this.lost = true;
      await client.close().catch(() => undefined);
      throw new Error(`could not connect to MCP server ${this.name}: ${errorMessageOf(error)}`, { cause: error });
    }
    if (this.closed) {
      await client.close();
      throw new Error(`the connection to MCP server ${this.name} is closed`);
    }
    this.serverName = client.getServerVersion()?.name;
    this.client = client;
    return client;
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.opening?.catch(() => undefined));
    this.client = undefined;
    if (client !== undefined && (client as unknown) !== this.source) await client.close();
  }
}

export function isClient(source: McpSource): source is Client {
  // A Client from another copy of the SDK is a Client too.
  return (
    source instanceof Client ||
    (typeof source === 'object' &&
      source !== null &&
      typeof (source as { callTool?: unknown }).callTool === 'function' &&
      typeof (source as { request?: unknown }).request === 'function')
  );
}

function transportOf(source: McpStdioSource | McpHttpSource, maxMessageBytes: number): Transport {
  if (typeof source !== 'object' || source === null)
    throw new ConfigurationError('mcpTools: the source must be { command, … }, { url, … } or an SDK Client');
  if ('command' in source) {
    if (typeof source.command !== 'string' || source.command.length === 0)
      throw new ConfigurationError('mcpTools: `command` must be a non-empty string');
    // Not the SDK's StdioClientTransport: its read buffer costs quadratic time in a message's size.
    return new StdioClientLineTransport({
      command: source.command,
      args: [...(source.args ?? [])],
      env: source.env === undefined ? undefined : { ...source.env },
      cwd: source.cwd,
      stderr: source.stderr,
      maxMessageBytes,
    });
  }
  if ('url' in source) {
    let url: URL;
    try {
      url = new URL(source.url);
    } catch {
      throw new ConfigurationError(`mcpTools: \`url\` is not a URL: ${String(source.url)}`);
    }
    return new StreamableHTTPClientTransport(
      url,
      source.headers === undefined ? undefined : { requestInit: { headers: { ...source.headers } } },
    );
  }
  throw new ConfigurationError('mcpTools: the source must be { command, … }, { url, … } or an SDK Client');
}

function describeSource(source: McpSource): string {
  if (isClient(source)) return '(client)';
  return 'command' in source ? source.command : String(source.url);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
