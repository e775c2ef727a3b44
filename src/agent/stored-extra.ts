/**
 * How an Agent keeps its run state and pending approvals in a checkpointer's `extra` record: the state's values as the
 * record's keys (as `extra` always was), and two reserved keys for the rest.
 * @module
 */
import { recordOf, stateFromStored } from '../types/apply-patch.js';
import type { ApprovalAnswer, ApprovalRequest } from '../types/approval.js';
import { InvalidInputError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { HookState } from '../types/state.js';
import type { InputKeyRecord } from './input-keys.js';

/** The key of the run state's bookkeeping (version, event log, fragments, who changed what). Reserved. */
export const STATE_KEY = 'cubepi:state';
/** The key of the approvals a suspended run waits for. Reserved. */
export const APPROVALS_KEY = 'cubepi:approvals';
/**
 * The key of the idempotency keys of approval answers (`respond(…, { idempotencyKey })`), the last
 * {@link MAX_ANSWERED_KEYS}, each with the run its answer resumed. Reserved.
 */
export const INPUTS_KEY = 'cubepi:inputs';
/**
 * The key under which `cubepi/server` records, on a chat's original thread, the fork the chat id serves since a
 * regenerate (`{ of, threadId }`). Reserved: not part of the thread's run state.
 */
export const HEAD_KEY = 'cubepi:head';
/** How many answered idempotency keys a thread keeps (the oldest are dropped). */
export const MAX_ANSWERED_KEYS = 100;

/** An approval request as kept with the thread: with its answer once given (stored before the call runs). */
export interface StoredRequest extends ApprovalRequest {
  readonly answer?: ApprovalAnswer | undefined;
}

/** The approvals of a suspended batch. */
export interface StoredApprovals {
  readonly requests: readonly StoredRequest[];
  /** Messages injected in the suspended turn, added after the resumed batch. */
  readonly deferred: readonly Message[];
}

/**
 * The `extra` record for a state, its approvals and its answered idempotency keys. A state never patched keeps the
 * record as plain values; no key is written for what is absent or empty.
 */
export function encodeStoredExtra(
  state: HookState,
  approvals: StoredApprovals | undefined,
  answered?: readonly InputKeyRecord[],
): Record<string, unknown> {
  const record: Record<string, unknown> = { ...state.values };
  if (state.version > 0) {
    record[STATE_KEY] = {
      version: state.version,
      events: state.events,
      contextFragments: state.contextFragments,
      changedBy: state.changedBy,
    };
  }
  if (approvals !== undefined) record[APPROVALS_KEY] = approvals;
  if (answered !== undefined && answered.length > 0) record[INPUTS_KEY] = answered;
  return record;
}

/** The state, approvals and answered keys of a loaded `extra` record (a record written before 0.2.0 is all values). */
export function decodeStoredExtra(extra: Readonly<Record<string, unknown>>): {
  state: HookState;
  approvals: StoredApprovals | undefined;
  answered: readonly InputKeyRecord[];
} {
  const {
    [STATE_KEY]: stored,
    [APPROVALS_KEY]: approvals,
    [INPUTS_KEY]: answered,
    [HEAD_KEY]: _head,
    ...values
  } = extra;
  return {
    state: stateFromStored(values, stored),
    approvals: checkApprovals(approvals),
    answered: checkAnswered(answered),
  };
}

function checkAnswered(value: unknown): readonly InputKeyRecord[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((r: unknown) => typeof recordOf(r)?.idempotencyKey === 'string')) {
    throw new InvalidInputError('the stored idempotency keys are not a list of { idempotencyKey, runId }');
  }
  return value as readonly InputKeyRecord[];
}

function checkApprovals(value: unknown): StoredApprovals | undefined {
  if (value === undefined) return undefined;
  const record = recordOf(value);
  const isRequest = (r: unknown) => {
    const request = recordOf(r);
    return typeof request?.requestId === 'string' && typeof request.toolCallId === 'string';
  };
  if (
    record === undefined ||
    !Array.isArray(record.requests) ||
    !Array.isArray(record.deferred) ||
    !(record.requests as unknown[]).every(isRequest)
  ) {
    throw new InvalidInputError('the stored approvals are not an approvals record');
  }
  return record as unknown as StoredApprovals;
}
