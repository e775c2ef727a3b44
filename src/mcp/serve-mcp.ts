/**
 * cubepi as an MCP server: an agent as one MCP tool, or cubepi tools as MCP tools.
 * @module
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { isObservable, Observable, type Subscription } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import { validateToolArguments } from '../tools/define-tool.js';
import type { AgentEndEvent, AgentEvent } from '../types/agent-events.js';
import { toolResultProblem } from '../types/check-tool-result.js';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import { textOf, type Message } from '../types/messages.js';
import type { AgentToolResult, AnyAgentTool } from '../types/tool.js';

/** Options of {@link serveMcp}. */
export interface ServeMcpOptions {
  /** The server's name in its `serverInfo` (default `cubepi`). */
  readonly name?: string | undefined;
  readonly version?: string | undefined;
  /** With an agent: the tool's name (default `ask_agent`) and description. */
  readonly toolName?: string | undefined;
  readonly toolDescription?: string | undefined;
  /** More tools to serve next to the target's (an agent's own tools, for instance). Names must not clash. */
  readonly tools?: readonly AnyAgentTool[] | undefined;
}

/** What {@link serveMcp} serves: an agent, a function making a fresh agent for each call, or tools. */
export type ServeMcpTarget = Agent | (() => Agent) | readonly AnyAgentTool[];

/** What a served MCP server reports: connected, each call's start and end. */
export type McpServeEvent =
  | { readonly type: 'connected' }
  | { readonly type: 'call_start'; readonly tool: string; readonly requestId: string | number }
  | {
      readonly type: 'call_end';
      readonly tool: string;
      readonly requestId: string | number;
      readonly isError: boolean;
    };

/** The content an MCP tool answers with (what this server sends). */
type McpContent =
  | { type: 'text'; text: string }
  | {
      type: 'image';
      data: string;
      mimeType: string;
    };

interface McpCallResult {
  [key: string]: unknown;
  content: McpContent[];
  isError?: boolean;
}

/** A tool of the server: its listing and how a call runs. */
interface ServedTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  run(args: unknown, signal: AbortSignal, progress: (message: string) => void): Promise<McpCallResult>;
}

const AGENT_INPUT = {
  type: 'object',
  properties: { prompt: { type: 'string', description: 'The task for the agent' } },
  required: ['prompt'],
  additionalProperties: false,
} as const;

/**
 * Serves an agent (as one tool: prompt in, answer out) or cubepi tools over an MCP transport (the SDK's
 * `StdioServerTransport`, a `StreamableHTTPServerTransport`, …): a **cold** Observable. Subscribing connects the server
 * to `transport` (`connected` is emitted then), each call emits `call_start` and `call_end`, the Observable completes
 * when the transport closes, and unsubscribing closes the server and cancels every call in flight.
 *
 * - **An agent**: one tool (`toolName`, default `ask_agent`) taking `{ prompt: string }`. A call runs `prompt$` and
 *   answers with the text of the run's last assistant message; a run that fails or is cancelled answers `isError`.
 *   With a progress token, the run's progress is streamed as `notifications/progress` (each turn, each tool call, each
 *   assistant message). The client's cancellation cancels the run (its provider request is aborted). An agent runs one
 *   run at a time: a call while another is running answers `isError` (the agent is busy). Give a function instead
 *   (`() => new Agent(…)`) for a fresh agent per call: calls then run side by side, each with its own context.
 * - **Tools** (the target, and `options.tools`): each tool with its JSON Schema; arguments are validated as in a run (a failure answers `isError` with
 *   every issue); `onUpdate` becomes progress; the client's cancellation aborts the tool's `signal`.
 *
 * Errors on the Observable only when the server cannot connect. Throws {@link ConfigurationError} for an invalid target.
 *
 * @example
 * serveMcp(agent, new StdioServerTransport(), { toolName: 'research' }).subscribe();
 */
