/**
 * Agents as tools of other agents: a sub-agent run as one tool call.
 * @module
 */
import { Observable } from 'rxjs';
import { z } from 'zod';
import { defineTool } from '../tools/define-tool.js';
import type { AgentEndEvent, AgentEvent, ParentRun } from '../types/agent-events.js';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import { textOf, type Message } from '../types/messages.js';
import type { AgentTool, AgentToolResult, ToolExecutionMode } from '../types/tool.js';
import type { Agent } from './agent.js';

/** The arguments of an agent tool without `parameters`: the task for the sub-agent. */
const PROMPT_SCHEMA = z.object({
  prompt: z.string().describe('The task for the sub-agent, with everything it needs to know: it sees nothing else'),
});

/** The default schema of {@link agentTool}'s arguments. */
export type AgentToolPromptSchema = typeof PROMPT_SCHEMA;

/** What `createAgent` and `threadId` are told about the call a sub-agent runs for. */
export interface SubagentContext {
  /** The parent's tool call. */
  readonly toolCallId: string;
  /** The agent tool's name. */
  readonly toolName: string;
  /** The run making the call. */
  readonly parent: ParentRun;
  /**
   * The thread the sub-agent's run belongs to: the `threadId` option's answer, or by default
   * `<parent thread>/<tool name>/<tool call id>` (without the first part when the parent has no thread). Give it to
   * the child `Agent` with its checkpointer, so its transcript is stored under its own id, linked to the parent's.
   */
  readonly threadId: string;
}

/** Options of {@link agentTool}: exactly one of `agent` and `createAgent`. */
export interface AgentToolOptions<TSchema extends z.ZodType = AgentToolPromptSchema> {
  /** The tool's name (1–64 letters, digits, `_` or `-`). */
  readonly name: string;
  /** What the sub-agent is good at, for the parent's model. */
  readonly description: string;
  /**
   * One agent for every call: it keeps its transcript from call to call, and runs one call at a time (the tool is
   * `sequential` unless `executionMode` says otherwise; a call made while it is busy gets an error result).
   */
  readonly agent?: Agent | undefined;
  /** A fresh agent per call (its own context, its own thread): called with the call's {@link SubagentContext}. */
  readonly createAgent?: ((context: SubagentContext) => Agent) | undefined;
  /** The arguments' schema; by default `{ prompt: string }`. */
  readonly parameters?: TSchema | undefined;
  /**
   * Turns the validated arguments into the sub-agent's prompt. By default the `prompt` field with the default schema,
   * and the arguments as JSON with a schema of your own.
   */
  readonly toPrompt?: ((args: z.output<TSchema>) => string | Message | readonly Message[]) | undefined;
  /** The sub-agent's thread id for a call (see {@link SubagentContext.threadId} for the default). */
  readonly threadId?: ((context: Omit<SubagentContext, 'threadId'>) => string) | undefined;
  /**
   * The deepest a run started by this tool may be nested: a call from a run at depth `maxDepth` (or deeper) is
   * answered with an error instead of starting one more level. A top-level run is at depth 0, so the default of 3
   * allows a sub-agent, its sub-agent and theirs.
   */
  readonly maxDepth?: number | undefined;
  readonly executionMode?: ToolExecutionMode | undefined;
  readonly timeoutMs?: number | undefined;
}

/**
 * Details of a `tool_execution_update` that carries one event of a sub-agent's run (see {@link subagentEventOf}).
 */
export interface SubagentEvent {
  readonly type: 'subagent_event';
  /** The agent tool's name and the parent's tool call. */
  readonly toolName: string;
  readonly toolCallId: string;
  /** The run that made the call. */
  readonly parentRunId: string;
  /** The sub-agent's run, and its depth (the parent's plus one). */
  readonly childRunId: string;
  readonly depth: number;
  /** The sub-agent's event, as its own subscribers see it (a nested sub-agent's events arrive wrapped once more). */
  readonly event: AgentEvent;
}

/** What an agent tool's result carries in `details`: where the sub-agent's run and transcript are. */
export interface AgentToolDetails {
  readonly childRunId: string | undefined;
  readonly threadId: string;
  readonly parentRunId: string;
  readonly outcome: AgentEndEvent['outcome'] | undefined;
}

/** The default deepest nesting of agent tools. */
export const DEFAULT_MAX_AGENT_DEPTH = 3;

