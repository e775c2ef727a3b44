/**
 * MCP servers' tools as cubepi tools.
 * @module
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Observable } from 'rxjs';
import { z } from 'zod';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { AgentTool, AgentToolResult, AnyAgentTool } from '../types/tool.js';
import { parametersFromJsonSchema } from './json-schema-parameters.js';
import { mapCallResult, type McpToolDetails } from './mcp-result.js';

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

/** A tool the server listed that was not turned into a cubepi tool, and why. */
export interface McpWarning {
  readonly server: string;
  /** The tool's name as the server gave it (as JSON text when it was not a string). */
  readonly tool: string;
  readonly message: string;
}

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** The server's name in error results and warnings; by default its `serverInfo.name`. */
  readonly name?: string | undefined;
  /** Put before every tool name (`fs_` makes `read_file` `fs_read_file`), to keep names of several servers apart. */
  readonly prefix?: string | undefined;
  /** Only these tools (names as the server gives them, before the prefix). */
  readonly allow?: readonly string[] | undefined;
  /** Never these tools (names as the server gives them). */
  readonly deny?: readonly string[] | undefined;
  /** A call still running after this long is cancelled (the server is told) and gets an error result. Default 60 s. */
  readonly timeoutMs?: number | undefined;
  /** Descriptions longer than this are cut (default 2,000 characters). */
  readonly maxDescriptionChars?: number | undefined;
  /** Text of one result beyond this is cut, with a note saying so (default 100,000 characters). */
  readonly maxResultChars?: number | undefined;
  /** An image larger than this (base64 characters) is replaced by a note (default 5,000,000). */
  readonly maxImageChars?: number | undefined;
  /**
   * A stdio server's longest message, in bytes (default 32 MiB): one longer closes the connection (the call gets an
   * error result saying so; the server is restarted on the next call), so a server cannot make us buffer without end.
   */
  readonly maxMessageBytes?: number | undefined;
  /**
   * After the server process exits or its connection closes, the next call starts it again, waiting
   * `restartBackoffMs` × 2^(restarts − 1) first; after `maxRestarts` restarts without a successful call in between,
   * calls get an error result instead. Defaults: 3 restarts, 200 ms.
   */
  readonly maxRestarts?: number | undefined;
  readonly restartBackoffMs?: number | undefined;
  /** Tools that are skipped (invalid name or schema, a duplicate) are reported here; default `console.warn`. */
  readonly onWarning?: ((warning: McpWarning) => void) | undefined;
}

/** The tools of one MCP server, and its connection. Build with {@link mcpTools}. */
export interface McpToolSet {
  /**
   * Connects (the first time), lists the server's tools and returns them as cubepi tools: validated names, arguments
   * checked against each tool's JSON Schema before any call. Each call lists again (use it between runs to pick up a
   * changed tool set). Rejects when the server cannot be reached or does not answer `tools/list`.
   */
  tools(): Promise<AnyAgentTool[]>;
  /** Closes the connection (a stdio server's process ends) and refuses further calls. Idempotent. */
  close(): Promise<void>;
}

const DEFAULTS = {
  timeoutMs: 60_000,
  maxDescriptionChars: 2_000,
  maxResultChars: 100_000,
  maxImageChars: 5_000_000,
  maxMessageBytes: 32 * 1024 * 1024,
  maxRestarts: 3,
  restartBackoffMs: 200,
} as const;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Pages of `tools/list` read at most: a server whose cursor never ends cannot keep us listing. */
const MAX_LIST_PAGES = 100;

// `tools/list` read leniently: one malformed tool is skipped with a warning, not the whole answer refused (the SDK's
// own `listTools` validates every tool strictly, so one bad tool would lose them all).
const ListToolsAnswer = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

/**
 * The tools of an MCP server as cubepi tools.
 *
 * - **Source.** A stdio command `{ command, args, env, cwd }`, a Streamable HTTP endpoint `{ url, headers }`, or a
 *   connected SDK `Client`. The connection opens lazily, at the first `tools()` or call; `close()` ends it.
 * - **Tools.** Each listed tool becomes a cubepi tool named `prefix + name` whose `inputSchema` is the server's JSON
 *   Schema and whose arguments are checked against it (`z.fromJSONSchema`) before any call: a call with invalid
 *   arguments never reaches the server, and the model gets the issues by field path, as for a zod tool.
 * - **Calls.** Cancelling the run (unsubscribing, `abort()`, a deadline) cancels the request: the server receives
 *   `notifications/cancelled`. Progress notifications become `tool_execution_update`s (`details`: `{ type:
 *   'mcp_progress', progress, total?, message? }`). A call over `timeoutMs` is cancelled the same way and gets an
 *   error result. A result maps to text and image blocks (resources as text with their URI), `isError` carried over,
 *   `structuredContent` in `details` ({@link McpToolDetails}).
 * - **Untrusted servers.** Descriptions and results are data passed to the model, never read by cubepi. A tool with an
 *   invalid name (after the prefix: 1–64 letters, digits, `_`, `-`), a schema that cannot be checked, or a duplicate
 *   name is skipped with a warning (`onWarning`); long descriptions are cut; results are bounded.
 * - **Crashes.** A server that exits mid-call gives that call an error result naming the server; the next call starts
 *   it again (with backoff, at most `maxRestarts` times in a row).
 *
 * Throws {@link ConfigurationError} for an invalid source or options.
 *
 * @example
 * const files = mcpTools({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] }, { prefix: 'fs_' });
 * const agent = new Agent({ provider, model, tools: await files.tools() });
 * // … later
 * await files.close();
 */
