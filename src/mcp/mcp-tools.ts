/**
 * MCP servers' tools as cubepi tools.
 * @module
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Observable } from 'rxjs';
import { z } from 'zod';
import { DEFAULT_MAX_FILE_BYTES } from '../types/check-file.js';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import { McpConnection, type McpSource } from './mcp-connection.js';
import type { AgentTool, AgentToolResult, AnyAgentTool } from '../types/tool.js';
import { parametersFromJsonSchema } from '../tools/json-schema-parameters.js';
import { McpMessageTooLargeError } from './stdio-client-transport.js';
import { mapCallResult, type McpToolDetails } from './mcp-result.js';

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
   * A file in a result (`audio`, or a `resource` with a `blob`) larger than this, in bytes, is replaced by a note
   * (default 20 MiB, the Agent's `maxFileBytes` default). Smaller ones become file blocks.
   */
  readonly maxFileBytes?: number | undefined;
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
  /**
   * **Hot**: emits each time the server says its tool list changed (`notifications/tools/list_changed`), on a
   * connection `mcpTools` opened (with a `Client` you passed, its notifications are yours to handle). Call `tools()`
   * again for the new set, or let `syncMcpTools` keep an agent's tools current (a run picks a new set up at its
   * next turn, never in the middle of a tool batch).
   */
  readonly toolsChanged$: Observable<void>;
  /** Closes the connection (a stdio server's process ends) and refuses further calls. Idempotent. */
  close(): Promise<void>;
}

const DEFAULTS = {
  timeoutMs: 60_000,
  maxDescriptionChars: 2_000,
  maxResultChars: 100_000,
  maxImageChars: 5_000_000,
  maxFileBytes: DEFAULT_MAX_FILE_BYTES,
  maxMessageBytes: 32 * 1024 * 1024,
  maxRestarts: 3,
  restartBackoffMs: 200,
} as const;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** The longest failure message given to the model (it may quote the server's error message). */
const MAX_FAILURE_CHARS = 2_000;
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
 *   error result. A result maps to text, image and file blocks (audio and binary resources as files, text resources
 *   as text with their URI), `isError` carried over,
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
  const listeners = new Set<() => void>();
  connection.onToolsChanged = () => {
    for (const listener of [...listeners]) listener();
  };
  return {
    tools: () => listTools(connection, settings),
    toolsChanged$: new Observable<void>((subscriber) => {
      const listener = () => subscriber.next();
      listeners.add(listener);
      return () => listeners.delete(listener);
    }),
    close: () => connection.close(),
  };
}

interface Settings {
  readonly timeoutMs: number;
  readonly maxDescriptionChars: number;
  readonly maxResultChars: number;
  readonly maxImageChars: number;
  readonly maxFileBytes: number;
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
    'maxFileBytes',
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
    maxFileBytes: options.maxFileBytes ?? DEFAULTS.maxFileBytes,
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
      tool: typeof remote === 'string' ? remote.slice(0, 200) : describeName(remote),
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
    const fail = (untrimmed: string) => {
      // Failure messages carry the server's text (its error message): bounded, like its results.
      const text =
        untrimmed.length > MAX_FAILURE_CHARS
          ? `${untrimmed.slice(0, MAX_FAILURE_CHARS)} [… ${untrimmed.length - MAX_FAILURE_CHARS} more characters cut]`
          : untrimmed;
      subscriber.next({
        content: [{ type: 'text', text }],
        isError: true,
        details: { server: connection.name, tool: remote },
      });
      subscriber.complete();
    };
    let called: Client | undefined;
    connection
      .get()
      .then((client) =>
        (called = client).callTool({ name: remote, arguments: args as Record<string, unknown> }, undefined, {
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
          let mapped: AgentToolResult<McpToolDetails>;
          try {
            mapped = mapCallResult(result, connection.name, remote, {
              maxResultChars: settings.maxResultChars,
              maxImageChars: settings.maxImageChars,
              maxFileBytes: settings.maxFileBytes,
            });
          } catch (error) {
            // The mapping is bounded, but it runs in a promise callback: whatever it throws must be a result, never
            // an unhandled rejection (which ends the process) or a call left waiting.
            return fail(
              `MCP tool ${remote} (server ${connection.name}) returned a result that cannot be read: ${errorMessageOf(error)}`,
            );
          }
          subscriber.next(mapped);
          subscriber.complete();
        },
        (error: unknown) => {
          if (subscriber.closed) return;
          if (signal.aborted) return subscriber.error(signal.reason);
          if (error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number))
            return fail(`MCP tool ${remote} (server ${connection.name}) timed out after ${settings.timeoutMs} ms`);
          // -32000 is also the first of the codes JSON-RPC leaves to servers: a server's own error with it is that
          // server's message, not a closed connection. The SDK drops a client's transport when its connection closes.
          if (
            error instanceof McpError &&
            error.code === (ErrorCode.ConnectionClosed as number) &&
            called !== undefined &&
            called.transport === undefined
          ) {
            const first = connection.firstError;
            if (first instanceof McpMessageTooLargeError)
              return fail(
                `MCP server ${connection.name} sent a message over maxMessageBytes (${first.maxBytes} bytes) during the call: the connection was closed; it will be restarted on the next call`,
              );
            const why = first === undefined ? '' : ` (${first.message})`;
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

/** A tool name that is not a string, for a warning: bounded, and never walked deeply (it is the server's value). */
function describeName(name: unknown): string {
  if (typeof name === 'object' && name !== null) return Array.isArray(name) ? '(an array)' : '(an object)';
  return String(name).slice(0, 200);
}
