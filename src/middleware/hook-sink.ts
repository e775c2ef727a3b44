/**
 * Where composed hooks report what is not their answer: state patches (with who produced them) and the failures of
 * hooks that skip on error. The loop puts a sink on every hook context it builds, under a symbol.
 * @module
 */
import type { HookError } from '../types/errors.js';
import type { StatePatch } from '../types/state.js';

/** What a run does with a hook's side reports. */
export interface HookSink {
  /** A hook of `producer` answered with `patch`: apply it now (it may throw a `StatePatchConflictError`). */
  patch(producer: string, patch: StatePatch): void;
  /** A hook of a middleware declared `onError: 'skip'` failed: report it; its answer is dropped. */
  skipped(error: HookError): void;
}

/** The key of the sink on a hook context (a symbol: invisible to hooks that do not look for it, kept by spreads). */
export const HOOK_SINK: unique symbol = Symbol('cubepi.hookSink');

/** The sink on `ctx`, if the run put one there. */
export function sinkOf(ctx: unknown): HookSink | undefined {
  return typeof ctx === 'object' && ctx !== null ? (ctx as { [HOOK_SINK]?: HookSink })[HOOK_SINK] : undefined;
}
