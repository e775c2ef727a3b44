import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { defineTool } from '../../index.js';
import type { Workspace } from './workspace.js';

const SKIPPED = new Set(['.git', 'node_modules', '.cubepi', 'dist']);
const MAX_MATCHES = 200;
const MAX_FILE_BYTES = 1_000_000;

/**
 * `search_files`: lines matching a regular expression in the text files under a directory of the workspace
 * (`path:line: text`), skipping `.git`, `node_modules`, `dist` and `.cubepi`. Checks the signal between files.
 */
export function searchFilesTool(workspace: Workspace) {
  return defineTool({
    name: 'search_files',
    description:
      'Search the text files under a directory of the working directory for a regular expression; ' +
      'answers path:line: text for each matching line (at most 200).',
    parameters: z.object({
      pattern: z.string().min(1).describe('A JavaScript regular expression, e.g. "TODO|FIXME"'),
      path: z.string().default('.').describe('Directory to search, relative to the working directory'),
      ignoreCase: z.boolean().default(false),
    }),
    execute: async (_id, { pattern, path, ignoreCase }, { signal }) => {
      let regex: RegExp;
      try {
        regex = new RegExp(pattern, ignoreCase ? 'i' : '');
      } catch (error) {
        throw new Error(`invalid regular expression: ${(error as Error).message}`, { cause: error });
      }
      const start = await workspace.resolve(path);
      const matches: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const entry of await readdir(dir, { withFileTypes: true })) {
          signal.throwIfAborted();
          if (matches.length >= MAX_MATCHES) return;
          const full = join(dir, entry.name);
          if (entry.isDirectory()) {
            if (!SKIPPED.has(entry.name)) await walk(full);
          } else if (entry.isFile()) {
            const text = await readFile(full, { signal }).catch(() => undefined);
            if (text === undefined || text.length > MAX_FILE_BYTES || text.includes(0)) continue;
            const lines = text.toString('utf8').split('\n');
            for (let i = 0; i < lines.length && matches.length < MAX_MATCHES; i++) {
              if (regex.test(lines[i]!))
                matches.push(`${workspace.display(full)}:${i + 1}: ${lines[i]!.slice(0, 300)}`);
            }
          }
        }
      };
      await walk(start);
      const text = matches.length === 0 ? `No match for /${pattern}/` : matches.join('\n');
      return { content: [{ type: 'text', text }], details: { matches: matches.length } };
    },
  });
}
