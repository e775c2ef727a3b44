/**
 * One run of a composite: numbering its events, running its members, and ending it.
 * @module
 */
import type { Subscriber, Subscription } from 'rxjs';
import type { AgentEndEvent, AgentEvent } from '../../types/agent-events.js';
import { errorMessageOf } from '../../types/errors.js';
import { textOf, type Message } from '../../types/messages.js';
import { addUsage, EMPTY_USAGE, type Usage } from '../../types/usage.js';
import type { Agent } from '../agent.js';
import type { RunOptions } from '../agent-options.js';
import {
  CompositeMemberError,
  type CompositeEndEvent,
  type CompositeEvent,
  type CompositeInput,
  type CompositeKind,
  type CompositePathPart,
  type MemberPending,
  type MemberResult,
} from './composite-events.js';
import { SharedBudget, type CompositeRunOptions, type ResolvedMember } from './composite-member.js';

/** Per-subscription state of a composite's run (created inside `new Observable`). */
export class CompositeRun {
  private seq = 0;
  private ended = false;
  readonly budget: SharedBudget;
  readonly agents: (Agent | undefined)[];

  constructor(
    readonly kind: CompositeKind,
    readonly members: readonly ResolvedMember[],
    private readonly subscriber: Subscriber<CompositeEvent>,
    readonly options: CompositeRunOptions | undefined,
    bound: CompositeRunOptionsBound,
  ) {
    this.budget = new SharedBudget(bound);
    this.agents = members.map(() => undefined);
  }

  start(names: readonly string[] = this.members.map((member) => member.name)): void {
    this.subscriber.next({
      type: 'composite_start',
      kind: this.kind,
      path: [this.kind],
      seq: ++this.seq,
      members: names,
    });
  }

  emitMember(index: number, name: string, event: AgentEvent, extra: readonly CompositePathPart[] = []): void {
    if (this.ended) return;
    this.subscriber.next({
      type: 'member_event',
      kind: this.kind,
      path: [this.kind, index, name, ...extra],
      seq: ++this.seq,
      member: name,
      index,
      event,
    });
  }

  /** The agent for member `index`: the member itself, or its factory's product (a throw is the member's failure). */
  agentOf(index: number, input: CompositeInput): Agent {
    const member = this.members[index]!;
    const source = member.source;
    if (typeof source !== 'function') return (this.agents[index] = source);
    const threadId = this.options?.threadId;
    const agent = source({
      kind: this.kind,
      name: member.name,
      index,
      path: [this.kind, index, member.name],
      input,
      ...(threadId === undefined ? {} : { threadId: `${threadId}/${this.kind}/${index}-${member.name}` }),
    });
    if (typeof (agent as Partial<Agent> | undefined)?.prompt$ !== 'function') {
      throw new TypeError(`the factory of member "${member.name}" did not return an Agent`);
    }
    return (this.agents[index] = agent);
  }

  /** The run options every member gets: the composite's signal and the shared budget. */
  runOptions(): RunOptions {
    return {
      ...(this.options?.signal === undefined ? {} : { signal: this.options.signal }),
      limits: { budgetSignal: this.budget.signal, charge: this.budget.charge },
    };
  }

  /**
   * Runs member `index` on `input`: forwards its events, then calls `done` with its result. `map` may route an event
   * elsewhere (a supervisor's workers) by returning `false`. Returns the subscription (unsubscribe = cancel it).
   */
  runMember(
    index: number,
    input: CompositeInput,
    done: (result: MemberResult, end: AgentEndEvent | undefined) => void,
    route?: (event: AgentEvent) => boolean,
  ): Subscription | undefined {
    const name = this.members[index]!.name;
    let agent: Agent;
    try {
      agent = this.agentOf(index, input);
    } catch (error) {
      done(errored(name, index, error), undefined);
      return undefined;
    }
    let runId: string | undefined;
    let end: AgentEndEvent | undefined;
    return agent.prompt$(input, this.runOptions()).subscribe({
      next: (event) => {
        if (event.type === 'agent_start') runId = event.runId;
        else if (event.type === 'agent_end') end = event;
        if (route?.(event) !== false) this.emitMember(index, name, event);
      },
      error: (error: unknown) => done({ ...errored(name, index, error), runId, threadId: agent.threadId }, end),
      complete: () => done(resultOf(name, index, runId, agent.threadId, end), end),
    });
  }

