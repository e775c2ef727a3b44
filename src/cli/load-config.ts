/**
 * The `cubepi` command's configuration: `cubepi.config.json` in the working directory, else the `cubepi` key of its
 * `package.json`. Every field is optional; options on the command line win over it.
 * @module
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { CliError, EXIT } from './cli-error.js';

/** Names of the built-in tools (docs/cli.md#tools). */
export const TOOL_NAMES = [
  'read_file',
  'list_files',
  'search_files',
  'calculator',
  'current_time',
  'write_file',
  'run_command',
] as const;

/** A tool name of the built-in set. */
export type ToolName = (typeof TOOL_NAMES)[number];

const positive = z.number().int().positive();

/** The shape of the configuration (validated; unknown keys are refused, so a typo is caught). */
export const CliConfigSchema = z.strictObject({
  systemPrompt: z.string().optional(),
  provider: z.enum(['anthropic', 'openai', 'openai-responses', 'faux']).optional(),
  model: z.string().min(1).optional(),
  db: z.string().min(1).optional(),
  tools: z.array(z.enum(TOOL_NAMES)).optional(),
  middleware: z
    .strictObject({
      maxTurns: positive.optional(),
      slidingWindow: positive.optional(),
      toolCallLimit: positive.optional(),
      budgetUsd: z.number().positive().optional(),
      retry: z.union([z.boolean(), positive]).optional(),
    })
    .optional(),
});

/** The configuration of the `cubepi` command. */
export type CliConfig = z.infer<typeof CliConfigSchema>;

/** Where the configuration came from (for messages), and what it says. */
export interface LoadedConfig {
  readonly config: CliConfig;
  /** `cubepi.config.json`, `package.json#cubepi`, or undefined when there is none. */
  readonly source: string | undefined;
}

/**
 * Reads the configuration of `dir`: `cubepi.config.json` first, else `package.json#cubepi`, else `{}`. A file that is
 * not JSON, or a configuration that does not fit {@link CliConfigSchema}, is a `CliError` naming the file and the
 * field (exit code 2).
 */
export async function loadConfig(dir: string): Promise<LoadedConfig> {
  const own = await readJson(join(dir, 'cubepi.config.json'));
  if (own !== undefined) return { config: check(own, 'cubepi.config.json'), source: 'cubepi.config.json' };
  const pkg = await readJson(join(dir, 'package.json'));
  const section = typeof pkg === 'object' && pkg !== null ? (pkg as Record<string, unknown>).cubepi : undefined;
  if (section === undefined) return { config: {}, source: undefined };
  return { config: check(section, 'package.json#cubepi'), source: 'package.json#cubepi' };
}

async function readJson(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`, EXIT.failed, { cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError(`${path} is not valid JSON (${(error as Error).message}): fix or remove it`, EXIT.usage);
  }
}

function check(value: unknown, source: string): CliConfig {
  const parsed = CliConfigSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
  throw new CliError(`${source}${where}: ${issue.message} (see docs/cli.md#configuration)`, EXIT.usage);
}
