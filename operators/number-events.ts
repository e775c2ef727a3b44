import { map, type OperatorFunction } from 'rxjs';
import type { AgentEvent, SequencedEvent } from '../src/types/agent-events.js';

/**
 * Numbers a run's events for the wire: each event is copied with `seq`, 1 for the first event of the subscription,
 * then one more per event. The count is per subscription (subscribe once per run: `cubepi/server` numbers each run
 * it serves after coalescing its deltas, so every client sees the same numbers).
 *
 * ```
 * source:  -a-b-c-|
 * numberEvents()
 * result:  -x-y-z-|     (x = { ...a, seq: 1 }, y = { ...b, seq: 2 }, z = { ...c, seq: 3 })
 * ```
 *
 * @example
 * agent.prompt$('Hi').pipe(throttleDeltas(16), numberEvents()).subscribe((e) => send(e.seq, e));
 */
export function numberEvents(): OperatorFunction<AgentEvent, SequencedEvent> {
  return map((event, index) => ({ ...event, seq: index + 1 }));
}