export function serveMcp(
  target: ServeMcpTarget,
  transport: Transport,
  options: ServeMcpOptions = {},
): Observable<McpServeEvent> {
  const tools = servedTools(target, options);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  return new Observable<McpServeEvent>((subscriber) => {
    const server = new Server(
      { name: options.name ?? 'cubepi', version: options.version ?? '0.2.0' },
      { capabilities: { tools: {} } },
    );
    // MCP: nothing but pings before `initialize`. The SDK's Server would answer them as if initialized.
    const initialized = () => {
      if (server.getClientVersion() === undefined)
        throw new McpError(ErrorCode.InvalidRequest, 'the session is not initialized: send initialize first');
    };
    server.setRequestHandler(ListToolsRequestSchema, () => {
      initialized();
      return {
        tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
      };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      initialized();
      const { name } = request.params;
      const tool = byName.get(name);
      if (tool === undefined) return errorResult(`Tool ${name} not found`);
      subscriber.next({ type: 'call_start', tool: name, requestId: extra.requestId });
      const token = extra._meta?.progressToken;
      let step = 0;
      const progress = (message: string) => {
        if (token === undefined || extra.signal.aborted) return;
        step++;
        extra
          .sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: step, message },
          })
          .catch(() => undefined); // a client that left cannot be told
      };
      const result = await tool.run(request.params.arguments ?? {}, extra.signal, progress);
      subscriber.next({ type: 'call_end', tool: name, requestId: extra.requestId, isError: result.isError === true });
      return result;
    });
    let leaving = false;
    server.onclose = () => {
      if (!leaving) subscriber.complete();
    };
    server.connect(transport).then(
      () => subscriber.next({ type: 'connected' }),
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      leaving = true;
      // Closing the server aborts every request handler's signal: the runs and tools in flight are cancelled.
      void server.close().catch(() => undefined);
    };
  });
}

function servedTools(target: ServeMcpTarget, options: ServeMcpOptions): ServedTool[] {
  const served: ServedTool[] = [];
  if (Array.isArray(target)) served.push(...(target as readonly AnyAgentTool[]).map(servedTool));
  else {
    const agentOf = agentSource(target as Agent | (() => Agent));
    served.push({
      name: options.toolName ?? 'ask_agent',
      description: options.toolDescription ?? 'Asks an agent to carry out a task and answers with its final reply',
      inputSchema: AGENT_INPUT,
      run: (args, signal, progress) => {
        let agent: Agent;
        try {
          agent = agentOf();
        } catch (error) {
          return Promise.resolve(errorResult(`The agent could not be created: ${errorMessageOf(error)}`));
        }
        return runAgent(agent, args, signal, progress);
      },
    });
  }
  served.push(...(options.tools ?? []).map(servedTool));
  const names = new Set<string>();
  for (const tool of served) {
    if (names.has(tool.name)) throw new ConfigurationError(`serveMcp: two tools are named "${tool.name}"`);
    names.add(tool.name);
  }
  return served;
}

function agentSource(target: Agent | (() => Agent)): () => Agent {
  if (typeof target === 'function') return target;
  if (typeof (target as Agent | null)?.prompt$ !== 'function') {
    throw new ConfigurationError('serveMcp: the target must be an Agent, a function making one, or an array of tools');
  }
  return () => target;
}

/** One call of the agent tool: a run of the agent, cancelled by `signal`, its progress reported. */
function runAgent(
  agent: Agent,
  args: unknown,
  signal: AbortSignal,
  progress: (message: string) => void,
): Promise<McpCallResult> {
  const prompt = (args as { prompt?: unknown } | null)?.prompt;
  if (typeof prompt !== 'string') return Promise.resolve(errorResult('Invalid arguments: `prompt` must be a string'));
  return new Promise<McpCallResult>((resolve) => {
    let end: AgentEndEvent | undefined;
    // The run gets the request's signal: a cancelled request cancels the run, which then closes itself and completes.
    // eslint-disable-next-line rxjs-x/no-ignored-subscription
    agent.prompt$(prompt, { signal }).subscribe({
      next: (event) => {
        if (event.type === 'agent_end') end = event;
        const message = progressMessage(event);
        if (message !== undefined) progress(message);
      },
      error: (error: unknown) => resolve(errorResult(`The agent failed: ${errorMessageOf(error)}`)),
      complete: () => resolve(agentAnswer(end)),
    });
  });
}

