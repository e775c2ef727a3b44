/**
 * The errors of `cubepi/worker`.
 * @module
 */
import { CubepiError } from '../types/errors.js';

/** Why a run-event log operation failed; see {@link RunEventLogError}. */
export type RunEventLogFailure =
  /**
   * An append that does not continue the run's stored seqs (a second writer, a replayed batch, a gap), or one queued
   * behind an append that failed.
   */
  | 'seq_order'
  /** An append to a run whose terminal frame (`end` or `error`) is already stored. */
  | 'run_ended'
  /** The database failed (connection lost, statement refused); the driver's error is the `cause`. */
  | 'database';

/**
 * A run-event log operation failed. For `seq_order` and `run_ended` nothing was written. For `database` during an
 * append, the outcome is unknown when the connection was lost after the statement reached the server: read the run's
 * events to learn whether the batch landed. A reader that fails with it has stopped (resubscribe from the last seq
 * it saw).
 */
export class RunEventLogError extends CubepiError {
  readonly code = 'run_event_log';
  readonly reason: RunEventLogFailure;
  readonly runId: string;

  constructor(reason: RunEventLogFailure, runId: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.reason = reason;
    this.runId = runId;
  }
}

/** Why a run queue operation failed; see {@link RunQueueError}. */
export type RunQueueFailure =
  /** No run has that id. */
  | 'unknown_run'
  /** The run failed as a whole (its stream ended with an `error` frame; the frame's error is the `cause`). */
  | 'run_failed'
  /** The queue was closed. */
  | 'closed'
  /** The database failed (connection lost, statement refused); the driver's error is the `cause`. */
  | 'database';

/** A run queue operation failed (`createRunQueue`, `startWorker`). `runId` is `''` when no run is concerned. */
export class RunQueueError extends CubepiError {
  readonly code = 'run_queue';
  readonly reason: RunQueueFailure;
  readonly runId: string;

  constructor(reason: RunQueueFailure, runId: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.reason = reason;
    this.runId = runId;
  }
}
