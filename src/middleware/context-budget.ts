/**
 * Keeping each request under the model's context window, by tokens.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import { contextWindowOf, calibrationKey, measure } from './context-window.js';
import { estimateMessageTokens } from './estimate-tokens.js';
import type { HookContext } from './hook-context.js';
import { sinkOf } from './hook-sink.js';
import { TokenCalibration } from './token-calibration.js';
import { turnStarts } from './turn-boundaries.js';
import type { Middleware } from './types.js';

/** Options of {@link ContextBudget}. */
export interface ContextBudgetOptions {
  /**
   * Tokens kept free for the answer (and the estimate's error): the request is kept under `contextWindow − reserve`.
   * Default: the model's `maxTokens`, at most a quarter of the window.
   */
  readonly reserve?: number | undefined;
  /** The window to plan with, when the model's (from the model table) is absent or should be overridden. */
  readonly contextWindow?: number | undefined;
  readonly name?: string | undefined;
}

/**
 * `transformContext`: keeps every request under the model's context window minus `reserve`, by estimated tokens
 * (`estimateTokens`, calibrated by the provider's count of the previous request). When the context is over budget it
 * drops **whole turns from the oldest** — never a tool call without its result, never the system prompt (which is not
 * a message) — and emits `context_trimmed` saying how many messages it dropped. When the first kept message is not a
 * user message, a short user note saying that earlier messages were left out goes first (some APIs want a user
 * message first). It always keeps the last turn, even when that alone is over budget; a last turn over the model's
 * whole `contextWindow` is not sent (the loop refuses it: `incapable` on its `model_attempt`, and the call ends as the
 * `context_overflow` the vendor would have answered: see `Compaction` and `fallback`). The stored transcript is not
 * changed.
 *
 * @example
 * new Agent({ provider, model: 'claude-sonnet-4-5', middleware: [new ContextBudget({ reserve: 16_000 })] });
 */
export class ContextBudget implements Middleware {
  readonly name: string;
  private readonly reserve: number | undefined;
  private readonly contextWindow: number | undefined;
  private readonly calibration = new TokenCalibration();

  constructor(options: ContextBudgetOptions = {}) {
    const { reserve, contextWindow } = options;
    if (reserve !== undefined && !(Number.isFinite(reserve) && reserve >= 0)) {
      throw new ConfigurationError('ContextBudget: reserve must be a number of tokens ≥ 0');
    }
    if (contextWindow !== undefined && !(Number.isFinite(contextWindow) && contextWindow > 0)) {
      throw new ConfigurationError('ContextBudget: contextWindow must be a positive number of tokens');
    }
    this.reserve = reserve;
    this.contextWindow = contextWindow;
    this.name = options.name ?? 'ContextBudget';
  }

  transformContext(messages: Message[], ctx: HookContext): Message[] {
    const window = contextWindowOf(this.name, ctx, this.contextWindow);
    const reserve = this.reserve ?? Math.min(ctx.model.maxTokens ?? 0, Math.floor(window / 4));
    const budget = window - reserve;
    const key = calibrationKey(ctx);
    const estimate = measure(this.calibration, ctx, messages);
    if (estimate.tokens <= budget) {
      this.calibration.sent(key, estimate.raw, ctx.messages.length);
      return messages;
    }
    const kept = trim(messages, ctx, estimate.raw, estimate.ratio, budget);
    const after = measure(this.calibration, ctx, kept.messages);
    this.calibration.sent(key, after.raw, ctx.messages.length);
    sinkOf(ctx)?.emit?.({
      type: 'context_trimmed',
      runId: ctx.runId,
      turnIndex: ctx.turnIndex,
      middleware: this.name,
      dropped: kept.dropped,
      tokensBefore: estimate.tokens,
      tokensAfter: after.tokens,
      budget,
    });
    return kept.messages;
  }
}

/** The note that stands first when the kept messages do not start with a user message. */
function omittedNote(dropped: number, timestamp: number): Message {
  return {
    role: 'user',
    content: `[${dropped} earlier messages of this conversation were left out to fit the context window.]`,
    timestamp,
  };
}

/** Drops whole turns from the oldest until the estimate fits `budget` (the last turn always stays). */
function trim(
  messages: readonly Message[],
  ctx: HookContext,
  raw: number,
  ratio: number,
  budget: number,
): { messages: Message[]; dropped: number } {
  const starts = turnStarts(messages);
  // Tokens of each message, and what the request costs besides them (base, system prompt, tools).
  const sizes = messages.map((message) => estimateMessageTokens(ctx.model, [message]));
  let rest = raw;
  for (const size of sizes) rest -= size;
  let suffix = 0;
  const suffixFrom: number[] = new Array<number>(messages.length + 1).fill(0);
  for (let i = messages.length - 1; i >= 0; i--) suffixFrom[i] = suffix += sizes[i]!;
  let cut = starts[starts.length - 1] ?? 0;
  for (const start of starts) {
    if (start === 0) continue;
    const note = messages[start]!.role === 'user' ? 0 : estimateMessageTokens(ctx.model, [omittedNote(start, 0)]);
    if ((rest + suffixFrom[start]! + note) * ratio <= budget) {
      cut = start;
      break;
    }
  }
  const kept = messages.slice(cut);
  if (cut > 0 && kept[0]?.role !== 'user') kept.unshift(omittedNote(cut, messages[cut]!.timestamp));
  return { messages: kept, dropped: cut };
}