function progressMessage(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'turn_start':
      return `turn ${event.turnIndex + 1}`;
    case 'tool_execution_start':
      return `calling ${event.toolName}`;
    case 'tool_execution_end':
      return `${event.toolName} ${event.isError ? 'failed' : 'done'}`;
    case 'message_end':
      return event.message.role === 'assistant' ? textOf(event.message).slice(0, 1_000) || undefined : undefined;
    default:
      return undefined;
  }
}

function agentAnswer(end: AgentEndEvent | undefined): McpCallResult {
  if (end === undefined) return errorResult('The agent run did not end');
  let last: Message | undefined;
  for (let i = end.messages.length - 1; i >= 0 && last === undefined; i--) {
    if (end.messages[i]!.role === 'assistant') last = end.messages[i];
  }
  if (end.outcome === 'completed' || end.outcome === 'stopped') {
    return { content: [{ type: 'text', text: last === undefined ? '' : textOf(last) }] };
  }
  const why = last?.role === 'assistant' && last.errorMessage !== undefined ? `: ${last.errorMessage}` : '';
  return errorResult(`The agent run ended ${end.outcome}${why}`);
}

/** A cubepi tool served as an MCP tool: validated as in a run, executed with the request's signal. */
function servedTool(tool: AnyAgentTool): ServedTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    run: async (args, signal, progress) => {
      const validated = await validateToolArguments(tool, args);
      if (!validated.ok) return errorResult(validated.message);
      try {
        const raw = await settleTool(tool, validated.args, signal, (partial) => {
          const text = partial.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
          progress(text.slice(0, 1_000));
        });
        const result: AgentToolResult = typeof raw === 'string' ? { content: [{ type: 'text', text: raw }] } : raw;
        const problem = toolResultProblem(result);
        if (problem !== undefined) return errorResult(`Tool ${tool.name} returned an invalid result: ${problem}`);
        return {
          content: result.content.map((block) => ({ ...block })),
          ...(result.isError === true ? { isError: true } : {}),
        };
      } catch (error) {
        return errorResult(`Tool ${tool.name} failed: ${errorMessageOf(error)}`);
      }
    },
  };
}

/** Runs `execute` to its result, whatever it returns: a value, a Promise, or an Observable (its last value). */
function settleTool(
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  signal: AbortSignal,
  onUpdate: (partial: AgentToolResult) => void,
): Promise<AgentToolResult | string> {
  const id = `mcp_${Date.now().toString(36)}`;
  const output: unknown = tool.execute(id, args, {
    signal,
    onUpdate,
    toolCall: { type: 'toolCall', id, name: tool.name, arguments: args },
    run: { runId: id, threadId: undefined, depth: 0, deadlineAt: undefined, budgetSignal: undefined },
    // Served outside any run: no budget counts what the tool spends.
    chargeUsage: () => undefined,
  });
  return new Promise((resolve, reject) => {
    // A cancelled request settles at once, whether or not the tool stops (nobody waits for its answer any more).
    const held: { subscription?: Subscription } = {};
    const onAbort = () => {
      held.subscription?.unsubscribe();
      reject(signal.reason instanceof Error ? signal.reason : new Error('the request was cancelled'));
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const done = (settle: () => void) => {
      signal.removeEventListener('abort', onAbort);
      settle();
    };
    if (!isObservable(output)) {
      Promise.resolve(output as AgentToolResult | string | PromiseLike<AgentToolResult | string>).then(
        (value) => done(() => resolve(value)),
        (error: unknown) => done(() => reject(error)),
      );
      return;
    }
    let last: AgentToolResult | string | undefined;
    let has = false;
    held.subscription = (output as Observable<AgentToolResult | string>).subscribe({
      next: (value) => {
        if (has && typeof last !== 'string' && last !== undefined) onUpdate(last);
        last = value;
        has = true;
      },
      error: (error: unknown) => done(() => reject(error)),
      complete: () =>
        done(() => (has ? resolve(last!) : reject(new Error(`Tool ${tool.name} completed without a result`)))),
    });
  });
}

function errorResult(text: string): McpCallResult {
  return { content: [{ type: 'text', text }], isError: true };
}
