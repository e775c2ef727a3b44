/**
 * Tools the client runs: declared here (name, description, parameters) so the model can call them, executed by a
 * front end, which answers the held call with the tool's output.
 * @module
 */
import type { z } from 'zod';
import { parametersFromJsonSchema } from './json-schema-parameters.js';
import { ConfigurationError } from '../types/errors.js';
import type { JsonSchema } from '../types/provider.js';
import type { AgentTool, AnyAgentTool } from '../types/tool.js';
import { defineTool } from './define-tool.js';

/** What {@link clientTool} takes: a tool's name, description and parameters, and no `execute`. */
export interface ClientToolSpec {
  /** 1–64 letters, digits, `_` and `-`. */
  readonly name: string;
  readonly description: string;
  /**
   * The arguments: a zod 4 object schema, or a JSON Schema of an object (a front end's, e.g. AG-UI's
   * `RunAgentInput.tools[].parameters`; checked with `z.fromJSONSchema`, and sent to the model as written).
   */
  readonly parameters: z.ZodType | JsonSchema;
}

/**
 * A client tool: a tool the model can call that runs in the client (the AI SDK's client-side tools, handled by
 * `useChat`'s `onToolCall`; AG-UI's frontend tools), not in this process. A call to it is validated, then gated by
 * `beforeToolCall` like any call (a `ToolGuard` may deny it or ask first), then *held*: the run ends `suspended` with
 * an `ApprovalRequest` whose `clientTool` is `true` (reason `client_tool`), and the client's answer
 * `agent.respond(requestId, { output })` becomes the call's one result and resumes the run (`{ deny: reason }` refuses
 * it; `abortPending` aborts it). Give it in the agent's `tools`, or for one run in `RunOptions.tools`.
 *
 * Throws {@link ConfigurationError} for an invalid name or description, or parameters that are neither a zod object
 * schema nor a JSON Schema of an object that zod can check.
 *
 * @example
 * const confirm = clientTool({
 *   name: 'askForConfirmation',
 *   description: 'Ask the user to confirm',
 *   parameters: z.object({ message: z.string() }),
 * });
 * const agent = new Agent({ provider, model, tools: [weather, confirm] });
 * // the run ends suspended: agent.pending[0].clientTool === true
 * await agent.respond(agent.pending[0]!.requestId, { output: 'Yes, confirmed' });
 */
export function clientTool(spec: ClientToolSpec): AnyAgentTool {
  if (typeof spec !== 'object' || spec === null)
    throw new ConfigurationError('clientTool: expected a tool definition object');
  const parameters = spec.parameters as unknown;
  const zod = typeof (parameters as { safeParse?: unknown } | null)?.safeParse === 'function';
  const execute = () => {
    // Never called by the runtime (a client tool's call is held); only by someone calling execute directly.
    return { content: [{ type: 'text' as const, text: `${spec.name} runs in the client` }], isError: true };
  };
  if (zod) {
    const tool: AgentTool = defineTool({ ...spec, parameters: parameters as z.ZodType, execute });
    return { ...tool, client: true };
  }
  const schema = parametersFromJsonSchema(parameters);
  if (!schema.ok) throw new ConfigurationError(`clientTool: tool "${String(spec.name)}": ${schema.reason}`);
  if (typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) {
    throw new ConfigurationError(
      `clientTool: invalid tool name ${JSON.stringify(spec.name)} (use 1–64 letters, digits, "_" or "-")`,
    );
  }
  if (typeof spec.description !== 'string') {
    throw new ConfigurationError(`clientTool: tool "${spec.name}" needs a description string`);
  }
  // The JSON Schema goes to the model as written; the zod schema made from it checks the arguments.
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: schema.inputSchema,
    parameters: schema.parameters,
    execute,
    client: true,
  };
}
