/**
 * The settings a run shares between the Agent and runAgentLoop, and their validation.
 * @module
 */
import { reasoningSettingProblem } from '../providers/reasoning.js';
import { isList } from '../types/is-list.js';
import type { BlobStore } from '../types/blob.js';
import type { Message } from '../types/messages.js';
import type { Model, ReasoningSetting } from '../types/model.js';
import type { OutputSpec } from '../types/output.js';
import type { Provider, StreamOptions, ToolChoice } from '../types/provider.js';
import type { AnyAgentTool, ToolExecutionMode } from '../types/tool.js';
import { outputSpecProblem } from './output-plan.js';

/** How a run behaves: the options `Agent` and `runAgentLoop` both take. */
export interface RunSettings {
  readonly systemPrompt?: string | undefined;
  readonly tools?: readonly AnyAgentTool[] | undefined;
  /** `parallel` (default): a batch's tools run concurrently; `sequential`: one after another. */
  readonly toolExecution?: ToolExecutionMode | undefined;
  /** At most this many tools run at once in a parallel batch (default: no limit). */
  readonly toolConcurrency?: number | undefined;
  /** A default timeout for every tool call, in milliseconds (a tool's own `timeoutMs` wins). */
  readonly toolTimeoutMs?: number | undefined;
  /** Cancels the run this many milliseconds after it starts (reason `deadline`). */
  readonly deadlineMs?: number | undefined;
  /** The thread the conversation belongs to (given to hooks; used by checkpointers). */
  readonly threadId?: string | undefined;
  /** Extra state, given to hooks as `ctx.extra` (and mutable by them). */
  readonly extra?: Record<string, unknown> | undefined;
  /** Passed to every provider call (the run's signal is added). */
  readonly streamOptions?: Omit<StreamOptions, 'signal'> | undefined;
  readonly toolChoice?: ToolChoice | undefined;
  /**
   * How hard the model thinks, the same on every model (`off`, `minimal` … `max`, or `{ budgetTokens }`): resolved per
   * attempt from the model table, so a fallback keeps it (docs/providers.md, "Reasoning"). A provider-specific option
   * in `streamOptions` (`thinkingBudget`, `reasoningEffort`, `thinkingLevel`) wins over it.
   */
  readonly reasoning?: ReasoningSetting | undefined;
  /**
   * The schema the run's final answer must be a value of (docs/output.md): asked of each model in the strongest mode
   * it has, validated, asked again on an invalid answer (`outputRetries`), carried by `agent_end.output`.
   */
  readonly output?: OutputSpec | undefined;
  /** How many times a run asks again after an answer that is not a value of `output` (default 2). */
  readonly outputRetries?: number | undefined;
  /**
   * Where file blocks stored by reference (`ref`) are read before each model request (docs/files-storage.md). An
   * `Agent` defaults to its checkpointer's `blobs`. A `ref` it cannot resolve fails the run with `BlobMissingError`.
   */
  readonly blobs?: BlobStore | undefined;
}

/** Throws through `fail` for the first invalid setting. */
export function validateRunSettings(
  settings: RunSettings & {
    readonly provider?: Provider | undefined;
    readonly model?: Model | string | undefined;
    readonly messages?: readonly Message[] | undefined;
  },
  fail: (what: string) => never,
): void {
  if (typeof settings.provider?.stream !== 'function' || typeof settings.provider.id !== 'string') {
    fail('`provider` must be a Provider (an object with an id and a stream() method)');
  }
  if (typeof settings.model === 'string') {
    if (settings.model.length === 0) fail('`model` must not be empty');
  } else if (typeof settings.model?.id !== 'string' || typeof settings.model.provider !== 'string') {
    fail('`model` must be a model id or a Model ({ id, provider })');
  }
  if (settings.systemPrompt !== undefined && typeof settings.systemPrompt !== 'string')
    fail('`systemPrompt` must be a string');
  if (settings.tools !== undefined) validateTools(settings.tools, fail);
  if (
    settings.toolExecution !== undefined &&
    settings.toolExecution !== 'parallel' &&
    settings.toolExecution !== 'sequential'
  ) {
    fail('`toolExecution` must be "parallel" or "sequential"');
  }
  if (settings.toolConcurrency !== undefined && !(settings.toolConcurrency >= 1))
    fail('`toolConcurrency` must be at least 1');
  for (const key of ['deadlineMs', 'toolTimeoutMs'] as const) {
    const value = settings[key];
    if (value !== undefined && !(typeof value === 'number' && value > 0))
      fail(`\`${key}\` must be a positive number of milliseconds`);
  }
  if (settings.blobs !== undefined) {
    const blobs = settings.blobs as Partial<Record<'put' | 'get' | 'delete', unknown>> | null;
    if (typeof blobs?.get !== 'function') fail('`blobs` must be a BlobStore (put, get, delete)');
  }
  const output = outputSettingsProblem(settings);
  if (output !== undefined) fail(output);
  for (const key of ['firstEventTimeoutMs', 'idleTimeoutMs'] as const) {
    const value = settings.streamOptions?.[key];
    if (value !== undefined && !(typeof value === 'number' && value > 0))
      fail(`\`streamOptions.${key}\` must be a positive number of milliseconds (or Infinity)`);
  }
}

/** Throws through `fail` unless `tools` is an array of tools (built with `defineTool`) with distinct names. */
export function validateTools(tools: unknown, fail: (what: string) => never): void {
  if (!isList(tools)) fail('`tools` must be an array');
  const names = new Set<string>();
  for (const entry of tools as readonly unknown[]) {
    const tool = entry as Partial<Record<'name' | 'execute' | 'inputSchema', unknown>> | null | undefined;
    if (typeof tool?.name !== 'string' || typeof tool.execute !== 'function' || typeof tool.inputSchema !== 'object') {
      fail('every tool must be built with defineTool()');
    }
    if (names.has(tool.name)) fail(`two tools are named "${tool.name}"`);
    names.add(tool.name);
  }
}

/**
 * The first problem of the typed-answer and reasoning settings (`output`, `outputRetries`, `reasoning`), in words
 * naming the setting, or `undefined`: shared by the Agent's options (a `ConfigurationError`) and a run's options (an
 * `InvalidInputError`).
 */
export function outputSettingsProblem(settings: {
  readonly output?: unknown;
  readonly outputRetries?: unknown;
  readonly reasoning?: unknown;
}): string | undefined {
  if (settings.output !== undefined) {
    const problem = outputSpecProblem(settings.output);
    if (problem !== undefined) return `\`output\` ${problem}`;
  }
  const retries = settings.outputRetries;
  if (retries !== undefined && !(typeof retries === 'number' && Number.isInteger(retries) && retries >= 0))
    return `\`outputRetries\` must be a non-negative integer, got ${JSON.stringify(retries) ?? typeof retries}`;
  if (settings.reasoning !== undefined) {
    const problem = reasoningSettingProblem(settings.reasoning);
    if (problem !== undefined) return `\`reasoning\` ${problem}`;
  }
  return undefined;
}
