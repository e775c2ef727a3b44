/**
 * Summarising older turns when a thread grows past a share of the context window, and storing the summary with it.
 * @module
 */
import { catchError, concatMap, defer, last, map, of, throwError, type Observable } from 'rxjs';
import { ConfigurationError } from '../types/errors.js';
import { textOf, type Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { CompactionReason } from '../types/agent-events.js';
import type { StreamEvent } from '../types/stream-events.js';
import {
  COMPACTION_KEY,
  fingerprintOf,
  storedCompaction,
  summaryMessage,
  type CompactionEntry,
} from './compaction-entry.js';
import { calibrationKey, contextWindowOf, measure } from './context-window.js';
import { failBeforeContent, FailedBeforeContent } from './hold-until-content.js';
import type { HookContext } from './hook-context.js';
import { sinkOf } from './hook-sink.js';
import { serializeForSummary } from './serialize-for-summary.js';
import { TokenCalibration } from './token-calibration.js';
import { turnStarts } from './turn-boundaries.js';
import type { Middleware } from './types.js';
import type { ModelCallContext, ModelCallNext, ModelRequest } from './wrapper-types.js';

/** Options of {@link Compaction}. */
export interface CompactionOptions {
  /** The model that writes summaries (default: the agent's). */
  readonly model?: Model | undefined;
  /** The provider of `model` (default: the agent's). */
  readonly provider?: Provider | undefined;
  /** The share of the context window (0 < triggerAt ≤ 1) past which older turns are summarised (default 0.8). */
  readonly triggerAt?: number | undefined;
  /** Turns (model calls with their prompts and tool results) kept verbatim after the summary (default 4). */
  readonly keepRecent?: number | undefined;
  /** The summarising model's instructions (its system prompt); a default is provided. */
  readonly instructions?: string | undefined;
  /** The window to plan with, when the model's (from the model table) is absent or should be overridden. */
  readonly contextWindow?: number | undefined;
  /** Recover from a `context_overflow` answer by compacting once and retrying the call once (default true). */
  readonly recoverOverflow?: boolean | undefined;
  readonly name?: string | undefined;
}

/** The default instructions of the summarising call. */
export const DEFAULT_COMPACTION_INSTRUCTIONS =
  'You summarise a conversation between a user and an AI assistant that uses tools, so that the assistant can ' +
  'continue it without the original messages. Keep: the user’s goals and constraints, decisions made, facts ' +
  'learnt (file names, identifiers, numbers, results of tool calls that still matter), work done and work left, ' +
  'open questions. Drop pleasantries and repetition. Write plain prose and lists, no preamble. When a previous ' +
  'summary is given, fold it in: the result replaces it.';

/**
 * `transformContext` + `wrapModelCall`: when the context the model would receive passes `triggerAt` of the window
 * (estimated tokens, calibrated by the provider's count of the previous request), the turns before the `keepRecent`
 * most recent are summarised by a model call — the agent's provider and model, or the ones given — and the model
 * receives the summary (as a user message) followed by the recent turns.
 *
 * - The summarising call goes through the run's wrappers like any model call (retries, tracing; the wrappers see
 *   `purpose: 'compaction'`), is announced by `compaction_start`, its `model_attempt`s, and `compaction_end`, and is
 *   cancelled with the run: a cancelled compaction stores nothing.
 * - The summary is **stored with the thread** (the run state, reserved key `cubepi:compaction`: the summary, the seq
 *   range it replaces, a fingerprint of the last message it replaces); the raw messages stay in storage untouched.
 *   Later calls, and a new process that restores the thread, use the stored summary without summarising again; a
 *   thread whose history differs at that message (a fork cut earlier) never applies it.
 * - A second compaction summarises the previous summary plus the turns after it, and replaces it.
 * - Cuts fall between turns: a tool call and its result are always on the same side. Images are dropped from what the
 *   summariser reads, with a note; thinking is left out.
 * - A provider answer `context_overflow` (before any content) triggers one compaction of the stored transcript and
 *   one retry of the call with summary + recent turns — never a loop: a second overflow is the call's answer.
 *
 * Put it first among the `transformContext` middlewares: it works on the stored transcript's positions. A failed
 * summarising call (`compaction_end` with `failed`) leaves the context as it was and the run goes on.
 *
 * @example
 * new Agent({ provider, model: 'claude-sonnet-4-5', checkpointer, threadId,
 *   middleware: [new Compaction({ triggerAt: 0.75, keepRecent: 6, model: findModel('claude-haiku-4-5') })] });
 */
export class Compaction implements Middleware {
  readonly name: string;
  /** The overflow recovery retries: it sits in the `retry` phase, outside a `retry()` middleware (order −1). */
  readonly phase = 'retry' as const;
  readonly order = -1;
  readonly nextCalls = 'many' as const;
  private readonly options: CompactionOptions;
  private readonly triggerAt: number;
  private readonly keepRecent: number;
  private readonly calibration = new TokenCalibration();

  constructor(options: CompactionOptions = {}) {
    const triggerAt = options.triggerAt ?? 0.8;
    const keepRecent = options.keepRecent ?? 4;
    if (!(triggerAt > 0 && triggerAt <= 1)) throw new ConfigurationError('Compaction: triggerAt must be in (0, 1]');
    if (!Number.isInteger(keepRecent) || keepRecent < 1) {
      throw new ConfigurationError('Compaction: keepRecent must be a positive integer (turns)');
    }
    if (options.provider !== undefined && options.model === undefined) {
      throw new ConfigurationError('Compaction: a `provider` needs the `model` it serves');
    }
    this.options = options;
    this.triggerAt = triggerAt;
    this.keepRecent = keepRecent;
    this.name = options.name ?? 'Compaction';
    if (options.recoverOverflow === false) (this as { wrapModelCall?: unknown }).wrapModelCall = undefined;
  }

  transformContext(messages: Message[], ctx: HookContext): Message[] | Observable<Message[]> {
    if (messages.length !== ctx.messages.length) {
      throw new ConfigurationError(
        `${this.name}: it must be the first transformContext middleware (it got ${messages.length} messages for a ` +
          `transcript of ${ctx.messages.length})`,
      );
    }
    const window = contextWindowOf(this.name, ctx, this.options.contextWindow);
    const entry = storedCompaction(ctx.state.values, messages);
    const view = entry === undefined ? messages : [summaryMessage(entry), ...messages.slice(entry.throughSeq)];
    const estimate = measure(this.calibration, ctx, view);
    if (estimate.tokens < this.triggerAt * window) {
      this.calibration.sent(calibrationKey(ctx), estimate.raw, ctx.messages.length);
      return view;
    }
    return this.compact(messages, ctx, entry, 'threshold', estimate.tokens).pipe(map((compacted) => compacted ?? view));
  }

  wrapModelCall(request: ModelRequest, ctx: ModelCallContext, next: ModelCallNext): Observable<StreamEvent> {
    // Only the turn's own call is recovered (not a summary, nor another middleware's call).
    if (ctx.purpose !== undefined) return next(request);
    return defer(() => next(request)).pipe(
      failBeforeContent((event) => event.errorKind === 'context_overflow'),
      catchError((error: unknown) => {
        if (!(error instanceof FailedBeforeContent)) return throwError(() => error);
        const transcript = ctx.messages.slice();
        const entry = storedCompaction(ctx.state.values, transcript);
        return this.compact(transcript, ctx, entry, 'overflow', undefined).pipe(
          concatMap((compacted) =>
            compacted === undefined ? of<StreamEvent>(error.event) : next({ ...request, messages: compacted }),
          ),
        );
      }),
    );
  }

  /**
   * Summarises the turns of `transcript` before the `keepRecent` most recent (with `entry`'s summary when there is
   * one), stores the result and returns what the model receives now; `undefined` when there is nothing new to
   * summarise or the summarising call failed (nothing is stored then).
   */
  private compact(
    transcript: readonly Message[],
    ctx: HookContext,
    entry: CompactionEntry | undefined,
    reason: CompactionReason,
    tokensBefore: number | undefined,
  ): Observable<Message[] | undefined> {
    return defer(() => {
      const sink = sinkOf(ctx);
      if (sink?.callModel === undefined || sink.emit === undefined) {
        throw new Error(`${this.name}: compaction runs inside an agent run (its hook context has no run sink)`);
      }
      const emit = sink.emit.bind(sink);
      const fromSeq = entry?.throughSeq ?? 0;
      const starts = turnStarts(transcript, fromSeq).filter((start) => start > fromSeq);
      const cut = starts.length > this.keepRecent ? starts[starts.length - this.keepRecent]! : undefined;
      if (cut === undefined) return of(undefined);
      const invocationId = `${ctx.runId}.${ctx.turnIndex}.${reason === 'overflow' ? 'overflow-' : ''}compaction`;
      const common = { runId: ctx.runId, turnIndex: ctx.turnIndex, middleware: this.name, invocationId };
      emit({
        type: 'compaction_start',
        ...common,
        reason,
        fromSeq,
        throughSeq: cut,
        tokensBefore: tokensBefore ?? measure(this.calibration, ctx, transcript).tokens,
      });
      const model = this.options.model;
      const text =
        (entry === undefined ? '' : `Previous summary (of messages 1–${fromSeq}):\n\n${entry.summary}\n\n`) +
        `Conversation to summarise${entry === undefined ? '' : ' (what came after it)'}:\n\n` +
        serializeForSummary(transcript.slice(fromSeq, cut)) +
        '\n\nWrite the summary now.';
      const request = {
        ...(this.options.provider !== undefined ? { provider: this.options.provider } : {}),
        ...(model !== undefined ? { model } : {}),
        messages: [{ role: 'user' as const, content: text, timestamp: Date.now() }],
        systemPrompt: this.options.instructions ?? DEFAULT_COMPACTION_INSTRUCTIONS,
      };
      return sink.callModel(request, 'compaction', invocationId).pipe(
        last((event) => event.type === 'done' || event.type === 'error', undefined),
        map((terminal) => {
          const message = terminal?.type === 'done' ? terminal.message : undefined;
          const summary = message === undefined ? '' : textOf(message).trim();
          if (message === undefined || summary === '') {
            const error =
              terminal === undefined
                ? 'the summarising call ended without an answer'
                : terminal.type === 'error'
                  ? (terminal.message.errorMessage ?? terminal.errorKind)
                  : 'the summary was empty';
            emit({ type: 'compaction_end', ...common, outcome: 'failed', throughSeq: cut, error });
            return undefined;
          }
          const stored: CompactionEntry = {
            summary,
            fromSeq,
            throughSeq: cut,
            fingerprint: fingerprintOf(transcript[cut - 1]!),
            model: message.model,
            createdAt: Date.now(),
          };
          sink.patch(this.name, { set: { [COMPACTION_KEY]: stored } });
          const view = [summaryMessage(stored), ...transcript.slice(cut)];
          const after = measure(this.calibration, ctx, view);
          this.calibration.sent(calibrationKey(ctx), after.raw, ctx.messages.length);
          emit({
            type: 'compaction_end',
            ...common,
            outcome: 'stored',
            throughSeq: cut,
            summary,
            usage: message.usage,
            tokensAfter: after.tokens,
          });
          return view;
        }),
      );
    });
  }
}
