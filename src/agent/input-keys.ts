/**
 * The idempotency keys an Agent has taken: which input (a prompt, a steering or follow-up message, an approval's
 * answer) was given under which key, and the run that took it.
 * @module
 */
import { DuplicateInputError, InvalidInputError } from '../types/errors.js';
import type { Message } from '../types/messages.js';

/**
 * The metadata key under which an input message keeps its idempotency key and the run that took it (`{
 * idempotencyKey, runId }`). Stored with the message in the same append, so a thread that holds the message holds
 * its key. Reserved.
 */
export const INPUT_METADATA_KEY = 'cubepi:input';

/** The longest idempotency key, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

/** An idempotency key and the run that took its input (`undefined` while no run has). */
export interface InputKeyRecord {
  readonly idempotencyKey: string;
  readonly runId?: string | undefined;
}

/** Throws {@link InvalidInputError} unless `key` is non-empty text of at most {@link MAX_IDEMPOTENCY_KEY_LENGTH}. */
export function checkIdempotencyKey(key: unknown, where: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new InvalidInputError(
      `${where}: idempotencyKey must be non-empty text of at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
    );
  }
  return key;
}

/** The input record a message carries (see {@link INPUT_METADATA_KEY}), if any. */
export function inputRecordOf(message: Message): InputKeyRecord | undefined {
  const record = message.metadata?.[INPUT_METADATA_KEY] as Partial<InputKeyRecord> | undefined;
  if (typeof record !== 'object' || record === null || typeof record.idempotencyKey !== 'string') return undefined;
  return { idempotencyKey: record.idempotencyKey, runId: typeof record.runId === 'string' ? record.runId : undefined };
}

/** `message` carrying `record` in its metadata (a copy; the other metadata kept). */
export function withInputRecord(message: Message, record: InputKeyRecord): Message {
  const input = record.runId === undefined ? { idempotencyKey: record.idempotencyKey } : record;
  return { ...message, metadata: { ...message.metadata, [INPUT_METADATA_KEY]: input } };
}

/**
 * The keys an Agent knows: those of its history (the messages that carry one, and the answers kept with the thread)
 * and those of inputs given but not stored yet (a prompt whose run has not stored it, a queued message). A key is
 * taken once: {@link check} refuses it again with {@link DuplicateInputError}.
 */
export class InputKeys {
  /** The keys of what is in the history (rebuilt at each restore). */
  private readonly stored = new Map<string, string | undefined>();
  /** The keys of inputs given and not stored yet. */
  private readonly held = new Map<string, string | undefined>();

  /** Throws {@link DuplicateInputError} (with the run that took it) when `key` was taken already. */
  check(key: string): void {
    if (this.stored.has(key)) throw new DuplicateInputError(key, this.stored.get(key));
    if (this.held.has(key)) throw new DuplicateInputError(key, this.held.get(key));
  }

  /** Whether `key`'s input was given in this process and is not stored yet. */
  isHeld(key: string): boolean {
    return this.held.has(key);
  }

  /** `key`'s input was given (to the run `runId`, when known) and is not stored yet. */
  hold(key: string, runId: string | undefined): void {
    this.held.set(key, runId);
  }

  /** `key`'s input never reached the history (its run failed to store it, a queued message was cancelled). */
  release(key: string): void {
    this.held.delete(key);
  }

  /** `key`'s input is in the history, taken by `runId`. */
  commit(key: string, runId: string | undefined): void {
    this.held.delete(key);
    this.stored.set(key, runId);
  }

  /** Forgets every key (the Agent was reset: its history and queues are gone). */
  clear(): void {
    this.stored.clear();
    this.held.clear();
  }

  /** The history is `messages` (and the `answered` records kept with the thread): its keys are these. */
  rebuild(messages: readonly Message[], answered: readonly InputKeyRecord[]): void {
    this.stored.clear();
    for (const record of answered) this.stored.set(record.idempotencyKey, record.runId);
    for (const message of messages) {
      if (message.metadata === undefined) continue;
      const record = inputRecordOf(message);
      if (record !== undefined) this.commit(record.idempotencyKey, record.runId);
    }
  }
}
