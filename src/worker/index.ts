/**
 * `cubepi/worker`: runs beyond one process, on PostgreSQL. For now its foundation, the run-event log: every frame of
 * every run appended by the process that runs it, readable by any process from any seq. See `docs/scale-out.md`.
 * @module
 */
export {
  createRunEventLog,
  type RunEventLog,
  type RunEventLogOptions,
  type RunEventsOptions,
} from './run-event-log.js';
export { RunEventLogError, type RunEventLogFailure } from './errors.js';
export type { SequencedEvent, WireError, WireFrame } from '../wire/frames.js';