/**
 * A tool that runs a sub-agent on the call's input and answers with the sub-agent's final text.
 *
 * - **Events.** Every event of the sub-agent's run reaches the parent's subscribers as a `tool_execution_update` of
 *   the call, its `partialResult.details` a {@link SubagentEvent} (the child's run id, the parent's run id, the tool
 *   call id, the depth); {@link subagentEventOf} picks them out. The child's `agent_start` names its `parent`.
 * - **Cancellation.** Cancelling the parent run (`abort()`, unsubscribing, a signal, a deadline, the tool's timeout)
 *   cancels the sub-agent's run the same way: its provider request is aborted and its transcript closed.
 * - **Usage.** The sub-agent reports each model call's usage to the call as it ends (`chargeUsage`): stored on the
 *   result message however the call ends (a cancelled sub-agent's spend so far included), counted in the parent's
 *   `agent_end.usage` and by a `BudgetCap` on the parent.
 * - **Limits.** The sub-agent's run inherits the parent's deadline (the earlier of it and its own applies) and budget:
 *   when a `BudgetCap` on the parent (or above) is reached — by the parent's calls or any sub-agent's — a sub-agent
 *   still running is cancelled at once, its provider request aborted, and its call gets an error result saying so.
 * - **Threads.** With `createAgent`, each call gets its own thread id, by default `<parent thread>/<name>/<call id>`;
 *   give it to the child's checkpointer and its transcript is stored under it. The result's `details`
 *   ({@link AgentToolDetails}) names the child's thread and run, so the parent's transcript links to it.
 * - **Depth.** A call from a run at depth `maxDepth` (default {@link DEFAULT_MAX_AGENT_DEPTH}) or deeper gets an
 *   error result and starts nothing, so agents calling each other cannot recurse forever.
 * - **Outcomes.** A sub-agent that fails, is cancelled or suspends for approval gives an error result saying so; one
 *   that completes or is stopped answers with the text of its last assistant message.
 *
 * Throws {@link ConfigurationError} for invalid options (as `defineTool` does, plus: exactly one of `agent` and
 * `createAgent`, and a positive integer `maxDepth`).
 *
 * @example
 * const researcher = agentTool({
 *   name: 'research',
 *   description: 'Researches a question and answers with sources',
 *   createAgent: ({ threadId }) => new Agent({ provider, model, tools, checkpointer, threadId }),
 * });
 * const lead = new Agent({ provider, model, tools: [researcher] });
 */
export function agentTool<TSchema extends z.ZodType = AgentToolPromptSchema>(
  options: AgentToolOptions<TSchema>,
): AgentTool<TSchema, AgentToolDetails | SubagentEvent> {
  if (typeof options !== 'object' || options === null) throw new ConfigurationError('agentTool: expected options');
  const { name, agent, createAgent } = options;
  if ((agent === undefined) === (createAgent === undefined)) {
    throw new ConfigurationError(`agentTool "${String(name)}": give exactly one of \`agent\` and \`createAgent\``);
  }
  if (agent !== undefined && typeof agent.prompt$ !== 'function') {
    throw new ConfigurationError(`agentTool "${name}": \`agent\` must be an Agent`);
  }
  if (createAgent !== undefined && typeof createAgent !== 'function') {
    throw new ConfigurationError(`agentTool "${name}": \`createAgent\` must be a function`);
  }
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_AGENT_DEPTH;
  if (!Number.isInteger(maxDepth) || maxDepth < 1) {
    throw new ConfigurationError(`agentTool "${name}": \`maxDepth\` must be a positive integer`);
  }
  const parameters = (options.parameters ?? PROMPT_SCHEMA) as TSchema;
  const toPrompt =
    options.toPrompt ??
    ((args: z.output<TSchema>) =>
      options.parameters === undefined ? (args as { prompt: string }).prompt : JSON.stringify(args));
  const threadIdOf = options.threadId;

  return defineTool<TSchema, AgentToolDetails | SubagentEvent>({
    name,
    description: options.description,
    parameters,
    executionMode: options.executionMode ?? (agent !== undefined ? 'sequential' : undefined),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    execute: (toolCallId, args, { signal, onUpdate, run, chargeUsage }) =>
      new Observable<AgentToolResult<AgentToolDetails>>((subscriber) => {
        const parent: ParentRun = {
          runId: run.runId,
          toolCallId,
          ...(run.threadId !== undefined ? { threadId: run.threadId } : {}),
          depth: run.depth,
        };
        if (run.depth >= maxDepth) {
          subscriber.next(
            errorResult(
              `Agent tool ${name} was not run: sub-agents may be nested at most ${maxDepth} deep, and this call comes from depth ${run.depth}`,
            ),
          );
          subscriber.complete();
          return;
        }
        const base = { toolCallId, toolName: name, parent };
        const threadId = threadIdOf?.(base) ?? defaultThreadId(run.threadId, name, toolCallId);
        let child: Agent;
        let prompt: string | Message | readonly Message[];
        try {
          child = agent ?? createAgent!({ ...base, threadId });
          prompt = toPrompt(args);
        } catch (error) {
          subscriber.next(errorResult(`Agent tool ${name} could not start its agent: ${errorMessageOf(error)}`));
          subscriber.complete();
          return;
        }
        let childRunId: string | undefined;
        let end: AgentEndEvent | undefined;
        const details = (): AgentToolDetails => ({
          childRunId,
          threadId,
          parentRunId: run.runId,
          outcome: end?.outcome,
        });
        // The child's run gets the call's signal, so a cancelled parent cancels it at once (its closing message names
        // the signal); the teardown (the loop leaving this Observable) cancels it too, by unsubscribing. It inherits
        // the parent's deadline and budget signal, and reports each model call's usage to this call as it ends.
        const limits = { deadlineAt: run.deadlineAt, budgetSignal: run.budgetSignal, charge: chargeUsage };
        return child.prompt$(prompt, { signal, parent, limits, principal: run.principal }).subscribe({
          next: (event) => {
            if (event.type === 'agent_start') childRunId = event.runId;
            else if (event.type === 'agent_end') end = event;
            onUpdate({
              content: [],
              details: {
                type: 'subagent_event',
                toolName: name,
                toolCallId,
                parentRunId: run.runId,
                childRunId: childRunId ?? event.runId,
                depth: run.depth + 1,
                event,
              },
            });
          },
          error: (error: unknown) => {
            subscriber.next({
              ...errorResult(`Agent tool ${name} failed: ${errorMessageOf(error)}`),
              details: details(),
            });
            subscriber.complete();
          },
          complete: () => {
            // A child cancelled by the deadline it inherited ended at the parent's own deadline, whose cancellation
            // is due now: leave the call open for it, so it ends `aborted` like every call the deadline cut short.
            const deadlinePassed = run.deadlineAt !== undefined && Date.now() >= run.deadlineAt;
            if (end?.outcome === 'cancelled' && deadlinePassed && !signal.aborted) return;
            subscriber.next(finalResult(name, end, details()));
            subscriber.complete();
          },
        });
      }),
  });
}

