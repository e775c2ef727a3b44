/**
 * ToolGuard: a policy decides, per tool call, whether it runs, is denied, or waits for a person's approval.
 * @module
 */
import { rememberedApprovalKey } from '../types/approval.js';
import { Decision } from '../types/decision.js';
import { ConfigurationError, InvalidInputError } from '../types/errors.js';
import type { BeforeToolCallAnswer, BeforeToolCallContext, HookResult, Middleware } from './types.js';

/**
 * What a policy says of one call: run it, deny it (the model is told why), ask a person first, or stop the run.
 *
 * - `{ ask, payload?, expiresAt? | ttlMs? }`: the approval lapses at `expiresAt` (epoch ms) or `ttlMs` after the
 *   request; an approval that resumes the run later gives the call the outcome `expired` (it does not run).
 * - `{ stop, outcome? }`: ends the run (`Decision.stop(outcome ?? 'failed', stop)`); the call and the others of its
 *   batch that did not finish get aborted results.
 */
export type ToolPolicyVerdict =
  | 'allow'
  | { readonly deny: string }
  | {
      readonly ask: string;
      readonly payload?: unknown;
      readonly expiresAt?: number | undefined;
      readonly ttlMs?: number | undefined;
    }
  | { readonly stop: string; readonly outcome?: 'failed' | 'cancelled' | undefined };

/** A policy: called per tool call, after its arguments are validated. May answer with a Promise. */
export type ToolPolicy = (ctx: BeforeToolCallContext) => ToolPolicyVerdict | PromiseLike<ToolPolicyVerdict>;

/** Options of {@link ToolGuard}. */
export interface ToolGuardOptions {
  readonly policy: ToolPolicy;
  /** The middleware's name (default `ToolGuard`). */
  readonly name?: string | undefined;
}

/**
 * A middleware whose `beforeToolCall` asks `policy` about each call: `'allow'` lets it run, `{ deny: reason }` denies
 * it (its outcome is `denied`, the model gets `reason`), `{ ask: reason }` holds it for approval: the run emits
 * `approval_requested`, runs the calls of the batch that need none, and ends suspended (`agent_end` outcome
 * `suspended`, with `pending`) until `agent.respond()` answers every held call; `{ stop: reason }` ends the run.
 * Durable with a checkpointer: a new process restores the pending requests and can answer them.
 *
 * When a held call resumes (approved or edited), the policy is asked again on the call as it will run
 * (`ctx.approval` is set): `deny` and `stop` apply again, `ask` counts as answered (no second request). An `ask` is
 * also answered, with allow, when the thread remembers an approval of the tool (`respond(id, { approve: true,
 * remember: 'thread' })` sets the state key `approvals.allow.<toolName>`).
 *
 * @example
 * const guard = new ToolGuard({
 *   policy: ToolGuard.combine(
 *     ToolGuard.byName({ deny: ['drop_database'], ask: ['send_email', 'delete_file'] }),
 *     ToolGuard.when((ctx) => Number(ctx.args.amount) > 100, { ask: 'Payments over 100 need approval' }),
 *   ),
 * });
 * const agent = new Agent({ provider, model, tools, middleware: [guard], checkpointer, threadId });
 */
export class ToolGuard implements Middleware {
  readonly name: string;
  private readonly policy: ToolPolicy;

  /** Throws {@link ConfigurationError} when `policy` is not a function. */
  constructor(options: ToolGuardOptions) {
    if (typeof options?.policy !== 'function') throw new ConfigurationError('ToolGuard: `policy` must be a function');
    this.policy = options.policy;
    this.name = options.name ?? 'ToolGuard';
  }

  /** Asks the policy; its verdict as a decision. */
  beforeToolCall(ctx: BeforeToolCallContext): HookResult<BeforeToolCallAnswer> {
    const verdict = this.policy(ctx);
    if (typeof (verdict as PromiseLike<ToolPolicyVerdict>).then === 'function') {
      return Promise.resolve(verdict).then((settled) => toAnswer(settled, ctx));
    }
    return toAnswer(verdict as ToolPolicyVerdict, ctx);
  }

