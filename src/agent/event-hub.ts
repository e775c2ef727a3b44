/**
 * A hot multicast for the agent's events, lighter than a Subject on the per-delta path.
 * @module
 */
import { Observable, type Observer } from 'rxjs';

/** What an {@link EventHub} delivers to: an observer's `next` (an RxJS Subscriber, or an object of ours). */
export type Sink<T> = Pick<Observer<T>, 'next'>;

/**
 * Delivers each value synchronously to every sink, in the order they were added. Sinks are kept in an array that is
 * replaced (never mutated) when one is added or removed, so a sink added or removed during a delivery takes effect
 * from the next value — the semantics of an RxJS `Subject`, without its per-value closure and iterator (the RxJS
 * build Node loads is ES5). An `events$` subscriber is itself the sink (no closure around it): on a stream of 100,000
 * deltas, most of which run before V8 optimises the path, every call per value is measurable.
 */
export class EventHub<T> {
  private sinks: readonly Sink<T>[] = [];

  /**
   * Whether any sink is added: kept by {@link add} and its remover, read-only for callers. A field rather than a
   * getter, so that checking it before building or delivering something costs no call.
   */
  active = false;

  /** A hot Observable of the values emitted from now on; unsubscribing removes its sink. */
  readonly observable = new Observable<T>((subscriber) => this.add(subscriber));

  /** Adds a sink; returns the function that removes it. */
  add(sink: Sink<T>): () => void {
    this.sinks = [...this.sinks, sink];
    this.active = true;
    return () => {
      this.sinks = this.sinks.filter((s) => s !== sink);
      this.active = this.sinks.length > 0;
    };
  }

  /** Delivers `value` to every sink added before this call. */
  emit(value: T): void {
    const sinks = this.sinks;
    for (let i = 0; i < sinks.length; i++) sinks[i]!.next(value);
  }
}
