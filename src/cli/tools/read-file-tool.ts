import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool } from '../../index.js';
import { clipOutput } from './clip-output.js';
import type { Workspace } from './workspace.js';

/** `read_file`: a text file inside the workspace, optionally a range of lines. Cancellable (the read's signal). */
export function readFileTool(workspace: Workspace) {
  return defineTool({
    name: 'read_file',
    description: 'Read a text file in the working directory. Lines are numbered from 1.',
    parameters: z.object({
      path: z.string().min(1).describe('Path relative to the working directory'),
      offset: z.number().int().min(1).optional().describe('First line to read (default 1)'),
      limit: z.number().int().min(1).optional().describe('How many lines (default: all, up to 2000)'),
    }),
    execute: async (_id, { path, offset = 1, limit = 2000 }, { signal }) => {
      const file = await workspace.resolve(path);
      const text = await readFile(file, { encoding: 'utf8', signal });
      const lines = text.split('\n');
      const slice = lines.slice(offset - 1, offset - 1 + limit);
      const rest = lines.length - (offset - 1) - slice.length;
      const more = rest > 0 ? `\n… (${rest} more lines: read with offset ${offset + slice.length})` : '';
      return {
        content: [{ type: 'text', text: clipOutput(slice.join('\n')) + more }],
        details: { path: workspace.display(file), lines: lines.length },
      };
    },
  });
}
