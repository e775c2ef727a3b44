/**
 * Changing a run's tools between turns.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { AnyAgentTool } from '../types/tool.js';
import type { RunState } from './run-state.js';
import { validateTools } from './run-settings.js';

/**
 * Makes `tools` the run's tools when they are a new array (the same array costs one comparison): validated as the
 * `tools` option is (a {@link ConfigurationError} fails the run), indexed by name. Called at the start of a turn only,
 * so a batch keeps the tools it started with.
 */
export function useTools(run: RunState, tools: readonly AnyAgentTool[]): void {
  if (tools === run.tools) return;
  validateTools(tools, (what) => {
    throw new ConfigurationError(`getTools: ${what}`);
  });
  run.tools = tools;
  run.toolsByName = new Map(tools.map((tool) => [tool.name, tool]));
  run.hasSequentialTool = tools.some((tool) => tool.executionMode === 'sequential');
}
