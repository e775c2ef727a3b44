/**
 * cubepi as an MCP server: an agent as one MCP tool, or cubepi tools as MCP tools.
 * @module
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { isObservable, Observable, type Subscription } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import { validateToolArguments } from '../tools/define-tool.js';
import type { ApprovalRequest } from '../types/approval.js';
import { toolResultProblem } from '../types/check-tool-result.js';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { AgentToolResult, AnyAgentTool } from '../types/tool.js';
import { mcpContentOf } from './mcp-content.js';
import {
  ANSWER_INPUT,
  ANSWER_TOOL,
  answerApproval,
  answerOfElicitation,
  approvalElicitation,
  errorResult,
  HeldApprovals,
  promptAgent,
  type McpCallResult,
  type ServedCall,
} from './serve-agent.js';

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
  /**
   * With an agent: how long an approval asked of the client (MCP elicitation) may wait for its answer (default 10
   * minutes); past it, the run is ended and the call answers `isError`.
   */
  readonly approvalTimeoutMs?: number | undefined;
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

/** A tool of the server: its listing and how a call runs. */
interface ServedTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  /** Listed only to clients that cannot answer an elicitation (the tool answering approvals). */
  readonly withoutElicitation?: true;
  run(args: unknown, call: ServedCall): Promise<McpCallResult>;
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
 * - **Approvals** (a `ToolGuard` asking, any `pause`): a client that declares form elicitation is asked inside the
 *   call (`elicitation/create`, a form `{ approve, reason? }`); only an accepted `approve: true` runs the call, and the
 *   call answers with the resumed run's reply. A client that does not gets the pending requests (text, and
 *   `structuredContent: { status: 'awaiting_approval', pending }`) and is listed a tool `answer_approval` taking
 *   `{ requestId, approve, reason? }`: the answer to the last open request resumes the run and answers with its reply.
 *   An elicitation that fails (or passes `approvalTimeoutMs`) ends the run (`abortPending`) and answers `isError`.
 * - **Tools** (the target, and `options.tools`): each tool with its JSON Schema; arguments are validated as in a run (a failure answers `isError` with
 *   every issue); `onUpdate` becomes progress; the client's cancellation aborts the tool's `signal`.
 *
 * Requests other than pings before `initialize` are answered `-32600`. Errors on the Observable only when the server cannot connect. Throws {@link ConfigurationError} for an invalid target.
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
  const approvalTimeoutMs = options.approvalTimeoutMs ?? 600_000;
  if (!(typeof approvalTimeoutMs === 'number' && approvalTimeoutMs > 0))
    throw new ConfigurationError('serveMcp: `approvalTimeoutMs` must be a positive number');
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
    // Form elicitation: declared as `elicitation.form`, or as an empty `elicitation` (before URL mode existed).
    const canElicit = () => {
      const elicitation = server.getClientCapabilities()?.elicitation;
      return elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined);
    };
    const held = new HeldApprovals();
    server.setRequestHandler(ListToolsRequestSchema, () => {
      initialized();
      return {
        tools: tools
          .filter((tool) => tool.withoutElicitation !== true || !canElicit())
          .map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
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
      const ask = canElicit()
        ? async (approval: ApprovalRequest) =>
            answerOfElicitation(
              await extra.sendRequest(
                { method: 'elicitation/create', params: approvalElicitation(approval) as never },
                ElicitResultSchema,
                { signal: extra.signal, timeout: approvalTimeoutMs },
              ),
            )
        : undefined;
      const result = await tool.run(request.params.arguments ?? {}, { signal: extra.signal, progress, ask, held });
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
      run: (args, call) => {
        let agent: Agent;
        try {
          agent = agentOf();
        } catch (error) {
          return Promise.resolve(errorResult(`The agent could not be created: ${errorMessageOf(error)}`));
        }
        return promptAgent(agent, args, call);
      },
    });
    served.push({
      name: ANSWER_TOOL,
      description:
        "Answers an approval request of the agent (a tool call it may only make with your approval): approve runs the call, refuse tells the agent why. Answers with the agent's reply once every request of the batch is answered.",
      inputSchema: ANSWER_INPUT,
      withoutElicitation: true,
      run: answerApproval,
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

/** A cubepi tool served as an MCP tool: validated as in a run, executed with the request's signal. */
function servedTool(tool: AnyAgentTool): ServedTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    run: async (args, { signal, progress }) => {
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
          content: result.content.map(mcpContentOf),
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