export function mcpTools(source: McpSource, options: McpToolsOptions = {}): McpToolSet {
  const settings = validateOptions(options);
  const connection = new McpConnection(source, settings);
  return {
    tools: () => listTools(connection, settings),
    close: () => connection.close(),
  };
}

interface Settings {
  readonly timeoutMs: number;
  readonly maxDescriptionChars: number;
  readonly maxResultChars: number;
  readonly maxImageChars: number;
  readonly maxMessageBytes: number;
  readonly maxRestarts: number;
  readonly restartBackoffMs: number;
  readonly name: string | undefined;
  readonly prefix: string;
  readonly allow: ReadonlySet<string> | undefined;
  readonly deny: ReadonlySet<string>;
  readonly onWarning: (warning: McpWarning) => void;
}

function validateOptions(options: McpToolsOptions): Settings {
  const fail = (what: string): never => {
    throw new ConfigurationError(`mcpTools: ${what}`);
  };
  if (typeof options !== 'object' || options === null) fail('expected an options object');
  for (const key of [
    'timeoutMs',
    'maxDescriptionChars',
    'maxResultChars',
    'maxImageChars',
    'maxMessageBytes',
    'restartBackoffMs',
  ] as const) {
    const value = options[key];
    if (value !== undefined && !(typeof value === 'number' && value > 0)) fail(`\`${key}\` must be a positive number`);
  }
  if (options.maxRestarts !== undefined && !(Number.isInteger(options.maxRestarts) && options.maxRestarts >= 0))
    fail('`maxRestarts` must be an integer of 0 or more');
  if (options.prefix !== undefined && !/^[a-zA-Z0-9_-]*$/.test(options.prefix))
    fail('`prefix` must be letters, digits, "_" or "-"');
  for (const key of ['allow', 'deny'] as const) {
    const list = options[key];
    if (list !== undefined && !(Array.isArray(list) && list.every((name) => typeof name === 'string')))
      fail(`\`${key}\` must be an array of tool names`);
  }
  return {
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    maxDescriptionChars: options.maxDescriptionChars ?? DEFAULTS.maxDescriptionChars,
    maxResultChars: options.maxResultChars ?? DEFAULTS.maxResultChars,
    maxImageChars: options.maxImageChars ?? DEFAULTS.maxImageChars,
    maxMessageBytes: options.maxMessageBytes ?? DEFAULTS.maxMessageBytes,
    maxRestarts: options.maxRestarts ?? DEFAULTS.maxRestarts,
    restartBackoffMs: options.restartBackoffMs ?? DEFAULTS.restartBackoffMs,
    name: options.name,
    prefix: options.prefix ?? '',
    allow: options.allow === undefined ? undefined : new Set(options.allow),
    deny: new Set(options.deny ?? []),
    onWarning:
      options.onWarning ??
      ((warning) =>
        console.warn(`cubepi/mcp: server ${warning.server}: tool ${warning.tool} skipped: ${warning.message}`)),
  };
}

