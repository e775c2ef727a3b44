/**
 * Typing what a checkpoint operation threw. In `src/types`, below its users: the checkpoint backends and the
 * checkpoint sink operator (`appendToCheckpoint`).
 * @module
 */
import { CheckpointError, CubepiError, type CheckpointOperation } from './errors.js';

/**
 * The typed error for anything thrown inside a checkpointer operation: cubepi's own errors (a conflict, a
 * corruption, an invalid argument) as they are, anything else (a driver's error) wrapped in a `CheckpointError`
 * naming the operation and the thread, so a raw driver error never escapes.
 */
export function toCheckpointError(error: unknown, operation: CheckpointOperation, threadId?: string): CubepiError {
  if (error instanceof CubepiError) return error;
  return new CheckpointError(
    threadId === undefined ? { operation, cause: error } : { operation, threadId, cause: error },
  );
}
