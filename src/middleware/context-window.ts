/**
 * The context window a context middleware plans with, and how it measures a request.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { HookContext } from './hook-context.js';
import type { TokenCalibration, TokenEstimate } from './token-calibration.js';

/** `override`, else the model's `contextWindow`; a model without one (and no override) is a configuration error. */
export function contextWindowOf(middleware: string, ctx: HookContext, override: number | undefined): number {
  const window = override ?? ctx.model.contextWindow;
  if (window === undefined || !(window > 0)) {
    throw new ConfigurationError(
      `${middleware}: model "${ctx.model.id}" has no contextWindow (not in the model table); pass \`contextWindow\``,
    );
  }
  return window;
}

/** Which calibration a call belongs to: its thread, else its run. */
export function calibrationKey(ctx: HookContext): string {
  return ctx.threadId ?? ctx.runId;
}

/** The calibrated estimate of sending `messages` (with the run's system prompt and tools) in `ctx`'s call. */
export function measure(calibration: TokenCalibration, ctx: HookContext, messages: readonly Message[]): TokenEstimate {
  return calibration.estimate(calibrationKey(ctx), ctx.messages, {
    model: ctx.model,
    messages,
    systemPrompt: ctx.systemPrompt,
    tools: ctx.tools,
  });
}
