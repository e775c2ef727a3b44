/**
 * `cubepi/worker`: runs beyond one process, on PostgreSQL. `createRunQueue` queues runs (on pg-boss, an optional peer
 * dependency), `startWorker` runs them in any process, and the run-event log carries every frame of every run to any
 * process from any seq. See `docs/scale-out.md`.
 * @module
 */
export {
  createRunEventLog,
  type RunEventLog,
  type RunEventLogOptions,
  type RunEventsOptions,
} from './run-event-log.js';
export {
  createRunQueue,
  type QueuedRun,
  type QueuedRunStatus,
  type RunQueue,
  type RunQueueOptions,
  type RunReadOptions,
  type RunRequest,
} from './run-queue.js';
export { startWorker, type AgentFactory, type RunBudgets, type RunWorker, type WorkerOptions } from './worker.js';
export {
  createPostgresLimitStore,
  type PostgresLimitStore,
  type PostgresLimitStoreOptions,
} from './postgres-limit-store.js';
export { RunEventLogError, RunQueueError, type RunEventLogFailure, type RunQueueFailure } from './errors.js';
export type { SequencedEvent, WireError, WireFrame } from '../wire/frames.js';
