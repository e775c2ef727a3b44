/**
 * Everything an agent-running subcommand needs, resolved once from the options, the configuration and the
 * environment: the model, the system prompt, the tools (and the approval of the risky ones), middleware presets and
 * the thread store. `createCliAgent` then makes an Agent for one thread.
 * @module
 */
import {
  Agent,
  BudgetCap,
  MaxTurns,
  retry,
  SlidingWindow,
  ToolCallLimit,
  ToolGuard,
  type AnyAgentTool,
  type Middleware,
  type ToolPolicy,
} from '../index.js';
import { usageError } from './cli-error.js';
import { chooseModel, type ModelChoice } from './choose-model.js';
import { loadConfig, type CliConfig } from './load-config.js';
import { openCheckpointer, storeSpec, type OpenedStore } from './open-checkpointer.js';
import type { AgentOptionValues } from './parse-options.js';
import { builtinTools, RISKY_TOOLS } from './tools/builtin-tools.js';

/** The resolved setup of an agent-running subcommand. */
export interface AgentSetup {
  readonly choice: ModelChoice;
  readonly systemPrompt: string;
  readonly tools: readonly AnyAgentTool[];
  /** Middleware presets from the configuration, then the approval guard (unless `--yes`). */
  readonly middleware: readonly Middleware[];
  readonly store: OpenedStore;
  readonly config: CliConfig;
}

/** The working directory and environment the command runs in. */
export interface CliEnvironment {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

/** The default system prompt (the configuration's `systemPrompt` or `--system` replace it). */
export function defaultSystemPrompt(cwd: string): string {
  return (
    `You are cubepi, a concise assistant in a terminal. The working directory is ${cwd}; your file tools can read ` +
    'only inside it. Use tools when they help, and say briefly what you did.'
  );
}

/** Parses `--delay` (milliseconds, ≥ 0); undefined when not given. Throws a usage error otherwise. */
export function parseDelay(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Number(value);
  if (value.trim() === '' || !Number.isFinite(ms) || ms < 0) {
    throw usageError(`--delay must be a number of milliseconds, got "${value}"`);
  }
  return ms;
}

/**
 * Resolves the setup: options win over the configuration (`cubepi.config.json` or `package.json#cubepi` in `cwd`),
 * which wins over the environment. Opens the store last, so a bad option fails before any file is created.
 */
export async function prepareAgentSetup(
  values: AgentOptionValues,
  { cwd, env }: CliEnvironment,
  storeOverride?: string,
): Promise<AgentSetup> {
  const { config } = await loadConfig(cwd);
  const delayMs = parseDelay(values.delay);
  const choice = await chooseModel(
    { provider: values.provider ?? config.provider, model: values.model ?? config.model, delayMs },
    env,
  );
  const tools = builtinTools({
    dir: cwd,
    allowWrite: values['allow-write'],
    allowShell: values['allow-shell'],
    only: config.tools,
  });
  const middleware = [...presets(config)];
  if (values.yes !== true && tools.some((tool) => RISKY_TOOLS.has(tool.name))) {
    middleware.push(new ToolGuard({ name: 'ConfirmInTerminal', policy: confirmRiskyTools }));
  }
  const store = await openCheckpointer(storeOverride ?? storeSpec(values.db, env, config.db), cwd);
  return {
    choice,
    systemPrompt: values.system ?? config.systemPrompt ?? defaultSystemPrompt(cwd),
    tools,
    middleware,
    store,
    config,
  };
}

/** An Agent for `threadId` with this setup; `model` and `systemPrompt` override the setup's (chat's `/model`). */
export function createCliAgent(
  setup: AgentSetup,
  threadId: string,
  overrides: { readonly model?: string; readonly systemPrompt?: string } = {},
): Agent {
  return new Agent({
    provider: setup.choice.provider,
    model: overrides.model ?? setup.choice.model,
    systemPrompt: overrides.systemPrompt ?? setup.systemPrompt,
    tools: [...setup.tools],
    middleware: [...setup.middleware],
    checkpointer: setup.store.checkpointer,
    threadId,
    // Listeners are the command's own views; a bug in one is reported, never silently swallowed.
    onListenerError: (error) => process.stderr.write(`cubepi: a view failed: ${String(error)}\n`),
  });
}

/** Asks before every `write_file` and `run_command` call, saying what it would do. */
const confirmRiskyTools: ToolPolicy = (ctx) => {
  const { name } = ctx.toolCall;
  if (!RISKY_TOOLS.has(name)) return 'allow';
  const args = ctx.args;
  if (name === 'run_command') return { ask: `run the shell command: ${String(args.command)}` };
  const bytes = typeof args.content === 'string' ? Buffer.byteLength(args.content) : 0;
  return { ask: `write ${bytes} bytes to ${String(args.path)}` };
};

function presets(config: CliConfig): Middleware[] {
  const m = config.middleware ?? {};
  const list: Middleware[] = [new MaxTurns(m.maxTurns ?? 40)];
  if (m.slidingWindow !== undefined) list.push(new SlidingWindow({ maxMessages: m.slidingWindow }));
  if (m.toolCallLimit !== undefined) list.push(new ToolCallLimit({ perRun: m.toolCallLimit }));
  if (m.budgetUsd !== undefined) list.push(new BudgetCap({ usd: m.budgetUsd }));
  if (m.retry !== undefined && m.retry !== false) {
    list.push(retry(m.retry === true ? {} : { maxAttempts: m.retry }));
  }
  return list;
}
