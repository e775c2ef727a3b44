/**
 * Hook phases and the composed middleware chain an Agent announces on `agent_start`.
 * @module
 */
/**
 * The phases a middleware's hooks are placed in (seed 002 §2, the lifecycle map), earliest first: `run` (identity,
 * tracing, the run's budget) → `context` (retrieval, memory, tool selection, compaction) → `model` (prompt snapshot,
 * cache, routing, usage) → `tool` (permissions, approvals, audit, redaction) → `state` (checkpoint, reducers) → `final`
 * (output guards, acceptance, artifacts). A middleware without a `hookPhase` is placed in `context`.
 */
export const HOOK_PHASES = ['run', 'context', 'model', 'tool', 'state', 'final'] as const;

/** One of {@link HOOK_PHASES}: where a middleware's hooks sit in every hook's chain (`Middleware.hookPhase`). */
export type HookPhase = (typeof HOOK_PHASES)[number];

/**
 * One middleware in one hook's (or wrapper's) chain: its name, its phase (a {@link HookPhase} for a hook, a wrapper
 * phase for `wrapModelCall`/`wrapToolCall`), its order within the phase (0 unless declared) and its declared
 * `version`, when it has one.
 */
export interface MiddlewareChainLink {
  readonly name: string;
  readonly phase: string;
  readonly order: number;
  readonly version?: string;
}

/**
 * The composed chain of an Agent's middleware: for each hook (a `HookName`) or wrapper (`wrapModelCall`,
 * `wrapToolCall`) that runs at least one middleware, in firing order (the hooks, then the wrappers), the
 * middlewares that run, in the order they run (wrappers outermost first). Hooks nobody implements are absent; a hook
 * replaced by one passed to the `Agent` constructor lists that one (named `agent options`). Built once per Agent and
 * frozen: every run's `agent_start` carries the same object.
 */
export interface MiddlewareChain {
  // Keyed by string, not by `HookName`: errors.ts (where hook names live) imports the events, which import this.
  readonly [hookOrWrapper: string]: readonly MiddlewareChainLink[] | undefined;
}
