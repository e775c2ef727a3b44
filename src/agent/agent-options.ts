/**
 * The options of the Agent and of each of its runs, and their validation.
 * @module
 */
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { threadIdProblem } from '../checkpoint/check-arguments.js';
import { HOOK_NAMES, type AgentHooks, type Middleware } from '../middleware/types.js';
import type { AgentEvent, ParentRun } from '../types/agent-events.js';
import { ConfigurationError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Model, ReasoningSetting } from '../types/model.js';
import type { OutputSpec } from '../types/output.js';
import type { Provider } from '../types/provider.js';
import type { Principal } from '../types/principal.js';
import type { AnyAgentTool, RunLimits } from '../types/tool.js';
import { checkMessage } from './input.js';
import type { QueueMode } from './message-queues.js';
import { validateRunSettings, type RunSettings } from '../loop/run-settings.js';

/** Options of the {@link Agent} constructor; the seven hooks may be given directly. */
export interface AgentOptions extends AgentHooks, RunSettings {
  /**
   * The agent's stable name: letters, digits, `_` and `-`, at most 48 characters. Needed for an agent a handoff leads
   * to (the thread stores its active agent by name, so a restored thread — in another process too — goes on with it);
   * named on `agent_start`, `turn_start` and `handoff` events. An unnamed agent is called `agent` there.
   */
  readonly name?: string | undefined;
  /**
   * How many handoffs one run may take (default 5): past it, a handoff tool's call gets an error result telling the
   * model to go on as the active agent (docs/handoffs.md). Bounds ping-pong between agents. A non-negative integer.
   */
  readonly maxHandoffs?: number | undefined;
  readonly provider: Provider;
  /**
   * Middlewares, composed hook by hook, each hook by its rule (docs/middleware.md). A hook given directly in these
   * options replaces every middleware's version of it.
   */
  readonly middleware?: readonly Middleware[] | undefined;
  /** A model, or a model id served by `provider`. */
  readonly model: Model | string;
  /** The transcript to start from. */
  readonly messages?: readonly Message[] | undefined;
  /** How queued steering messages go in (default `one-at-a-time`). */
  readonly steeringMode?: QueueMode | undefined;
  /** How queued follow-ups go in (default `one-at-a-time`). */
  readonly followUpMode?: QueueMode | undefined;
  /** Where errors thrown by `subscribe()` listeners go (default: `console.error`). They never end a run. */
  readonly onListenerError?: ((error: unknown, event: AgentEvent) => void) | undefined;
  /**
   * Makes the conversation durable (with `threadId`): the thread is restored before the first run, and every message
   * is appended before its `message_end` reaches anyone (see docs/checkpointing.md).
   */
  readonly checkpointer?: Checkpointer | undefined;
  /**
   * The largest file block, in bytes, a prompt, a steering or follow-up message or `messages` may hold (default 20 MiB,
   * `DEFAULT_MAX_FILE_BYTES`): a larger one is an `InvalidInputError` naming the block (docs/files.md, "Limits").
   */
  readonly maxFileBytes?: number | undefined;
}

/** Per-run options of `prompt`, `prompt$`, `resume` and `resume$`. */
export interface RunOptions {
  /** Aborting it cancels the run like `abort()` does (reason `signal`). */
  readonly signal?: AbortSignal | undefined;
  /** Cancels the run this many milliseconds after it starts (overrides the agent's `deadlineMs`). */
  readonly deadlineMs?: number | undefined;
  /**
   * The tool call that starts this run, for a nested run (a sub-agent's; `agentTool` sets it): named on `agent_start`,
   * and the run's depth (`ToolExecuteContext.run.depth`) is the parent's plus one.
   */
  readonly parent?: ParentRun | undefined;
  /**
   * What a nested run inherits from the tool call that starts it (`agentTool` passes the call's): the parent's
   * deadline, its budget signal, and where to report what it spends (see `docs/subagents.md`).
   */
  readonly limits?: RunLimits | undefined;
  /**
   * The run's id, carried by each of its events (default: a fresh one). Give it when the id must be known before the
   * run starts: `cubepi/worker` runs a queued run under the id `enqueue` returned.
   */
  readonly runId?: string | undefined;
  /**
   * Who the run acts for (`cubepi/server` passes the caller's authenticated principal; a queue worker the one stored
   * with the run): visible to every hook (`ctx.principal`) and tool (`ctx.principal` of `execute`), and inherited by
   * the runs its sub-agents start. Absent for a run nobody in particular asked for.
   */
  readonly principal?: Principal | undefined;
  /**
   * Tools this run has besides the agent's, for this run only (sent to the model with the agent's, every turn): e.g. a
   * front end's client tools (`clientTool`; AG-UI's `RunAgentInput.tools`). Validated as `setTools` validates; a name
   * the agent's tools already have is an `InvalidInputError`. A run resumed later does not keep them: give them again
   * (a held client tool call is answered with `{ output }` whether or not its tool is given).
   */
  readonly tools?: readonly AnyAgentTool[] | undefined;
  /** This run's reasoning setting (overrides the agent's `reasoning`; see `RunSettings.reasoning`). */
  readonly reasoning?: ReasoningSetting | undefined;
  /**
   * The schema this run's final answer must be a value of (overrides the agent's `output`; see docs/output.md). With
   * it, `prompt()` resolves to the validated value.
   */
  readonly output?: OutputSpec | undefined;
  /** How many times this run asks again after an invalid answer (overrides the agent's `outputRetries`; default 2). */
  readonly outputRetries?: number | undefined;
  /**
   * Makes the input idempotent: an input given again with a key the agent has taken is refused with a
   * `DuplicateInputError` carrying the run that took the first (nothing starts). With a checkpointer the key is stored
   * with the input — in the metadata of the last prompt message (`cubepi:input`), in the same append, or with an
   * approval's answer — so another Agent or process on the same thread refuses it too. The run emits
   * `input_committed` once its input is stored. Non-empty text of at most 256 characters (see docs/agent.md,
   * "Idempotent inputs and settled results").
   */
  readonly idempotencyKey?: string | undefined;
}

