import { readdir } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool } from '../../index.js';
import { clipOutput } from './clip-output.js';
import type { Workspace } from './workspace.js';

/** `list_files`: the entries of a directory inside the workspace, one a line, directories ending with `/`. */
export function listFilesTool(workspace: Workspace) {
  return defineTool({
    name: 'list_files',
    description: 'List the files and directories of a directory in the working directory (directories end with /).',
    parameters: z.object({ path: z.string().default('.').describe('Directory relative to the working directory') }),
    execute: async (_id, { path }, { signal }) => {
      const dir = await workspace.resolve(path);
      signal.throwIfAborted();
      const entries = await readdir(dir, { withFileTypes: true });
      const names = entries
        .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
        .sort((a, b) => a.localeCompare(b));
      return {
        content: [{ type: 'text', text: clipOutput(names.join('\n')) }],
        details: { path: workspace.display(dir), count: names.length },
      };
    },
  });
}
