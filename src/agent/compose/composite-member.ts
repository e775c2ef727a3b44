/**
 * Members of a composite: agents, factories, named entries; validation and the shared budget.
 * @module
 */
import { ConfigurationError, RunAbortedError } from '../../types/errors.js';
import type { SpendBound, Usage } from '../../types/usage.js';
import { Agent } from '../agent.js';
import type { CompositeInput, CompositeKind, CompositePathPart, SpendCount } from './composite-events.js';

/** What a member factory is told when the composite needs the member's agent (once per composite run). */
export interface MemberContext {
  readonly kind: CompositeKind;
  readonly name: string;
  readonly index: number;
  readonly path: readonly CompositePathPart[];
  /** The input this member is given. */
  readonly input: CompositeInput;
  /**
   * A thread id for the member's agent, `<threadId>/<kind>/<index>-<name>`, when the composite's run was given a
   * `threadId` (see {@link CompositeRunOptions.threadId}); give it to the agent with its checkpointer.
   */
  readonly threadId?: string | undefined;
}

/** A factory of a member's agent: called at each composite run, so every run gets a fresh agent. */
export type AgentFactory = (context: MemberContext) => Agent;

/** A member: an agent, a factory, or either with a name (`{ name: 'billing', agent }`). */
export type CompositeMember = Agent | AgentFactory | { readonly name: string; readonly agent: Agent | AgentFactory };

/** Options every composite takes. */
export interface CompositeOptions {
  /**
   * One budget for every member together (dollars, tokens, or both), counted as each model call of any member ends
   * (a worker's too). When it is reached, every member still running is cancelled at once (its provider request
   * aborted), no further member starts, and the composite ends `stopped` with `stop.reason` `budget`.
   */
  readonly budget?: SpendBound | undefined;
}

/** Options of one composite run (`run$`, `runComposite`). */
export interface CompositeRunOptions {
  /** Aborting it cancels every running member (their runs end `cancelled`; the composite ends `cancelled`). */
  readonly signal?: AbortSignal | undefined;
  /** Suggests member threads to factories: {@link MemberContext.threadId}. */
  readonly threadId?: string | undefined;
}

/** A validated member. */
export interface ResolvedMember {
  readonly name: string;
  readonly source: Agent | AgentFactory;
}

/** Validates members, giving each its name (the given one, or `member-<index>`). */
export function resolveMembers(kind: CompositeKind, members: readonly unknown[], atLeast = 1): ResolvedMember[] {
  if (members.length < atLeast) {
    throw new ConfigurationError(`${kind}: give at least ${atLeast} member${atLeast === 1 ? '' : 's'}`);
  }
  const names = new Set<string>();
  return members.map((entry, index) => {
    const named =
      typeof entry === 'object' && entry !== null && !(entry instanceof Agent) && 'agent' in entry
        ? (entry as { name?: unknown; agent: unknown })
        : undefined;
    const source = named === undefined ? entry : named.agent;
    const name = named === undefined ? `member-${index}` : named.name;
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw new ConfigurationError(`${kind}: member ${index} needs a name of 1–64 letters, digits, _ or -`);
    }
    if (!(source instanceof Agent) && typeof source !== 'function') {
      throw new ConfigurationError(`${kind}: member ${index} ("${name}") is not an Agent or a function returning one`);
    }
    if (names.has(name)) throw new ConfigurationError(`${kind}: two members are named "${name}"`);
    names.add(name);
    return { name, source: source as Agent | AgentFactory };
  });
}

/** Splits a trailing options object off variadic arguments. */
export function splitOptions<O>(args: readonly unknown[]): { members: unknown[]; options: O | undefined } {
  const last = args[args.length - 1];
  const isOptions =
    typeof last === 'object' && last !== null && !(last instanceof Agent) && !('agent' in last) && args.length > 0;
  return isOptions ? { members: args.slice(0, -1), options: last as O } : { members: [...args], options: undefined };
}

/** Throws unless `budget` is a spend bound (positive usd and/or tokens). */
export function validateBudget(kind: CompositeKind, budget: SpendBound | undefined): void {
  if (budget === undefined) return;
  if (typeof budget !== 'object' || budget === null || (budget.usd === undefined && budget.tokens === undefined)) {
    throw new ConfigurationError(`${kind}: \`budget\` needs usd, tokens, or both`);
  }
  for (const key of ['usd', 'tokens'] as const) {
    const bound = budget[key];
    if (bound !== undefined && !(typeof bound === 'number' && bound > 0)) {
      throw new ConfigurationError(`${kind}: \`budget.${key}\` must be a positive number`);
    }
  }
}

/** The budget a composite's members share in one run: what they spent, and the signal that cancels them all. */
export class SharedBudget implements SpendCount {
  usd = 0;
  tokens = 0;
  private readonly controller = new AbortController();

  constructor(readonly bound: SpendBound | undefined) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get spent(): boolean {
    return this.controller.signal.aborted;
  }

  readonly charge = (usage: Usage): void => {
    this.usd += usage.cost.total;
    this.tokens += usage.totalTokens;
    const bound = this.bound;
    if (bound === undefined || this.controller.signal.aborted) return;
    const what =
      bound.usd !== undefined && this.usd >= bound.usd
        ? `$${this.usd.toFixed(4)} of $${bound.usd}`
        : bound.tokens !== undefined && this.tokens >= bound.tokens
          ? `${this.tokens} of ${bound.tokens} tokens`
          : undefined;
    if (what !== undefined) {
      this.controller.abort(new RunAbortedError('budget', `Run aborted: the composite's budget is spent (${what})`));
    }
  };
}
