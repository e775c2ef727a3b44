/**
 * A listener whose Promise is awaited: `agent.subscribe(fn, { await: true })`.
 * @module
 */
import type { AgentEvent } from '../types/agent-events.js';
import type { Sink } from './event-hub.js';

/** A listener of {@link AwaitedListener}: may return a Promise, which is awaited before the next event. */
export type AwaitedListenerFn = (event: AgentEvent) => void | PromiseLike<void>;

interface Waiter {
  /** Resolved once this many events were handled (or the listener left). */
  readonly count: number;
  readonly resolve: () => void;
}

const RESOLVED = Promise.resolve();

/**
 * An event-hub sink with its own queue: each event is queued (the run's delivery returns at once, so neither the run
 * nor the other listeners wait), and the listener is called with the events in order, each after the Promise of the
 * previous call settled; the first call of a burst runs in a microtask, never inside the delivery. A throw or a
 * rejection goes to `report` and the queue goes on. {@link close} drops what is still queued (a call in flight is not
 * waited for). {@link handled} resolves once every event queued so far was handled.
 */
export class AwaitedListener implements Sink<AgentEvent> {
  #queue: (AgentEvent | undefined)[] = [];
  #head = 0;
  #enqueued = 0;
  #handled = 0;
  #pumping = false;
  #closed = false;
  #waiters: Waiter[] = [];

  constructor(
    private readonly listener: AwaitedListenerFn,
    private readonly report: (error: unknown, event: AgentEvent) => void,
  ) {}

  /** Queues `event`; starts the pump when idle. */
  next(event: AgentEvent): void {
    if (this.#closed) return;
    this.#queue.push(event);
    this.#enqueued++;
    if (!this.#pumping) {
      this.#pumping = true;
      void RESOLVED.then(() => this.#pump());
    }
  }

  /** Resolves when every event queued before this call was handled (at once when none is left, or when closed). */
  handled(): Promise<void> {
    const count = this.#enqueued;
    if (this.#closed || this.#handled >= count) return RESOLVED;
    return new Promise<void>((resolve) => this.#waiters.push({ count, resolve }));
  }

  /** Stops delivery: the queued events are dropped and every waiter released. */
  close(): void {
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    this.#release(Infinity);
  }

  async #pump(): Promise<void> {
    while (!this.#closed && this.#head < this.#queue.length) {
      const event = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined; // not held once handed over
      try {
        await this.listener(event);
      } catch (error) {
        try {
          this.report(error, event);
        } catch {
          // A reporter that throws must not stop the queue (nothing else would ever deliver its next event).
        }
      }
      if (this.#closed) break;
      this.#handled++;
      this.#release(this.#handled);
    }
    if (!this.#closed) {
      this.#queue = [];
      this.#head = 0;
    }
    this.#pumping = false;
  }

  #release(handled: number): void {
    if (this.#waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (waiter.count <= handled) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }
}
