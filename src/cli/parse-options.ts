/**
 * Option parsing shared by the subcommands: `node:util` `parseArgs` in strict mode, its errors turned into usage
 * errors (exit code 2), and the options every agent-running subcommand takes.
 * @module
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { usageError } from './cli-error.js';

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** The options of every subcommand that runs an agent (`run`, `chat`, `demo`). */
export const AGENT_OPTIONS = {
  provider: { type: 'string' },
  model: { type: 'string' },
  db: { type: 'string' },
  thread: { type: 'string' },
  system: { type: 'string' },
  'allow-write': { type: 'boolean', default: false },
  'allow-shell': { type: 'boolean', default: false },
  yes: { type: 'boolean', short: 'y', default: false },
  'no-thinking': { type: 'boolean', default: false },
  delay: { type: 'string' },
  debug: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies OptionSpecs;

/** What the agent options parse to (strings as given; validated by `resolveAgentSettings`). */
export interface AgentOptionValues {
  readonly provider?: string | undefined;
  readonly model?: string | undefined;
  readonly db?: string | undefined;
  readonly thread?: string | undefined;
  readonly system?: string | undefined;
  readonly 'allow-write'?: boolean | undefined;
  readonly 'allow-shell'?: boolean | undefined;
  readonly yes?: boolean | undefined;
  readonly 'no-thinking'?: boolean | undefined;
  readonly delay?: string | undefined;
  readonly debug?: boolean | undefined;
}

/**
 * `parseArgs` in strict mode; an unknown option, a missing value or a stray argument becomes a usage error naming
 * `command` (exit code 2).
 */
export function parseCommandArgs<T extends OptionSpecs>(
  command: string,
  args: readonly string[],
  options: T,
  allowPositionals = true,
): ReturnType<typeof parseArgs<{ options: T; allowPositionals: boolean; strict: true }>> {
  try {
    return parseArgs({ args: [...args], options, allowPositionals, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Node's messages end with advice for scripts ("To specify a positional argument…"); keep the first sentence.
    throw usageError(`${command}: ${message.split(/\.\s/)[0]!.replace(/\.$/, '')} (see cubepi ${command} --help)`);
  }
}

/** Whether `--debug` is among `args` (for reporting an error thrown before the options were parsed). */
export function hasDebugFlag(args: readonly string[]): boolean {
  return args.includes('--debug');
}
