/**
 * A live run's agent events as timeline spans. (Skeleton: the timeline helper fills this in.)
 * @module
 */
import { map, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../../src/types/agent-events.js';
import type { StudioSpan } from '../../src/studio/api.js';

/** The spans so far of the run the events belong to: a new frozen array per change, open spans `running`. */
export function spansFromEvents(): OperatorFunction<AgentEvent, readonly StudioSpan[]> {
  return map(() => []);
}