  /**
   * A policy by tool name: names in `deny` are denied, names in `ask` need approval, every other call is allowed.
   * `reason` (default: saying which list the tool is on) is what the person or the model is told.
   */
  static byName(lists: {
    readonly deny?: readonly string[] | undefined;
    readonly ask?: readonly string[] | undefined;
    readonly reason?: ((toolName: string, list: 'deny' | 'ask') => string) | undefined;
  }): ToolPolicy {
    const deny = new Set(lists.deny ?? []);
    const ask = new Set(lists.ask ?? []);
    const reason =
      lists.reason ??
      ((name, list) => (list === 'deny' ? `Tool ${name} is not allowed` : `Tool ${name} needs approval`));
    return (ctx) => {
      const name = ctx.toolCall.name;
      if (deny.has(name)) return { deny: reason(name, 'deny') };
      if (ask.has(name)) return { ask: reason(name, 'ask') };
      return 'allow';
    };
  }

  /** A policy from a predicate over the call (its validated `args`, its `toolCall`, the run context): `then` when true. */
  static when(
    predicate: (ctx: BeforeToolCallContext) => boolean,
    then: Exclude<ToolPolicyVerdict, 'allow'>,
  ): ToolPolicy {
    return (ctx) => (predicate(ctx) ? then : 'allow');
  }

  /** Policies in order: the first verdict other than `'allow'` wins (so put denials before asks). */
  static combine(...policies: readonly ToolPolicy[]): ToolPolicy {
    // Synchronous while the policies are (no Promise per call), asynchronous from the first one that is not.
    const from = (ctx: BeforeToolCallContext, start: number): ToolPolicyVerdict | PromiseLike<ToolPolicyVerdict> => {
      for (let i = start; i < policies.length; i++) {
        const verdict = policies[i]!(ctx);
        if (typeof (verdict as PromiseLike<ToolPolicyVerdict>).then === 'function') {
          return Promise.resolve(verdict).then((settled) => (settled !== 'allow' ? settled : from(ctx, i + 1)));
        }
        if (verdict !== 'allow') return verdict;
      }
      return 'allow';
    };
    return (ctx) => from(ctx, 0);
  }
}

function toAnswer(verdict: ToolPolicyVerdict, ctx: BeforeToolCallContext): BeforeToolCallAnswer {
  if (verdict === 'allow') return Decision.continue();
  if (typeof verdict === 'object' && verdict !== null) {
    if ('deny' in verdict && typeof verdict.deny === 'string') return { block: true, reason: verdict.deny };
    if ('ask' in verdict && typeof verdict.ask === 'string') {
      // Asked and answered: a resumed call, or a tool this thread approved for good.
      if (ctx.approval !== undefined) return Decision.continue();
      if (ctx.state.values[rememberedApprovalKey(ctx.toolCall.name)] === true) return Decision.continue();
      return Decision.pause({ reason: verdict.ask, payload: verdict.payload, expiresAt: expiryOf(verdict) });
    }
    if ('stop' in verdict && typeof verdict.stop === 'string') {
      const outcome = verdict.outcome ?? 'failed';
      if (outcome === 'failed' || outcome === 'cancelled') return Decision.stop(outcome, verdict.stop);
    }
  }
  throw new TypeError(
    "ToolGuard: a policy answers 'allow', { deny: reason }, { ask: reason } or { stop: reason, outcome? }, got " +
      JSON.stringify(verdict),
  );
}

function expiryOf(verdict: { readonly expiresAt?: number | undefined; readonly ttlMs?: number | undefined }) {
  const { expiresAt, ttlMs } = verdict;
  if (expiresAt !== undefined) {
    if (!Number.isFinite(expiresAt))
      throw new InvalidInputError('ToolGuard: `expiresAt` must be a finite epoch-ms number');
    if (ttlMs !== undefined) throw new InvalidInputError('ToolGuard: give `expiresAt` or `ttlMs`, not both');
    return expiresAt;
  }
  if (ttlMs === undefined) return undefined;
  if (!Number.isFinite(ttlMs) || ttlMs < 0)
    throw new InvalidInputError('ToolGuard: `ttlMs` must be a non-negative number');
  return Date.now() + ttlMs;
}
