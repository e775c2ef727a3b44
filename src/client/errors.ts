/**
 * The errors of `cubepi/client`.
 * @module
 */
import type { Message } from '../types/messages.js';

/** The server refused a request: its HTTP status and the `code` and `message` of its JSON error body. */
export class AgentServerError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'AgentServerError';
    this.status = status;
    this.code = code;
  }
}

/** Why a server refused a request over a principal's limit (the 429 body's `error.code`). */
export type LimitErrorCode = 'rate_limited' | 'budget_exceeded' | 'too_many_runs';

/**
 * The server refused the request over a limit of the caller (429): `code` says which kind (`rate_limited`: runs or
 * tokens per minute; `budget_exceeded`: dollars per day; `too_many_runs`: runs at once), `limit` which limit, and
 * `retryAfterMs` when trying again can succeed (the `Retry-After` header, or the body's `retryAfterMs`). Retryable:
 * the same request may succeed after that long.
 */
export class LimitExceededError extends AgentServerError {
  declare readonly code: LimitErrorCode;
  readonly retryable = true;
  readonly retryAfterMs: number;
  readonly limit: string | undefined;

  constructor(code: LimitErrorCode, message: string, retryAfterMs: number, limit?: string) {
    super(429, code, message);
    this.name = 'LimitExceededError';
    this.retryAfterMs = retryAfterMs;
    this.limit = limit;
  }
}

/**
 * The run failed on the server: the server's error `name`, `code` (for cubepi's typed errors, e.g. `hook_error`)
 * and `message`, as its `error` frame carried them.
 */
export class RemoteRunError extends Error {
  readonly runId: string;
  readonly code: string | undefined;
  readonly remoteName: string;

  constructor(runId: string, error: { readonly name: string; readonly message: string; readonly code?: string }) {
    super(error.message);
    this.name = 'RemoteRunError';
    this.runId = runId;
    this.code = error.code;
    this.remoteName = error.name;
  }
}

/**
 * The server no longer has the run because its process stopped mid-run (a restart on the same checkpointer): the run
 * never finished and never will. `code` is `run_lost`; `messages` are the run's messages as the thread stored them
 * (its user message, what it stored before the stop, then the closing messages the server added: `interrupted`
 * results for unanswered tool calls and an `aborted` assistant message), so a UI can show what survived. The thread
 * is repaired: prompt it again (or ask the model to continue) to go on. Not retryable: watching again gives the same.
 */
export class RunLostError extends RemoteRunError {
  declare readonly code: 'run_lost';
  readonly threadId: string;
  readonly messages: readonly Message[];

  constructor(runId: string, threadId: string, messages: readonly Message[]) {
    super(runId, {
      name: 'RunLostError',
      code: 'run_lost',
      message: `run ${runId} was lost: the server stopped before it finished`,
    });
    this.name = 'RunLostError';
    this.threadId = threadId;
    this.messages = messages;
  }
}

/** The stream broke more times in a row than `retry.maxAttempts` allows, or the server sent something unreadable. */
export class StreamBrokenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StreamBrokenError';
  }
}
