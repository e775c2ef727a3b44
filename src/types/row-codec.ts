/**
 * How the built-in checkpointers turn messages and `extra` records into stored text and back.
 *
 * Every row is the message's canonical JSON (`serializeMessage`: keys sorted, no whitespace, `undefined` left out),
 * so the same message is stored as the same bytes whatever key order it was built with, and what comes back is
 * that same JSON value with its keys in that same sorted order, whichever backend stored it (a JSONB column
 * reorders keys: the PostgreSQL backend sorts them again, {@link canonicalCopy}).
 *
 * It lives in `src/types`, below both of its users: the checkpoint backends (`src/checkpoint`) and the checkpoint
 * sink operator (`operators/append-to-checkpoint.ts`), which encodes `extra` as the backends store it.
 * @module
 */
import { CheckpointCorruptionError, CheckpointError, InvalidInputError } from './errors.js';
import { canonicalJson, type Message } from './messages.js';

const ROLES: ReadonlySet<unknown> = new Set(['user', 'assistant', 'toolResult']);

/** Why `value` is not a message, or `undefined` if it looks like one (a role we know and a content of its kind). */
function messageProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const { role, content } = value as { role?: unknown; content?: unknown };
  if (!ROLES.has(role)) return `unknown role ${JSON.stringify(role) ?? String(role)}`;
  const contentOk = Array.isArray(content) || (role === 'user' && typeof content === 'string');
  return contentOk ? undefined : `a ${String(role)} message without a valid content`;
}

/**
 * The rows for `messages`, all or nothing: a value that is not a message is an `InvalidInputError`; one that cannot
 * be serialised (a `BigInt`, a cycle in `details`) is a `CheckpointError` naming the thread. Either way, before
 * anything is written.
 */
export function encodeMessages(threadId: string, messages: readonly Message[]): string[] {
  if (!Array.isArray(messages)) throw new InvalidInputError('messages must be an array of messages');
  const rows = new Array<string>(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const problem = messageProblem(messages[i]);
    if (problem !== undefined) throw new InvalidInputError(`messages[${i}] is not a message: ${problem}`);
    rows[i] = serialize(messages[i], 'append', threadId, `messages[${i}]`);
  }
  return rows;
}

/** The row for an `extra` record; a value that cannot be serialised is a `CheckpointError` naming the thread. */
export function encodeExtra(threadId: string, extra: Readonly<Record<string, unknown>>): string {
  return serialize(extra, 'saveExtra', threadId, 'extra');
}

function serialize(value: unknown, operation: 'append' | 'saveExtra', threadId: string, what: string): string {
  try {
    return canonicalJson(value);
  } catch (error) {
    // A cycle overflows the stack (RangeError); a BigInt is a TypeError. Either way the host's data, not the store.
    const message = `Cannot store ${what} of thread "${threadId}": it is not JSON-serialisable`;
    throw new CheckpointError({ operation, threadId, cause: error, message });
  }
}

/** A stored message row, parsed and checked; anything else is a `CheckpointCorruptionError` naming thread and seq. */
export function decodeMessage(threadId: string, seq: number, text: string, resortKeys = false): Message {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CheckpointCorruptionError(threadId, seq, 'the row is not valid JSON', { cause: error });
  }
  const problem = messageProblem(value);
  if (problem !== undefined) throw new CheckpointCorruptionError(threadId, seq, `the row is not a message: ${problem}`);
  return (resortKeys ? canonicalCopy(value) : value) as Message;
}

/** A stored `extra` row, parsed and checked (a plain object); anything else is a `CheckpointCorruptionError`. */
export function decodeExtra(threadId: string, text: string, resortKeys = false): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CheckpointCorruptionError(threadId, undefined, 'its extra record is not valid JSON', { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CheckpointCorruptionError(threadId, undefined, 'its extra record is not an object');
  }
  return (resortKeys ? canonicalCopy(value) : value) as Record<string, unknown>;
}

/** A deep copy of a parsed JSON value with every object's keys in sorted order (the order of `canonicalJson`). */
function canonicalCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(canonicalCopy);
  const source = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(source).sort()) {
    // A model may well name an argument "__proto__"; assignment would set the prototype instead of a field.
    if (key === '__proto__') {
      Object.defineProperty(copy, key, {
        value: canonicalCopy(source[key]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      copy[key] = canonicalCopy(source[key]);
    }
  }
  return copy;
}
