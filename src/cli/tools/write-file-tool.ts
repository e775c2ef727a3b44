import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { defineTool } from '../../index.js';
import type { Workspace } from './workspace.js';

/**
 * `write_file`: creates or replaces a text file inside the workspace (parent directories created). Offered only with
 * `--allow-write`; each call is confirmed by the user unless `--yes`. Sequential: two writes never race.
 */
export function writeFileTool(workspace: Workspace) {
  return defineTool({
    name: 'write_file',
    description: 'Create or overwrite a text file in the working directory with the given content.',
    executionMode: 'sequential',
    parameters: z.object({
      path: z.string().min(1).describe('Path relative to the working directory'),
      content: z.string().describe('The whole new content of the file'),
    }),
    execute: async (_id, { path, content }, { signal }) => {
      const file = await workspace.resolve(path);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content, { encoding: 'utf8', signal });
      const bytes = Buffer.byteLength(content);
      return {
        content: [{ type: 'text', text: `Wrote ${bytes} bytes to ${workspace.display(file)}` }],
        details: { path: workspace.display(file), bytes },
      };
    },
  });
}
