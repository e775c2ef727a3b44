/**
 * Run state: what hooks share, changed only by patches that one reducer applies.
 * @module
 */

/** An entry of the state's event log: anything a hook wants recorded with the thread (an audit line, a decision). */
export interface RuntimeEvent {
  readonly type: string;
  readonly [key: string]: unknown;
}

/**
 * A piece of context a hook wants the model to see (user preferences, project rules). Fragments are rendered after
 * the system prompt, in the order they were added, before `transformSystemPrompt` runs; a fragment with an id already
 * present replaces it.
 */
export interface ContextFragment {
  readonly id: string;
  readonly content: string;
}

/**
 * A change to the run state, returned by a hook (never made by mutating `ctx.state`). `set` and `delete` change
 * `values` key by key; `appendEvents` adds to the event log; `addContextFragments` / `removeContextFragmentIds` change
 * the fragments; `baseVersion` makes it a checked write. Every field is optional; an empty patch changes nothing.
 */
export interface StatePatch {
  readonly set?: Readonly<Record<string, unknown>> | undefined;
  readonly delete?: readonly string[] | undefined;
  readonly appendEvents?: readonly RuntimeEvent[] | undefined;
  readonly addContextFragments?: readonly ContextFragment[] | undefined;
  readonly removeContextFragmentIds?: readonly string[] | undefined;
  /**
   * The state version the hook read (`ctx.state.version`) and based this patch on. When given, the run applies the
   * patch only if the state is still at that version; otherwise it is refused as a `StatePatchConflictError` (reason
   * `'version'`, naming the producer, the keys and both versions) and the run fails. Without it the patch applies to
   * whatever the state is (and `state_patched.baseVersion` is the version it was applied to). A non-negative integer.
   */
  readonly baseVersion?: number | undefined;
}

/** Who last changed a key of `values`: the producer (a middleware's name), the version it made, the event id. */
export interface StateChange {
  readonly producer: string;
  readonly version: number;
  readonly eventId: string;
}

/**
 * The run state as hooks read it (`ctx.state`): immutable, replaced by a new snapshot at every applied patch.
 * `version` counts applied patches over the thread's life; `changedBy` says who last set or deleted each key.
 * Persisted with the thread by a checkpointer; `values` is what `ctx.extra` and `agent.state.extra` show.
 */
export interface HookState {
  readonly version: number;
  readonly values: Readonly<Record<string, unknown>>;
  readonly events: readonly RuntimeEvent[];
  readonly contextFragments: readonly ContextFragment[];
  readonly changedBy: Readonly<Record<string, StateChange>>;
}

/** A state with nothing in it. */
export const EMPTY_STATE: HookState = Object.freeze({
  version: 0,
  values: Object.freeze({}),
  events: Object.freeze([]),
  contextFragments: Object.freeze([]),
  changedBy: Object.freeze({}),
});
