/**
 * A hot multicast for the agent's events, lighter than a Subject on the per-delta path.
 * @module
 */
import { Observable } from 'rxjs';

/**
 * Delivers each value synchronously to every sink, in the order they were added. Sinks are kept in an array that is
 * replaced (never mutated) when one is added or removed, so a sink added or removed during a delivery takes effect
 * from the next value — the semantics of an RxJS `Subject`, without its per-value closure and iterator (the RxJS
 * build Node loads is ES5): on a stream of 100,000 deltas that difference is measurable.
 */
export class EventHub<T> {
  private sinks: readonly ((value: T) => void)[] = [];

  /** A hot Observable of the values emitted from now on; unsubscribing removes its sink. */
  readonly observable = new Observable<T>((subscriber) => this.add((value) => subscriber.next(value)));

  /** Adds a sink; returns the function that removes it. */
  add(sink: (value: T) => void): () => void {
    this.sinks = [...this.sinks, sink];
    return () => {
      this.sinks = this.sinks.filter((s) => s !== sink);
    };
  }

  /** Delivers `value` to every sink added before this call. */
  emit(value: T): void {
    const sinks = this.sinks;
    for (let i = 0; i < sinks.length; i++) sinks[i]!(value);
  }
}
