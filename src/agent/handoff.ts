/**
 * Handoffs: a tool that makes another agent the thread's active agent from the next turn on.
 * @module
 */
import { z } from 'zod';
import { defineTool } from '../tools/define-tool.js';
import { ConfigurationError, HookError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { AgentTool, AgentToolResult } from '../types/tool.js';
import type { Agent } from './agent.js';
import { profileOf } from '../loop/agent-profile.js';
import { HANDOFF_SPEC, hostOf, type HandoffSpec } from '../loop/handoff-host.js';

/** What `onHandoff` is told when its handoff is taken. */
export interface HandoffContext {
  /** The run taking the handoff. */
  readonly runId: string;
  readonly threadId: string | undefined;
  /** The agent handing off (the active one). */
  readonly from: string;
  /** The agent handed to. */
  readonly to: string;
  /** The model's call of the handoff tool. */
  readonly toolCallId: string;
  readonly toolName: string;
  /** The turn that took it. */
  readonly turnIndex: number;
  /** Fires when the run is cancelled: a long `onHandoff` should stop. */
  readonly signal: AbortSignal;
}

/** Options of {@link handoff}. */
export interface HandoffOptions {
  /** The tool's name (default `transfer_to_<agent name>`): letters, digits, `_` and `-`, at most 64 characters. */
  readonly name?: string | undefined;
  /** What the model is told the handoff is for (the tool's description): when to hand off to this agent. */
  readonly description: string;
  /**
   * What the target sees of the conversation before the handoff: applied, on each of its model calls, to the messages
   * up to and including the handoff's result (what it adds afterwards is not filtered). The stored transcript is never
   * rewritten. Must keep the transcript well-formed (each tool call with its result): see {@link removeToolCalls} and
   * {@link lastN}. Runs synchronously; a throw fails the run as a `HookError` (`transformContext`).
   */
  readonly inputFilter?: ((messages: readonly Message[]) => Message[]) | undefined;
  /**
   * Runs when the handoff is taken, before the tool's result (may return a Promise). A throw or rejection is a
   * `HookError` (middleware `handoff:<tool name>`, hook `onHandoff`) that stops the run: the call gets an error result,
   * the run ends `failed` and no switch happens.
   */
  readonly onHandoff?: ((ctx: HandoffContext) => void | PromiseLike<void>) | undefined;
}

const NO_ARGUMENTS = z.object({});

/**
 * A handoff to `agent`, offered to the model as a tool (`transfer_to_<agent name>`, taking no arguments, as in
 * OpenAI's Agents SDK). Put it in an Agent's `tools`. When the model calls it, the call is answered
 * `Transferred to <name>` and, once the turn ends, `agent` becomes the thread's active agent: from the next turn on
 * (in this run and every later one, also after a restore in another process) the model call uses its provider,
 * model, system prompt, tools and middleware, over the same transcript (filtered by `inputFilter` if given).
 *
 * `agent` is used as a configuration: its own messages, checkpointer and runs are not involved. It must have a
 * `name` (the thread stores it). A second handoff in the same turn, a handoff to the active agent, and one past the
 * run's `maxHandoffs` get an error result instead (the model is told why). See docs/handoffs.md.
 *
 * Throws {@link ConfigurationError} when `agent` is not an Agent, has no `name`, or for a bad option.
 *
 * @example
 * const billing = new Agent({ name: 'billing', provider, model, systemPrompt: 'You handle invoices.' });
 * const triage = new Agent({
 *   name: 'triage', provider, model, checkpointer, threadId,
 *   tools: [handoff(billing, { description: 'Invoices, refunds and payments' })],
 * });
 * await triage.prompt('I was charged twice'); // triage hands off; billing answers, and keeps the thread
 */
export function handoff(agent: Agent, options: HandoffOptions): AgentTool<typeof NO_ARGUMENTS> {
  const fail = (what: string): never => {
    throw new ConfigurationError(`handoff: ${what}`);
  };
  if (typeof agent !== 'object' || agent === null || profileOf(agent) === undefined) fail('expected an Agent');
  if (typeof options !== 'object' || options === null) fail('expected an options object');
  const agentName = agent.name;
  if (agentName === undefined) fail('the agent needs a `name` (the thread stores which agent is active by name)');
  if (options.inputFilter !== undefined && typeof options.inputFilter !== 'function')
    fail('`inputFilter` must be a function');
  if (options.onHandoff !== undefined && typeof options.onHandoff !== 'function')
    fail('`onHandoff` must be a function');
  const toolName = options.name ?? `transfer_to_${agentName}`;
  const spec: HandoffSpec = { agent, agentName: agentName!, toolName, inputFilter: options.inputFilter };
  const onHandoff = options.onHandoff;
  const done: AgentToolResult = { content: [{ type: 'text', text: `Transferred to ${agentName!}` }] };
  const tool = defineTool({
    name: toolName,
    description: options.description,
    parameters: NO_ARGUMENTS,
    execute: (toolCallId, _args, ctx): AgentToolResult | Promise<AgentToolResult> => {
      const host = hostOf(ctx.run);
      if (host === undefined) return refusal(`Not transferred: handoffs work in an Agent's own run only`);
      const taken = host.claim(toolCallId, spec);
      if (typeof taken === 'string') return refusal(taken);
      const result: AgentToolResult = { ...done, details: { handoff: { from: taken.from, to: agentName! } } };
      if (onHandoff === undefined) return result;
      return (async () => {
        try {
          await onHandoff({ ...taken, to: agentName!, toolCallId, toolName, signal: ctx.signal });
        } catch (error) {
          // A cancelled run is not a failed hook: the batch answers the call `aborted`, and nothing switches.
          if (ctx.signal.aborted) throw error;
          host.fail(new HookError({ middleware: `handoff:${toolName}`, hook: 'onHandoff', cause: error }));
          return refusal(`Not transferred to ${agentName!}: onHandoff failed`);
        }
        return result;
      })();
    },
  });
  Object.defineProperty(tool, HANDOFF_SPEC, { value: spec, enumerable: false });
  return tool;
}

function refusal(text: string): AgentToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
