import { describe, expect, it } from 'vitest';
import { EventHub } from '../src/agent/event-hub.js';

describe('EventHub (behind events$ and state$)', () => {
  it('delivers each value to every sink in the order they were added', () => {
    const hub = new EventHub<number>();
    const seen: string[] = [];
    hub.add({ next: (v) => seen.push(`a${v}`) });
    const subscription = hub.observable.subscribe((v) => seen.push(`b${v}`));
    hub.emit(1);
    hub.emit(2);
    subscription.unsubscribe();
    expect(seen).toEqual(['a1', 'b1', 'a2', 'b2']);
  });

  it('unsubscribing releases the subscriber: it is no longer held, and active follows the sinks', () => {
    const hub = new EventHub<number>();
    expect(hub.active).toBe(false);
    const seen: number[] = [];
    const subscription = hub.observable.subscribe((v) => seen.push(v));
    const remove = hub.add({ next: () => undefined });
    expect(hub.active).toBe(true);
    subscription.unsubscribe();
    expect(hub.active).toBe(true);
    remove();
    expect(hub.active).toBe(false);
    hub.emit(1);
    expect(seen).toEqual([]);
    const again = hub.observable.subscribe((v) => seen.push(v));
    expect(hub.active).toBe(true);
    hub.emit(2);
    again.unsubscribe();
    expect(hub.active).toBe(false);
    expect(seen).toEqual([2]);
  });

  it('a sink added or removed during a delivery takes effect from the next value (Subject semantics)', () => {
    const hub = new EventHub<number>();
    const seen: string[] = [];
    hub.add({
      next: (v) => {
        seen.push(`a${v}`);
        if (v === 1) hub.add({ next: (w) => seen.push(`late${w}`) });
        if (v === 2) removeB();
      },
    });
    const removeB = hub.add({ next: (v) => seen.push(`b${v}`) });
    hub.emit(1);
    hub.emit(2);
    hub.emit(3);
    expect(seen).toEqual(['a1', 'b1', 'a2', 'b2', 'late2', 'a3', 'late3']);
  });
});
