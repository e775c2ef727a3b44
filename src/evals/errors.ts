/**
 * The typed errors of `cubepi/evals`: each names the dataset line, case, scorer or recording it is about.
 * @module
 */
import { CubepiError } from '../types/errors.js';

/**
 * A dataset line or case that cannot be used: not valid JSON, not an object, or missing a field (`id`, `input`).
 * Carried in {@link EvalDataset.problems} (the good cases are still loaded and run), never thrown by `loadDataset`.
 */
export class EvalDatasetError extends CubepiError {
  readonly code = 'eval_dataset';
  constructor(
    message: string,
    /** Where the dataset came from (a path, or `code` for cases given in code). */
    readonly source: string,
    /** The 1-based line of a JSONL dataset; absent for cases given in code. */
    readonly line: number | undefined,
    /** The case's id, when the bad entry had a usable one. */
    readonly caseId: string | undefined,
    /** The 0-based position of the case in the dataset (lines that are blank are not counted). */
    readonly index: number,
  ) {
    super(
      `${source}${line === undefined ? ` case #${index}` : `:${line}`}${caseId === undefined ? '' : ` (case ${JSON.stringify(caseId)})`}: ${message}`,
    );
  }
}

/** A scorer that threw (while observing the run or while scoring): that case's score for it, named; the eval goes on. */
export class ScorerError extends CubepiError {
  readonly code = 'eval_scorer';
  constructor(
    readonly scorer: string,
    readonly caseId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`scorer ${scorer} failed on case ${JSON.stringify(caseId)}: ${message}`, options);
  }
}

/**
 * A replayed case asked the model more often than its recording answered (the agent or its prompt changed since the
 * recording, or the recording is cut short). The case fails with this error; the eval goes on.
 */
export class RecordingExhaustedError extends CubepiError {
  readonly code = 'eval_recording_exhausted';
  constructor(
    readonly caseId: string,
    /** How many model calls the recording holds for the case. */
    readonly recorded: number,
    /** How many the replayed run made. */
    readonly requested: number,
  ) {
    super(
      recorded === 0
        ? `no recording for case ${JSON.stringify(caseId)}`
        : `the recording of case ${JSON.stringify(caseId)} ran out: ${recorded} model call${recorded === 1 ? '' : 's'} recorded, the run made ${requested}`,
    );
  }
}

/** A recordings JSONL line that cannot be read (not JSON, or not a recorded call). Thrown by `parseRecordings`. */
export class RecordingFormatError extends CubepiError {
  readonly code = 'eval_recording_format';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`recordings line ${line}: ${message}`);
  }
}

/** A case whose run failed outside the scorers (the agent factory threw, the run's Observable errored). */
export class EvalCaseError extends CubepiError {
  readonly code = 'eval_case';
  constructor(
    readonly caseId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`case ${JSON.stringify(caseId)} failed: ${message}`, options);
  }
}
