// Collecting a provider stream and checking the invariants every stream must keep.
import type { Observable } from 'rxjs';
import { expect } from 'vitest';
import type { AssistantMessage, StreamEvent } from 'cubepi';

/** A finished stream: its events, and each event's `partial` as JSON at the moment it was emitted. */
export interface CollectedStream {
  readonly events: StreamEvent[];
  readonly snapshots: (string | undefined)[];
  /** The terminal event's message. */
  readonly message: AssistantMessage;
}

/** Subscribes, records every event (and its partial's JSON at emission), resolves when the stream completes. */
export function collectStream(stream$: Observable<StreamEvent>): Promise<CollectedStream> {
  const events: StreamEvent[] = [];
  const snapshots: (string | undefined)[] = [];
  return new Promise((resolve, reject) => {
    stream$.subscribe({
      next: (event) => {
        events.push(event);
        snapshots.push('partial' in event ? JSON.stringify(event.partial) : undefined);
      },
      error: reject,
      complete: () => {
        const last = events.at(-1);
        if (last === undefined || (last.type !== 'done' && last.type !== 'error')) {
          reject(new Error(`stream completed without a terminal event (last: ${last?.type})`));
        } else resolve({ events, snapshots, message: last.message });
      },
    });
  });
}

/**
 * The event sequence, compact: `type` or `type:contentIndex`, consecutive repeats folded into `×N`
 * (`text_delta:0×6`).
 */
export function trace(events: readonly StreamEvent[]): string[] {
  const out: string[] = [];
  let previous = '';
  let count = 0;
  const flush = () => {
    if (count > 0) out.push(count > 1 ? `${previous}×${count}` : previous);
  };
  for (const event of events) {
    const name = 'contentIndex' in event ? `${event.type}:${event.contentIndex}` : event.type;
    if (name === previous) count++;
    else {
      flush();
      previous = name;
      count = 1;
    }
  }
  flush();
  return out;
}

/**
 * The stream contract (DESIGN §3): `start` first (unless the call failed before any byte), exactly one terminal event
 * and it is last, every block event's index points at a block of the right type in its partial, deltas add up to the
 * block's final content, `toolcall_end` carries the call as it stands in the message, and no partial changed after it
 * was emitted.
 */
export function expectWellFormed({ events, snapshots, message }: CollectedStream): void {
  const terminals = events.filter((e) => e.type === 'done' || e.type === 'error');
  expect(terminals, 'exactly one terminal event').toHaveLength(1);
  expect(events.at(-1), 'the terminal event is last').toBe(terminals[0]);
  if (events.length > 1) expect(events[0]!.type).toBe('start');
  const accumulated = new Map<number, string>();
  events.forEach((event, i) => {
    if ('partial' in event)
      expect(JSON.stringify(event.partial), `partial ${i} unchanged since emission`).toBe(snapshots[i]);
    if (!('contentIndex' in event)) return;
    const block = event.partial.content[event.contentIndex];
    const kind = event.type.split('_')[0];
    expect(block?.type, `${event.type} at ${event.contentIndex}`).toBe(
      kind === 'toolcall' ? 'toolCall' : kind === 'thinking' ? 'thinking' : 'text',
    );
    if (event.type === 'text_delta' || event.type === 'thinking_delta') {
      accumulated.set(event.contentIndex, (accumulated.get(event.contentIndex) ?? '') + event.delta);
    }
    if (event.type === 'text_end' || event.type === 'thinking_end') {
      const final = message.content[event.contentIndex] as { text?: string; thinking?: string };
      expect(event.content).toBe(final.text ?? final.thinking);
      if (accumulated.has(event.contentIndex)) expect(accumulated.get(event.contentIndex)).toBe(event.content);
    }
    if (event.type === 'toolcall_end') expect(message.content[event.contentIndex]).toEqual(event.toolCall);
  });
}
