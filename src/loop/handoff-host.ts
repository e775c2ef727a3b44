/**
 * The handoffs of one run: which agent is active, the handoff its current turn took, the switch between turns; and
 * which agents an Agent's thread can reach (for a run that starts on a thread a handoff left with another agent).
 * @module
 */
import type { ComposedHooks } from '../middleware/types.js';
import type { HookError } from '../types/errors.js';
import { UnknownAgentError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { HookState } from '../types/state.js';
import type { ToolRunInfo } from '../types/tool.js';
import { profileOf, type AgentProfile } from './agent-profile.js';
import { applyRunPatch, type RunState } from './run-state.js';

/** The run-state key holding the thread's active agent (`{ agent, tool, at }`), written by producer `handoff`. */
export const ACTIVE_AGENT_KEY = 'handoff.active';

/** What `handoff.active` holds: the agent, the handoff tool that made it active, and the transcript length then. */
export interface ActiveAgentRecord {
  readonly agent: string;
  readonly tool: string;
  readonly at: number;
}

/** What the loop knows of a handoff tool. */
export interface HandoffSpec {
  readonly agent: object;
  readonly agentName: string;
  readonly toolName: string;
  readonly inputFilter: ((messages: readonly Message[]) => Message[]) | undefined;
}

/** The default `maxHandoffs`. */
export const DEFAULT_MAX_HANDOFFS = 5;

const hosts = new WeakMap<ToolRunInfo, HandoffHost>();

/** The handoffs of the run a tool call belongs to (`ctx.run`), when that run can hand off. */
export function hostOf(run: ToolRunInfo): HandoffHost | undefined {
  return hosts.get(run);
}

/** A handoff the current turn took. */
interface Taken {
  readonly toolCallId: string;
  readonly spec: HandoffSpec;
  readonly turnIndex: number;
}

/** One run's handoffs. Created by the Agent for each run, attached by the loop. */
export class HandoffHost {
  private run: RunState | undefined;
  private taken: Taken | undefined;
  private failure: HookError | undefined;
  private count = 0;

  constructor(
    /** The active agent's name. */
    public active: string,
    private readonly maxHandoffs: number,
  ) {}

  attach(run: RunState): void {
    this.run = run;
    hosts.set(run.info, this);
  }

  /**
   * The handoff tool's call `toolCallId` asks to hand off: taken (the answer says from whom), or refused with the text
   * the model is told. The first call of a turn wins (calls are started in the model's order, so in a parallel batch
   * too the earlier call in the response is first).
   */
  claim(
    toolCallId: string,
    spec: HandoffSpec,
  ): string | { from: string; runId: string; threadId: string | undefined; turnIndex: number } {
    const run = this.run!;
    if (this.taken !== undefined)
      return `Not transferred to ${spec.agentName}: this turn already handed off to ${this.taken.spec.agentName} (the first handoff of a turn wins)`;
    if (spec.agentName === this.active) return `Not transferred: ${spec.agentName} is already the active agent`;
    if (this.count >= this.maxHandoffs)
      return `Not transferred to ${spec.agentName}: this run reached its limit of ${this.maxHandoffs} handoffs (maxHandoffs); go on as ${this.active}`;
    const turnIndex = run.turn?.index ?? run.turnIndex;
    this.taken = { toolCallId, spec, turnIndex };
    return { from: this.active, runId: run.runId, threadId: run.threadId, turnIndex };
  }

  /** `onHandoff` failed: the run stops with `error` once the turn ends. */
  fail(error: HookError): void {
    this.failure ??= error;
  }

  /**
   * Called by the loop after each turn (and after a resumed batch): throws the `onHandoff` failure, or switches the
   * run to the agent the turn handed to — the `state_patched` that stores it, then the `handoff` event.
   */
  settle(): void {
    const { taken, failure } = this;
    this.taken = undefined;
    this.failure = undefined;
    if (failure !== undefined) throw failure;
    if (taken === undefined) return;
    const run = this.run!;
    this.count++;
    const from = this.active;
    const to = taken.spec.agentName;
    this.active = to;
    const at = run.transcript.length;
    useProfile(run, profileOf(taken.spec.agent)!, taken.spec.inputFilter, at);
    const record: ActiveAgentRecord = { agent: to, tool: taken.spec.toolName, at };
    applyRunPatch(run, 'handoff', { set: { [ACTIVE_AGENT_KEY]: record } });
    run.emit({
      type: 'handoff',
      runId: run.runId,
      from,
      to,
      toolCallId: taken.toolCallId,
      toolName: taken.spec.toolName,
      turnIndex: taken.turnIndex,
    });
  }
}

/**
 * Makes `profile` the run's agent from its next turn: provider, model, system prompt, tools (read each turn) and the
 * hooks and wrappers of its middleware. The run's lifecycle hooks (`onRunStart`, `onRunEnd`) stay those of the agent
 * the run started with, so that a middleware whose run started also sees it end.
 */
function useProfile(
  run: RunState,
  profile: AgentProfile,
  filter: ((messages: readonly Message[]) => Message[]) | undefined,
  at: number,
): void {
  run.provider = profile.provider;
  run.model = profile.model;
  run.systemPrompt = profile.systemPrompt;
  run.getTools = profile.getTools;
  run.hooks = {
    ...filteredHooks(profile.middleware.hooks, filter, at),
    onRunStart: run.hooks.onRunStart,
    onRunEnd: run.hooks.onRunEnd,
  };
  run.wrapModelCall = profile.middleware.wrappers.wrapModelCall;
  run.wrapToolCall = profile.middleware.wrappers.wrapToolCall;
}

/** `hooks` with `filter` applied to the first `at` messages of the context, before their own `transformContext`. */
export function filteredHooks(
  hooks: ComposedHooks,
  filter: ((messages: readonly Message[]) => Message[]) | undefined,
  at: number,
): ComposedHooks {
  if (filter === undefined) return hooks;
  const inner = hooks.transformContext;
  return {
    ...hooks,
    transformContext: (messages, ctx) => {
      const filtered = filter(messages.slice(0, at));
      if (!Array.isArray(filtered)) throw new TypeError('inputFilter must return an array of messages');
      const context = [...filtered, ...messages.slice(at)];
      return inner === undefined ? context : inner(context, ctx);
    },
  };
}

/** The agents a root Agent reaches through handoff tools (transitively, by name), and those tools by name. */
export function reachable(root: object): {
  readonly agents: Map<string, object>;
  readonly specs: Map<string, HandoffSpec>;
} {
  const agents = new Map<string, object>();
  const specs = new Map<string, HandoffSpec>();
  const rootProfile = profileOf(root)!;
  if (rootProfile.name !== undefined) agents.set(rootProfile.name, root);
  const queue: AgentProfile[] = [rootProfile];
  for (let i = 0; i < queue.length; i++) {
    for (const tool of queue[i]!.getTools()) {
      const spec = handoffSpecOf(tool);
      if (spec === undefined) continue;
      if (!specs.has(spec.toolName)) specs.set(spec.toolName, spec);
      if (agents.has(spec.agentName)) continue;
      agents.set(spec.agentName, spec.agent);
      queue.push(profileOf(spec.agent)!);
    }
  }
  return { agents, specs };
}

/** Where a handoff tool keeps its {@link HandoffSpec}. */
export const HANDOFF_SPEC = Symbol('cubepi.handoff');

/** The handoff a tool stands for, when it is one. */
export function handoffSpecOf(tool: object): HandoffSpec | undefined {
  return (tool as { [HANDOFF_SPEC]?: HandoffSpec })[HANDOFF_SPEC];
}

/**
 * How a run of `root`'s thread starts, when the thread can hand off: the host, and the active agent's profile and
 * hooks when a handoff made another agent active. `undefined` for a thread with no handoff (the run is as before).
 * Throws {@link UnknownAgentError} when the stored active agent is not reachable from `root`.
 */
export function handoffSetup(
  root: object,
  state: HookState,
  maxHandoffs: number | undefined,
): { host: HandoffHost; profile?: AgentProfile; hooks?: ComposedHooks } | undefined {
  const stored = state.values[ACTIVE_AGENT_KEY] as Partial<ActiveAgentRecord> | undefined;
  const { agents, specs } = reachable(root);
  const max = maxHandoffs ?? DEFAULT_MAX_HANDOFFS;
  const rootName = profileOf(root)!.name ?? 'agent';
  if (stored === undefined) return specs.size === 0 ? undefined : { host: new HandoffHost(rootName, max) };
  const name = typeof stored === 'object' && stored !== null ? stored.agent : undefined;
  const agent = typeof name === 'string' ? agents.get(name) : undefined;
  if (agent === undefined) throw new UnknownAgentError(String(name), [...agents.keys()]);
  const profile = profileOf(agent)!;
  const filter = typeof stored.tool === 'string' ? specs.get(stored.tool)?.inputFilter : undefined;
  const at = typeof stored.at === 'number' ? stored.at : 0;
  return {
    host: new HandoffHost(name!, max),
    profile,
    hooks: filteredHooks(profile.middleware.hooks, filter, at),
  };
}
