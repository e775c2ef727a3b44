/**
 * Keeping an agent's tools in step with an MCP server's tool list, and closing the server with the agent.
 * @module
 */
import { catchError, defer, EMPTY, map, switchMap } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import type { AnyAgentTool } from '../types/tool.js';
import type { McpToolSet } from './mcp-tools.js';

/** Options of {@link syncMcpTools}. */
export interface SyncMcpToolsOptions {
  /** Close the tool set (a stdio server's process ends) when the agent is disposed. Default `true`. */
  readonly closeOnDispose?: boolean | undefined;
  /**
   * A refresh that fails — the server cannot be reached, or its new tools clash by name with the agent's — keeps the
   * tools the agent had; the error goes here (default `console.warn`).
   */
  readonly onError?: ((error: unknown) => void) | undefined;
}

/**
 * Gives `agent` the tools of an MCP server and keeps them current: lists them now (connecting, if the set has not
 * yet), adds them to the agent's tools, and each time the server says its list changed (`toolsChanged$`) lists again
 * and replaces them (the agent's other tools stay). A run in progress picks the new set up at its next turn — the
 * request of that model call lists it — and a tool batch already started keeps the tools it started with (see
 * `Agent.setTools`). When the agent is disposed, the syncing stops and the set is closed (unless `closeOnDispose` is
 * `false`).
 *
 * Resolves with the tools it added. Rejects when the first listing fails (the server cannot be reached) or its tools
 * clash by name with the agent's (an `InvalidInputError`): nothing is registered, the set stays open. Rejects with
 * `InvalidStateError` when the agent was disposed meanwhile: the set is closed then (unless `closeOnDispose` is
 * `false`).
 *
 * @example
 * const agent = new Agent({ provider, model });
 * await syncMcpTools(agent, mcpTools({ command: 'npx', args: ['-y', 'my-mcp-server'] }, { prefix: 'my_' }));
 * await agent.prompt('…');
 * await agent.dispose(); // the server's process ends
 */
export async function syncMcpTools(
  agent: Agent,
  set: McpToolSet,
  options: SyncMcpToolsOptions = {},
): Promise<readonly AnyAgentTool[]> {
  const onError =
    options.onError ??
    ((error: unknown) => console.warn('cubepi/mcp: the tools of an MCP server could not be refreshed:', error));
  let installed: readonly AnyAgentTool[] = [];
  /** Each listing's number, so that an older listing finishing late never replaces a newer one. */
  let listed = 0;
  let applied = 0;
  const install = (tools: readonly AnyAgentTool[], number: number) => {
    if (number < applied) return;
    const previous = new Set(installed);
    agent.setTools([...agent.state.tools.filter((tool) => !previous.has(tool)), ...tools]);
    installed = tools;
    applied = number;
  };
  // Listening before the first listing, so a change announced meanwhile is not missed. A listing cannot be cancelled
  // (`tools()` takes no signal); switchMap drops the answer of one a newer change overtook.
  const subscription = set.toolsChanged$
    .pipe(
      switchMap(() => {
        const number = ++listed;
        return defer(() => set.tools()).pipe(
          map((tools) => install(tools, number)),
          catchError((error: unknown) => (onError(error), EMPTY)),
        );
      }),
    )
    .subscribe();
  const stop = async () => {
    subscription.unsubscribe();
    if (options.closeOnDispose !== false) await set.close();
  };
  const first = ++listed;
  try {
    install(await set.tools(), first);
  } catch (error) {
    // The set stays open: the caller may try again.
    subscription.unsubscribe();
    throw error;
  }
  try {
    agent.onDispose(stop);
  } catch (error) {
    // The agent was disposed during the listing: the set is closed, as its dispose would have.
    await stop();
    throw error;
  }
  return installed;
}
