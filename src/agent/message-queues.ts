/**
 * The Agent's two message queues: steering (injected before the next model call) and follow-ups (taken when a run
 * would otherwise end).
 * @module
 */
import type { Message } from '../types/messages.js';
import { withInputRecord } from './input-keys.js';

/** How a queue hands messages to the loop: one per model call, or all at once. */
export type QueueMode = 'one-at-a-time' | 'all';

interface Queued {
  readonly message: Message;
  /** The message's idempotency key: the run that takes it is stamped into its metadata (`cubepi:input`). */
  readonly key?: string | undefined;
}

interface QueuedSteer extends Queued {
  readonly id: string;
}

/**
 * The steering and follow-up queues of an Agent. Messages come in checked (the facade checks them); the loop takes
 * them through {@link takeSteering} and {@link takeFollowUps}, one per call in mode `one-at-a-time`, all of them in
 * mode `all`.
 */
export class MessageQueues {
  private steering: QueuedSteer[] = [];
  private followUps: Queued[] = [];
  private steerCounter = 0;

  /** `modes` is read at every take (the Agent passes its options: default `one-at-a-time` for both). */
  constructor(
    private readonly modes: {
      readonly steeringMode?: QueueMode | undefined;
      readonly followUpMode?: QueueMode | undefined;
    },
  ) {}

  /** Whether a steering message is queued. */
  get hasSteering(): boolean {
    return this.steering.length > 0;
  }

  /** Queues a steering message (with its idempotency key, if any); returns its id (for {@link cancelSteer}). */
  steer(message: Message, key?: string): string {
    const id = `steer_${++this.steerCounter}`;
    this.steering.push(key === undefined ? { id, message } : { id, message, key });
    return id;
  }

  /** Removes a queued steering message; returns it (with its key) if it was still queued. */
  cancelSteer(id: string): { readonly key?: string | undefined } | undefined {
    const index = this.steering.findIndex((entry) => entry.id === id);
    if (index < 0) return undefined;
    return this.steering.splice(index, 1)[0];
  }

  /** Queues a follow-up message (with its idempotency key, if any). */
  followUp(message: Message, key?: string): void {
    this.followUps.push(key === undefined ? { message } : { message, key });
  }

  /**
   * The steering messages for the next model call (one, or all in mode `all`), removed from the queue. A message
   * given with an idempotency key carries it in its metadata with `runId`, the run that takes it.
   */
  takeSteering(runId?: string): Message[] {
    if (this.steering.length === 0) return [];
    const taken = this.modes.steeringMode === 'all' ? this.steering.splice(0) : this.steering.splice(0, 1);
    return messagesOf(taken, runId);
  }

  /** The follow-ups that continue a run (one, or all in mode `all`), removed from the queue; keyed as steering is. */
  takeFollowUps(runId?: string): Message[] {
    if (this.followUps.length === 0) return [];
    const taken = this.modes.followUpMode === 'all' ? this.followUps.splice(0) : this.followUps.splice(0, 1);
    return messagesOf(taken, runId);
  }

  /** Empties both queues. */
  clear(): void {
    this.steering = [];
    this.followUps = [];
  }
}

/**
 * The messages of `taken`, as the run takes them. A loop, not a `map` callback: a closure over `runId` in the take
 * methods would make every call allocate its context, and the run calls them after every turn (mostly to find nothing).
 */
function messagesOf(taken: readonly Queued[], runId: string | undefined): Message[] {
  const messages = new Array<Message>(taken.length);
  for (let i = 0; i < taken.length; i++) messages[i] = messageOf(taken[i]!, runId);
  return messages;
}

/** A queued message as the run takes it: stamped with its key and the run, when it has a key. */
function messageOf(entry: Queued, runId: string | undefined): Message {
  return entry.key === undefined ? entry.message : withInputRecord(entry.message, { idempotencyKey: entry.key, runId });
}