/** The connection to one server: opened lazily, reopened after a crash (bounded, with backoff), closed on request. */
class McpConnection {
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
    private readonly settings: Settings,
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

function isClient(source: McpSource): source is Client {
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
    return new StdioClientTransport({
      command: source.command,
      args: [...(source.args ?? [])],
      ...(source.env !== undefined ? { env: { ...source.env } } : {}),
      ...(source.cwd !== undefined ? { cwd: source.cwd } : {}),
      ...(source.stderr !== undefined ? { stderr: source.stderr } : {}),
      maxBufferSize: maxMessageBytes,
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

async function listTools(connection: McpConnection, settings: Settings): Promise<AnyAgentTool[]> {
  const client = await connection.get();
  const listed: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const answer = await client.request(
      { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
      ListToolsAnswer,
      { timeout: settings.timeoutMs },
    );
    listed.push(...answer.tools);
    cursor = answer.nextCursor;
    if (cursor === undefined) break;
  }
  const tools: AnyAgentTool[] = [];
  const names = new Set<string>();
  for (const entry of listed) {
    const tool = toCubepiTool(entry, connection, settings, names);
    if (tool !== undefined) tools.push(tool);
  }
  return tools;
}

/** One listed tool as a cubepi tool, or `undefined` (with a warning when it was not refused by the lists). */
function toCubepiTool(
  entry: unknown,
  connection: McpConnection,
  settings: Settings,
  names: Set<string>,
): AnyAgentTool | undefined {
  const listed = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
  const remote = listed.name;
  const warn = (message: string) => {
    settings.onWarning({
      server: connection.name,
      tool: typeof remote === 'string' ? remote.slice(0, 200) : (JSON.stringify(remote) ?? 'undefined'),
      message,
    });
    return undefined;
  };
  if (typeof remote !== 'string') return warn('its name is not a string');
  if (settings.allow !== undefined && !settings.allow.has(remote)) return undefined;
  if (settings.deny.has(remote)) return undefined;
  const name = settings.prefix + remote;
  if (!TOOL_NAME.test(name))
    return warn(`its name ${JSON.stringify(name.slice(0, 80))} is not 1–64 letters, digits, "_" or "-"`);
  if (names.has(name)) return warn(`a tool named ${name} is already listed`);
  const schema = parametersFromJsonSchema(listed.inputSchema);
  if (!schema.ok) return warn(schema.reason);
  names.add(name);
  const rawDescription = typeof listed.description === 'string' ? listed.description : '';
  const max = settings.maxDescriptionChars;
  const description =
    rawDescription.length > max
      ? `${rawDescription.slice(0, max)}… [description cut at ${max} characters]`
      : rawDescription;
  const tool: AgentTool<z.ZodType, McpToolDetails | McpProgress> = {
    name,
    description,
    inputSchema: schema.inputSchema,
    parameters: schema.parameters,
    execute: (_toolCallId, args, { signal, onUpdate }) =>
      callTool(connection, settings, remote, args, signal, onUpdate),
  };
  return tool;
}

/** What a progress notification becomes: the `details` of a `tool_execution_update`. */
export interface McpProgress {
  readonly type: 'mcp_progress';
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** One `tools/call`, cancelled (the server told) when the Observable is unsubscribed or `signal` aborts. */
function callTool(
  connection: McpConnection,
  settings: Settings,
  remote: string,
  args: unknown,
  signal: AbortSignal,
  onUpdate: (partial: AgentToolResult<McpToolDetails | McpProgress>) => void,
): Observable<AgentToolResult<McpToolDetails>> {
  return new Observable<AgentToolResult<McpToolDetails>>((subscriber) => {
    const controller = new AbortController();
    const callSignal = AbortSignal.any([signal, controller.signal]);
    const fail = (text: string) => {
      subscriber.next({
        content: [{ type: 'text', text }],
        isError: true,
        details: { server: connection.name, tool: remote },
      });
      subscriber.complete();
    };
    connection
      .get()
      .then((client) =>
        client.callTool({ name: remote, arguments: args as Record<string, unknown> }, undefined, {
          signal: callSignal,
          timeout: settings.timeoutMs,
          onprogress: (progress) => {
            const text =
              progress.message ?? `${progress.progress}${progress.total === undefined ? '' : `/${progress.total}`}`;
            onUpdate({
              content: [{ type: 'text', text: text.slice(0, 1_000) }],
              details: {
                type: 'mcp_progress',
                progress: progress.progress,
                ...(progress.total !== undefined ? { total: progress.total } : {}),
                ...(progress.message !== undefined ? { message: progress.message.slice(0, 1_000) } : {}),
              },
            });
          },
        }),
      )
      .then(
        (result) => {
          if (subscriber.closed) return;
          connection.succeeded();
          subscriber.next(
            mapCallResult(result, connection.name, remote, {
              maxResultChars: settings.maxResultChars,
              maxImageChars: settings.maxImageChars,
            }),
          );
          subscriber.complete();
        },
        (error: unknown) => {
          if (subscriber.closed) return;
          if (signal.aborted) return subscriber.error(signal.reason);
          if (error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number))
            return fail(`MCP tool ${remote} (server ${connection.name}) timed out after ${settings.timeoutMs} ms`);
          if (error instanceof McpError && error.code === (ErrorCode.ConnectionClosed as number)) {
            const why = connection.firstError === undefined ? '' : ` (${connection.firstError.message})`;
            return fail(
              `MCP server ${connection.name} closed the connection during the call${why}; it will be restarted on the next call`,
            );
          }
          fail(`MCP tool ${remote} (server ${connection.name}) failed: ${errorMessageOf(error)}`);
        },
      );
    return () => controller.abort(new Error('the tool call was cancelled'));
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
