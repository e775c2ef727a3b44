/**
 * Following the real tokenizer as a thread grows: the ratio of the provider's count to our estimate of the last
 * request.
 * @module
 */
import type { Message } from '../types/messages.js';
import { estimateTokens, reportedInputTokens, type TokenRequest } from './estimate-tokens.js';

/** A calibrated estimate. */
export interface TokenEstimate {
  /** The estimate, calibrated when a ratio is known. */
  readonly tokens: number;
  /** The family heuristic's figure before calibration. */
  readonly raw: number;
  /** The ratio applied (1 before the first answer with usage). */
  readonly ratio: number;
}

interface ThreadRecord {
  ratio: number;
  /** The raw estimate of the last request sent, and the transcript length then (its answer comes at or after it). */
  pending: { readonly raw: number; readonly at: number } | undefined;
}

/** Ratios are kept within these bounds: a wild figure (a provider counting something else) must not swing plans. */
const MIN_RATIO = 0.25;
const MAX_RATIO = 4;
/** Threads remembered (the oldest is forgotten past this). */
const MAX_THREADS = 1_000;

/**
 * Calibrates {@link estimateTokens} per thread: after a request was sent ({@link TokenCalibration.sent}), the answer's
 * `usage` (uncached input + cache reads + cache writes) over the estimate of that request is the ratio applied to the
 * next estimates of the thread. The ratio lives in memory: a new process starts uncalibrated and calibrates at its
 * first answer.
 *
 * @example
 * const calibration = new TokenCalibration();
 * const { tokens } = calibration.estimate(ctx.threadId ?? ctx.runId, ctx.messages, { model, messages, systemPrompt });
 */
export class TokenCalibration {
  private readonly threads = new Map<string, ThreadRecord>();

  /**
   * The calibrated estimate of `request` for thread `key`. `transcript` is the stored transcript, where the answer to
   * the last request sent is looked for (to update the ratio first).
   */
  estimate(key: string, transcript: readonly Message[], request: TokenRequest): TokenEstimate {
    const record = this.threads.get(key);
    if (record?.pending !== undefined) {
      for (let i = record.pending.at; i < transcript.length; i++) {
        const reported = reportedInputTokens(transcript[i]!);
        if (reported === undefined) continue;
        record.ratio = Math.min(MAX_RATIO, Math.max(MIN_RATIO, reported / record.pending.raw));
        record.pending = undefined;
        break;
      }
    }
    const raw = estimateTokens(request);
    const ratio = record?.ratio ?? 1;
    return { tokens: Math.ceil(raw * ratio), raw, ratio };
  }

  /** Records that a request estimated at `raw` was sent when the stored transcript had `transcriptLength` messages. */
  sent(key: string, raw: number, transcriptLength: number): void {
    let record = this.threads.get(key);
    if (record === undefined) {
      if (this.threads.size >= MAX_THREADS) this.threads.delete(this.threads.keys().next().value!);
      this.threads.set(key, (record = { ratio: 1, pending: undefined }));
    }
    record.pending = { raw, at: transcriptLength };
  }
}
