/**
 * What `@google/genai` throws, made readable by the kit's `classifyError`.
 * @module
 */

/**
 * An error answer of the Gemini API or Vertex AI, as the kit's `classifyError` reads one: `status` (the HTTP
 * status), `error` (the body: `{ error: { code, message } }`, with Google's status name such as `RESOURCE_EXHAUSTED`
 * as the code) and `headers` (`retry-after-ms`, from the body's `google.rpc.RetryInfo` `retryDelay`: Google sends the
 * wait in the body, not in a header). `cause` is what the SDK threw.
 */
export class GoogleApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: { readonly error: { readonly code?: string; readonly message: string } },
    readonly headers: Readonly<Record<string, string>>,
    options?: { cause?: unknown },
  ) {
    super(error.error.message, options);
    this.name = 'GoogleApiError';
  }
}

/**
 * Turns the SDK's `ApiError` (its message is the JSON error body, or `got status: …. <json>` for an error inside
 * the stream) into a {@link GoogleApiError}; anything else is returned as it is. The wait comes from the body's
 * `RetryInfo`, else from a `retry-after` header of the response (`responseHeaders`, when the caller saw them: a proxy
 * or a front end may send one).
 */
export function toGoogleApiError(
  error: unknown,
  ApiError: abstract new (...args: never[]) => Error,
  responseHeaders?: Headers,
): unknown {
  if (!(error instanceof ApiError)) return error;
  const status = (error as Error & { status?: unknown }).status;
  const body = parseBody(error.message);
  const inner = body?.error;
  const message = typeof inner?.message === 'string' ? inner.message : error.message;
  const code = typeof inner?.status === 'string' ? inner.status : undefined;
  const retryMs = retryDelayMs(inner?.details);
  return new GoogleApiError(
    typeof status === 'number' ? status : typeof inner?.code === 'number' ? inner.code : 500,
    { error: { ...(code !== undefined ? { code } : {}), message } },
    retryMs !== undefined ? { 'retry-after-ms': String(retryMs) } : retryHeaders(responseHeaders),
    { cause: error },
  );
}

interface GoogleErrorBody {
  readonly error?: {
    readonly code?: unknown;
    readonly message?: unknown;
    readonly status?: unknown;
    details?: unknown;
  };
}

function parseBody(message: string): GoogleErrorBody | undefined {
  const start = message.indexOf('{');
  if (start < 0) return undefined;
  try {
    const parsed = JSON.parse(message.slice(start)) as unknown;
    return parsed !== null && typeof parsed === 'object' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** `google.rpc.RetryInfo`'s `retryDelay` (a protobuf Duration as JSON: `"27s"`, `"1.5s"`) in milliseconds. */
function retryDelayMs(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details as unknown[]) {
    if (detail === null || typeof detail !== 'object') continue;
    const { '@type': type, retryDelay } = detail as { '@type'?: unknown; retryDelay?: unknown };
    if (typeof type !== 'string' || !type.endsWith('google.rpc.RetryInfo') || typeof retryDelay !== 'string') continue;
    const match = /^(\d+(?:\.\d+)?)s$/.exec(retryDelay.trim());
    if (match) return Math.round(Number(match[1]) * 1000);
  }
  return undefined;
}

function retryHeaders(headers: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['retry-after-ms', 'retry-after']) {
    const value = headers?.get(name);
    if (value !== null && value !== undefined) out[name] = value;
  }
  return out;
}
