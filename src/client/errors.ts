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