/**
 * The sub-agent event a `tool_execution_update` carries, or `undefined` for any other event (see {@link agentTool}).
 *
 * @example
 * agent.prompt$('Plan the trip').pipe(
 *   map(subagentEventOf),
 *   filter((nested) => nested?.event.type === 'tool_execution_start'),
 * );
 */
export function subagentEventOf(event: AgentEvent): SubagentEvent | undefined {
  if (event.type !== 'tool_execution_update') return undefined;
  const details = event.partialResult.details as Partial<SubagentEvent> | null | undefined;
  return typeof details === 'object' && details !== null && details.type === 'subagent_event'
    ? (details as SubagentEvent)
    : undefined;
}

function defaultThreadId(parentThreadId: string | undefined, name: string, toolCallId: string): string {
  return parentThreadId === undefined ? `${name}/${toolCallId}` : `${parentThreadId}/${name}/${toolCallId}`;
}

function errorResult(text: string): AgentToolResult<AgentToolDetails> {
  return { content: [{ type: 'text', text }], isError: true };
}

/** The tool's answer from the sub-agent's `agent_end`. */
function finalResult(
  name: string,
  end: AgentEndEvent | undefined,
  details: AgentToolDetails,
): AgentToolResult<AgentToolDetails> {
  if (end === undefined) return { ...errorResult(`Agent tool ${name}: the sub-agent's run did not end`), details };
  const { outcome } = end;
  let last: Message | undefined;
  for (let i = end.messages.length - 1; i >= 0 && last === undefined; i--) {
    if (end.messages[i]!.role === 'assistant') last = end.messages[i];
  }
  if (outcome === 'completed' || outcome === 'stopped') {
    return { content: [{ type: 'text', text: last === undefined ? '' : textOf(last) }], details };
  }
  const why =
    outcome === 'suspended'
      ? `is waiting for approval of ${end.pending?.map((request) => request.toolName).join(', ') ?? 'a tool call'}`
      : `${outcome === 'failed' ? 'failed' : 'was cancelled'}${
          last?.role === 'assistant' && last.errorMessage !== undefined ? `: ${last.errorMessage}` : ''
        }`;
  return { ...errorResult(`Agent tool ${name}: the sub-agent ${why}`), details };
}
