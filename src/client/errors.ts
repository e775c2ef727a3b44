/**
 * The errors of `cubepi/client`.
 * @module
 */

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

/** The stream broke more times in a row than `retry.maxAttempts` allows, or the server sent something unreadable. */
export class StreamBrokenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StreamBrokenError';
  }
}
