/**
 * The barrier between a run's loop and its checkpoint sink: how the loop waits until what it emitted is stored.
 * @module
 */

/**
 * Counts the messages a run emitted (each `message_end` entering the checkpoint sink) and those the sink stored, and
 * gives the loop {@link untilStored}: `undefined` when every message emitted so far is stored, else a Promise that
 * resolves once they all are (rejects if the sink fails first). One per run.
 */
export class StoreBarrier {
  private emitted = 0;
  private stored = 0;
  private waiters: { readonly target: number; resolve(): void; reject(error: unknown): void }[] = [];
  private failure: { readonly error: unknown } | undefined;

  /** A `message_end` entered the sink. */
  emittedOne(): void {
    this.emitted++;
  }

  /** The sink stored the next message. */
  storedOne(): void {
    this.stored++;
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((waiter) => waiter.target <= this.stored);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((waiter) => waiter.target > this.stored);
    for (const waiter of ready) waiter.resolve();
  }

  /** The sink failed: whoever waits gets its error, and so does every later wait. */
  fail(error: unknown): void {
    this.failure ??= { error };
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }

  /** `RunAgentLoopOptions.untilStored`: nothing to wait for, or the Promise of every message emitted so far stored. */
  readonly untilStored = (): Promise<void> | undefined => {
    if (this.failure !== undefined) return Promise.reject(this.failure.error);
    if (this.stored >= this.emitted) return undefined;
    const target = this.emitted;
    return new Promise<void>((resolve, reject) => this.waiters.push({ target, resolve, reject }));
  };
}
