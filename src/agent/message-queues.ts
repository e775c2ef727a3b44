/**
 * The Agent's two message queues: steering (injected before the next model call) and follow-ups (taken when a run
 * would otherwise end).
 * @module
 */
import type { Message } from '../types/messages.js';

/** How a queue hands messages to the loop: one per model call, or all at once. */
export type QueueMode = 'one-at-a-time' | 'all';

interface QueuedSteer {
  readonly id: string;
  readonly message: Message;
}

/**
 * The steering and follow-up queues of an Agent. Messages come in checked (the facade checks them); the loop takes
 * them through {@link takeSteering} and {@link takeFollowUps}, one per call in mode `one-at-a-time`, all of them in
 * mode `all`.
 */
export class MessageQueues {
  private steering: QueuedSteer[] = [];
  private followUps: Message[] = [];
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

  /** Queues a steering message; returns its id (for {@link cancelSteer}). */
  steer(message: Message): string {
    const id = `steer_${++this.steerCounter}`;
    this.steering.push({ id, message });
    return id;
  }

  /** Removes a queued steering message; returns whether it was still queued. */
  cancelSteer(id: string): boolean {
    const index = this.steering.findIndex((entry) => entry.id === id);
    if (index < 0) return false;
    this.steering.splice(index, 1);
    return true;
  }

  /** Queues a follow-up message. */
  followUp(message: Message): void {
    this.followUps.push(message);
  }

  /** The steering messages for the next model call (one, or all in mode `all`), removed from the queue. */
  takeSteering(): Message[] {
    if (this.steering.length === 0) return [];
    const taken = this.modes.steeringMode === 'all' ? this.steering.splice(0) : this.steering.splice(0, 1);
    return taken.map((entry) => entry.message);
  }

  /** The follow-ups that continue a run (one, or all in mode `all`), removed from the queue. */
  takeFollowUps(): Message[] {
    if (this.followUps.length === 0) return [];
    return this.modes.followUpMode === 'all' ? this.followUps.splice(0) : this.followUps.splice(0, 1);
  }

  /** Empties both queues. */
  clear(): void {
    this.steering = [];
    this.followUps = [];
  }
}
