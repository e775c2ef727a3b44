/**
 * The built-in tools of the `cubepi` command, confined to one directory.
 * @module
 */
import type { AnyAgentTool } from '../../index.js';
import type { ToolName } from '../load-config.js';
import { calculatorTool } from './calculator-tool.js';
import { currentTimeTool } from './current-time-tool.js';
import { listFilesTool } from './list-files-tool.js';
import { readFileTool } from './read-file-tool.js';
import { runCommandTool } from './run-command-tool.js';
import { searchFilesTool } from './search-files-tool.js';
import { Workspace } from './workspace.js';
import { writeFileTool } from './write-file-tool.js';

/** Options of {@link builtinTools}. */
export interface BuiltinToolsOptions {
  /** The directory the file tools and commands are confined to. */
  readonly dir: string;
  /** Offer `write_file` (default false). */
  readonly allowWrite?: boolean | undefined;
  /** Offer `run_command` (default false). */
  readonly allowShell?: boolean | undefined;
  /** Only these tools (default: all); `write_file` and `run_command` still need their flag. */
  readonly only?: readonly ToolName[] | undefined;
}

/** The risky tools: offered only with their flag, and each call is confirmed (`approvalPolicy`). */
export const RISKY_TOOLS: ReadonlySet<string> = new Set(['write_file', 'run_command']);

/**
 * `read_file`, `list_files`, `search_files`, `calculator`, `current_time`, plus `write_file` with `allowWrite` and
 * `run_command` with `allowShell`, all confined to `dir` (see {@link Workspace}).
 */
export function builtinTools(options: BuiltinToolsOptions): AnyAgentTool[] {
  const workspace = new Workspace(options.dir);
  const tools: AnyAgentTool[] = [
    readFileTool(workspace),
    listFilesTool(workspace),
    searchFilesTool(workspace),
    calculatorTool(),
    currentTimeTool(),
  ];
  if (options.allowWrite === true) tools.push(writeFileTool(workspace));
  if (options.allowShell === true) tools.push(runCommandTool(workspace));
  const only = options.only;
  return only === undefined ? tools : tools.filter((tool) => (only as readonly string[]).includes(tool.name));
}