  /** Ends the run: the `composite_end` event, then completion. Idempotent. */
  end(fields: Omit<CompositeEndEvent, 'type' | 'kind' | 'path' | 'seq' | 'usage' | 'stop'>): void {
    if (this.ended) return;
    this.ended = true;
    const results = fields.results;
    const stopped = fields.outcome === 'stopped' && this.budget.spent;
    this.subscriber.next({
      type: 'composite_end',
      kind: this.kind,
      path: [this.kind],
      seq: ++this.seq,
      ...fields,
      usage: results.reduce<Usage>((sum, result) => addUsage(sum, result.usage), EMPTY_USAGE),
      ...(stopped
        ? {
            stop: {
              reason: 'budget' as const,
              bound: this.budget.bound!,
              spent: { usd: this.budget.usd, tokens: this.budget.tokens },
            },
          }
        : {}),
    });
    this.subscriber.complete();
  }

  /**
   * Ends the run after a member that did not complete: `failed` (naming it), `suspended` (exposing its requests),
   * `stopped` (the budget), or `cancelled`. Returns false (and ends nothing) for a member that completed or stopped.
   */
  endUnlessAnswered(result: MemberResult, end: AgentEndEvent | undefined, results: readonly MemberResult[]): boolean {
    if (this.budget.spent) {
      this.end({ outcome: 'stopped', results });
      return true;
    }
    if (result.outcome === 'completed' || result.outcome === 'stopped') return false;
    if (result.outcome === 'suspended') {
      this.end({ outcome: 'suspended', results, pending: [this.pendingOf(result, end)] });
    } else if (result.outcome === 'failed') {
      this.end({ outcome: 'failed', results, error: this.failure(result, results) });
    } else {
      this.end({ outcome: 'cancelled', results });
    }
    return true;
  }

  pendingOf(result: MemberResult, end: AgentEndEvent | undefined): MemberPending {
    return { name: result.name, index: result.index, agent: this.agents[result.index]!, requests: end?.pending ?? [] };
  }

  failure(result: MemberResult, results: readonly MemberResult[]): CompositeMemberError {
    const why =
      result.error !== undefined
        ? errorMessageOf(result.error)
        : (lastAssistant(result.messages)?.errorMessage ?? 'its run ended failed');
    return new CompositeMemberError(
      this.kind,
      result.name,
      result.index,
      results,
      why,
      result.error === undefined ? undefined : { cause: result.error },
    );
  }
}

type CompositeRunOptionsBound = SharedBudget['bound'];

/** The result of a member whose run never started or errored. */
function errored(name: string, index: number, error: unknown): MemberResult {
  return { name, index, outcome: 'failed', messages: [], usage: EMPTY_USAGE, error };
}

/** A member's result from its `agent_end`. */
export function resultOf(
  name: string,
  index: number,
  runId: string | undefined,
  threadId: string | undefined,
  end: AgentEndEvent | undefined,
): MemberResult {
  if (end === undefined) {
    return { ...errored(name, index, new Error('the run ended without agent_end')), runId, threadId };
  }
  const answered = end.outcome === 'completed' || end.outcome === 'stopped';
  const last = lastAssistant(end.messages);
  return {
    name,
    index,
    outcome: end.outcome,
    ...(answered ? { answer: last === undefined ? '' : textOf(last) } : {}),
    runId,
    threadId,
    messages: end.messages,
    usage: end.usage,
  };
}

/** A member that did not run (`not_run`) or lost a race (`lost`). */
export function unranResult(name: string, index: number, outcome: 'not_run' | 'lost'): MemberResult {
  return { name, index, outcome, messages: [], usage: EMPTY_USAGE };
}

function lastAssistant(messages: readonly Message[]): (Message & { role: 'assistant' }) | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'assistant') return message;
  }
  return undefined;
}