/** Options of `steer` and `followUp`. */
export interface InputOptions {
  /**
   * Makes the message idempotent, as `RunOptions.idempotencyKey` does for a prompt: a key the agent has taken is
   * refused with a `DuplicateInputError` (nothing is queued); the key is stored in the message's metadata with the run
   * that takes it, and that run emits `input_committed` once the message is stored.
   */
  readonly idempotencyKey?: string | undefined;
}

/** Throws a {@link ConfigurationError} naming the first invalid option. */
export function validateAgentOptions(options: AgentOptions): void {
  const fail = (what: string): never => {
    throw new ConfigurationError(`Agent: ${what}`);
  };
  if (typeof options !== 'object' || options === null) fail('expected an options object');
  validateRunSettings(options, fail);
  if (options.name !== undefined && (typeof options.name !== 'string' || !/^[a-zA-Z0-9_-]{1,48}$/.test(options.name)))
    fail('`name` must be 1–48 letters, digits, "_" or "-"');
  if (
    options.maxHandoffs !== undefined &&
    !(typeof options.maxHandoffs === 'number' && Number.isSafeInteger(options.maxHandoffs) && options.maxHandoffs >= 0)
  )
    fail('`maxHandoffs` must be a non-negative integer');
  if (options.messages !== undefined && !Array.isArray(options.messages))
    fail('`messages` must be an array of messages');
  for (const key of ['steeringMode', 'followUpMode'] as const) {
    const value = options[key];
    if (value !== undefined && value !== 'one-at-a-time' && value !== 'all')
      fail(`\`${key}\` must be "one-at-a-time" or "all"`);
  }
  if (
    options.maxFileBytes !== undefined &&
    !(
      typeof options.maxFileBytes === 'number' &&
      Number.isSafeInteger(options.maxFileBytes) &&
      options.maxFileBytes > 0
    )
  ) {
    fail('`maxFileBytes` must be a positive integer');
  }
  if (options.onListenerError !== undefined && typeof options.onListenerError !== 'function') {
    fail('`onListenerError` must be a function');
  }
  if (options.checkpointer !== undefined) {
    const checkpointer = options.checkpointer as Partial<Checkpointer> | null;
    if (
      typeof checkpointer?.load !== 'function' ||
      typeof checkpointer.append !== 'function' ||
      typeof checkpointer.saveExtra !== 'function'
    ) {
      fail('`checkpointer` must be a Checkpointer (load, append, saveExtra, …)');
    }
    if (options.threadId === undefined) fail('a `checkpointer` needs a `threadId`');
    const problem = threadIdProblem(options.threadId);
    if (problem !== undefined) fail(`\`threadId\`: ${problem}`);
    if (options.messages !== undefined)
      fail('with a `checkpointer`, the history comes from the thread: drop `messages`');
  }
}

/** The transcript of `options.messages`, each message checked; a bad one is a {@link ConfigurationError}. */
export function initialMessages(options: AgentOptions): Message[] {
  return (options.messages ?? []).map((message, index) => {
    try {
      return checkMessage(message, `AgentOptions.messages[${index}]`, { maxFileBytes: options.maxFileBytes });
    } catch (error) {
      throw new ConfigurationError(`Agent: ${(error as Error).message}`);
    }
  });
}

/** The hooks given directly in the options (they replace every middleware's version of the same hook). */
export function pickHooks(options: AgentOptions): AgentHooks {
  const hooks: Record<string, unknown> = {};
  for (const name of HOOK_NAMES) {
    // Bound to the options object, so a hook written as a method of it (`beforeToolCall(ctx) { this… }`) keeps `this`.
    const hook = (options as unknown as Record<string, unknown>)[name];
    if (typeof hook === 'function') hooks[name] = hook.bind(options);
    else if (hook !== undefined) hooks[name] = hook; // not a function: composeMiddleware refuses it, naming it
  }
  return hooks;
}
