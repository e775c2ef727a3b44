/**
 * The one reducer of the run state: every patch goes through it, whoever produced it.
 * @module
 */
import { InvalidInputError } from './errors.js';
import type { ContextFragment, HookState, RuntimeEvent, StateChange, StatePatch } from './state.js';

/**
 * `state` with `patch` applied, as a new frozen snapshot (the old one is untouched: a hook that kept it still reads
 * what it read). `set` and `delete` record `{ producer, version, eventId }` as the keys' `changedBy`; the version is
 * one more than `state.version`. An empty patch still counts as a version (it was applied).
 */
export function applyPatch(state: HookState, patch: StatePatch, producer: string, eventId: string): HookState {
  const version = state.version + 1;
  const change: StateChange = { producer, version, eventId };
  let values = state.values;
  let changedBy = state.changedBy;
  if (patch.set !== undefined || patch.delete !== undefined) {
    const nextValues: Record<string, unknown> = { ...state.values };
    const nextChanged: Record<string, StateChange> = { ...state.changedBy };
    for (const key of Object.keys(patch.set ?? {})) {
      nextValues[key] = patch.set![key];
      nextChanged[key] = change;
    }
    for (const key of patch.delete ?? []) {
      delete nextValues[key];
      nextChanged[key] = change;
    }
    values = Object.freeze(nextValues);
    changedBy = Object.freeze(nextChanged);
  }
  let events = state.events;
  if (patch.appendEvents !== undefined && patch.appendEvents.length > 0) {
    events = Object.freeze([...state.events, ...patch.appendEvents]);
  }
  let contextFragments = state.contextFragments;
  if (patch.removeContextFragmentIds !== undefined || patch.addContextFragments !== undefined) {
    const removed = new Set(patch.removeContextFragmentIds ?? []);
    const added = patch.addContextFragments ?? [];
    for (const fragment of added) removed.add(fragment.id); // a fragment with the same id is replaced
    contextFragments = Object.freeze([...state.contextFragments.filter((f) => !removed.has(f.id)), ...added]);
  }
  return Object.freeze({ version, values, events, contextFragments, changedBy });
}

/** The keys a patch changes (`set` and `delete`): what two patches of one parallel batch must not share. */
export function patchedKeys(patch: StatePatch): string[] {
  return [...Object.keys(patch.set ?? {}), ...(patch.delete ?? [])];
}

/**
 * Throws `TypeError` saying what is wrong unless `value` is a {@link StatePatch} whose data JSON can hold and whose
 * keys are not reserved (`cubepi:…`), and whose `baseVersion`, if any, is an integer of 0 or more.
 */
export function checkPatch(value: unknown): asserts value is StatePatch {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('a state patch must be an object');
  }
  const patch = value as Record<string, unknown>;
  for (const key of Object.keys(patch)) {
    if (!PATCH_FIELDS.has(key)) throw new TypeError(`a state patch has no field "${key}"`);
  }
  if (patch.set !== undefined) {
    if (typeof patch.set !== 'object' || patch.set === null || Array.isArray(patch.set))
      throw new TypeError('patch.set must be an object of values');
    try {
      JSON.stringify(patch.set);
    } catch (error) {
      throw new TypeError(`patch.set cannot be stored as JSON (${(error as Error).message})`, { cause: error });
    }
  }
  if (patch.delete !== undefined && !isStringList(patch.delete)) throw new TypeError('patch.delete must be keys');
  for (const key of [...Object.keys(patch.set ?? {}), ...((patch.delete as string[] | undefined) ?? [])]) {
    if (key.startsWith(RESERVED_PREFIX))
      throw new TypeError(`state key "${key}" is reserved (keys starting with "cubepi:")`);
  }
  if (patch.appendEvents !== undefined) {
    if (!Array.isArray(patch.appendEvents) || !patch.appendEvents.every(isRuntimeEvent))
      throw new TypeError('patch.appendEvents must be events, each with a string type');
  }
  if (patch.addContextFragments !== undefined) {
    if (!Array.isArray(patch.addContextFragments) || !patch.addContextFragments.every(isFragment))
      throw new TypeError('patch.addContextFragments must be fragments { id: string, content: string }');
  }
  if (patch.removeContextFragmentIds !== undefined && !isStringList(patch.removeContextFragmentIds))
    throw new TypeError('patch.removeContextFragmentIds must be ids');
  if (
    patch.baseVersion !== undefined &&
    !(Number.isSafeInteger(patch.baseVersion) && (patch.baseVersion as number) >= 0)
  )
    throw new TypeError('patch.baseVersion must be a state version (an integer of 0 or more)');
}

/** Keys of `values` a patch may not touch: the Agent stores its bookkeeping under them (see `docs/state.md`). */
const RESERVED_PREFIX = 'cubepi:';

const PATCH_FIELDS = new Set([
  'set',
  'delete',
  'appendEvents',
  'addContextFragments',
  'removeContextFragmentIds',
  'baseVersion',
]);

function isStringList(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isRuntimeEvent(value: unknown): value is RuntimeEvent {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

function isFragment(value: unknown): value is ContextFragment {
  if (typeof value !== 'object' || value === null) return false;
  const { id, content } = value as { id?: unknown; content?: unknown };
  return typeof id === 'string' && typeof content === 'string';
}

/** The text fragments add to the system prompt: each after a blank line, in order. */
export function renderFragments(systemPrompt: string, fragments: readonly ContextFragment[]): string {
  if (fragments.length === 0) return systemPrompt;
  let text = systemPrompt;
  for (const fragment of fragments) text += (text === '' ? '' : '\n\n') + fragment.content;
  return text;
}

/** A state restored from storage, checked (a damaged record is refused rather than half-read). */
export function stateFromStored(values: Readonly<Record<string, unknown>>, stored: unknown): HookState {
  if (stored === undefined) return Object.freeze({ ...EMPTY, values: Object.freeze({ ...values }) });
  const record = recordOf(stored);
  if (
    record === undefined ||
    typeof record.version !== 'number' ||
    !Array.isArray(record.events) ||
    !Array.isArray(record.contextFragments) ||
    typeof record.changedBy !== 'object' ||
    record.changedBy === null
  ) {
    throw new InvalidInputError('the stored run state is not a state record');
  }
  return Object.freeze({
    version: record.version,
    values: Object.freeze({ ...values }),
    events: Object.freeze([...(record.events as RuntimeEvent[])]),
    contextFragments: Object.freeze([...(record.contextFragments as ContextFragment[])]),
    changedBy: Object.freeze({ ...(record.changedBy as Record<string, StateChange>) }),
  });
}

const EMPTY = { version: 0, events: [], contextFragments: [], changedBy: {} } as const;

/** `value` as a record of unknown fields, when it is a non-null, non-array object. */
export function recordOf(value: unknown): Readonly<Record<string, unknown>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
