/**
 * Turning whatever a vendor SDK threw into a classified provider error.
 * @module
 */
import { errorMessageOf, isAbortError } from '../types/errors.js';
import type { ProviderErrorKind } from '../types/messages.js';
import { parseRetryAfter, type HeadersLike } from './parse-retry-after.js';

/** A failed call, classified: what the terminal `error` event carries. */
export interface ErrorClassification {
  readonly kind: ProviderErrorKind;
  /** A short message for `errorMessage`, naming the HTTP status and the API's error code when there were some. */
  readonly message: string;
  /** How long the API asked to wait before a retry, when it said (see {@link parseRetryAfter}). */
  readonly retryAfterMs?: number | undefined;
}

// Matches a class constructor whatever its parameters, so `instanceof` type-checks.
type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * The error classes {@link classifyError} tells apart: those of a Stainless-generated SDK (`@anthropic-ai/sdk`,
 * `openai` and others share the shape), or your own. They are passed in by the provider module, so the kit loads no
 * SDK.
 *
 * - `APIError`: an error of the API. Its instances are read for `status` (the HTTP status; absent for an error event
 *   inside a stream), `headers` (a `Headers` or a plain record, for `retry-after-ms` / `retry-after`) and `error`
 *   (the response body: `{ type | code, message }`, possibly nested under `error`).
 * - `APIConnectionError` (optional): no connection, or one lost; classified `unavailable` even when it subclasses
 *   `APIError`.
 * - `APIUserAbortError` (optional): the request was aborted; classified `aborted` even when it subclasses `APIError`.
 *
 * A provider over plain `fetch` needs only `APIError` (a class of its own for non-2xx responses): fetch's own
 * failures, a DOM `AbortError` and a refused or reset connection, are recognised without a class.
 */
export interface SdkErrorClasses {
  readonly APIError: ErrorClass;
  readonly APIConnectionError?: ErrorClass | undefined;
  readonly APIUserAbortError?: ErrorClass | undefined;
}

/**
 * Classifies a failure of a model call (see `ProviderErrorKind`): what {@link fromSdkStream} does with whatever `open`
 * or the wire iterator threw. Call it yourself when you build a stream without `fromSdkStream`.
 *
 * - a user abort (`APIUserAbortError`, a DOM `AbortError`) → `aborted`;
 * - no connection, a connection reset mid-stream, a timeout → `unavailable`;
 * - HTTP 429 → `rate_limited` (with `retryAfterMs` from `retry-after-ms` / `retry-after`), except OpenAI's
 *   `insufficient_quota`, which no wait fixes → `bad_request`;
 * - 401/403 → `auth`; 413 and "prompt too long" errors → `context_overflow`; 408, 5xx and Anthropic's 529
 *   (overloaded) → `unavailable`; other 4xx → `bad_request`;
 * - an error *event* inside a stream (no HTTP status) by its `type`/`code` the same way;
 * - no credential found before sending → `auth`;
 * - a chunk that is not JSON → `unknown` ("malformed chunk"); anything else → `unknown`.
 *
 * Never throws. The message is short and says where it comes from (`HTTP 429 rate_limit_error: …`), at most 500
 * characters of the API's own message.
 *
 * @example
 * const { kind, message, retryAfterMs } = classifyError(error, { APIError, APIConnectionError, APIUserAbortError });
 * subscriber.next(asm.error(kind, message, retryAfterMs));
 */
export function classifyError(error: unknown, sdk: SdkErrorClasses): ErrorClassification {
  // Both abort and connection errors subclass APIError in these SDKs: test them first.
  if ((sdk.APIUserAbortError !== undefined && error instanceof sdk.APIUserAbortError) || isAbortError(error))
    return { kind: 'aborted', message: 'Request aborted' };
  if (sdk.APIConnectionError !== undefined && error instanceof sdk.APIConnectionError) {
    const cause = (error as { cause?: unknown }).cause;
    return { kind: 'unavailable', message: `Connection error: ${errorMessageOf(cause ?? error)}` };
  }
  if (error instanceof sdk.APIError) {
    const {
      status,
      headers,
      error: body,
    } = error as Error & { status?: number; headers?: HeadersLike; error?: unknown };
    const details = errorDetails(body);
    const kind =
      status === undefined
        ? classifyErrorCode(details.code, details.message ?? error.message)
        : classifyStatus(status, details.code, details.message ?? error.message);
    const label = [status === undefined ? undefined : `HTTP ${status}`, details.code].filter(Boolean).join(' ');
    const message = truncate(details.message ?? error.message);
    const retryAfterMs = parseRetryAfter(headers);
    return retryAfterMs === undefined
      ? { kind, message: label ? `${label}: ${message}` : message }
      : { kind, message: label ? `${label}: ${message}` : message, retryAfterMs };
  }
  if (error instanceof SyntaxError) return { kind: 'unknown', message: `Malformed stream chunk: ${error.message}` };
  if (isConnectionLost(error)) return { kind: 'unavailable', message: `Connection lost: ${describeCause(error)}` };
  const message = errorMessageOf(error);
  // The SDKs throw a plain Error before sending when no credential can be found.
  if (/could not resolve authentication|api key|credential/i.test(message)) return { kind: 'auth', message };
  return { kind: 'unknown', message };
}

/**
 * Classifies an error reported by type or code rather than by HTTP status: an `error` event inside a stream, an
 * OpenAI Responses `response.failed`. Knows the codes of the Anthropic and OpenAI APIs (`rate_limit_error`,
 * `overloaded_error`, `context_length_exceeded`, `insufficient_quota`, …); an unknown code is `unknown`, or
 * `context_overflow` when `message` says the prompt did not fit. Never throws.
 *
 * @example
 * // in a WireMapper, for an error event of the wire
 * return asm.error(classifyErrorCode(event.error.code, event.error.message), event.error.message);
 */
export function classifyErrorCode(code: string | undefined, message = ''): ProviderErrorKind {
  switch (code) {
    case 'rate_limit_error':
    case 'rate_limit_exceeded':
      return 'rate_limited';
    case 'overloaded_error':
    case 'api_error':
    case 'server_error':
    case 'service_unavailable':
    case 'timeout_error':
      return 'unavailable';
    case 'authentication_error':
    case 'permission_error':
    case 'invalid_api_key':
      return 'auth';
    case 'context_length_exceeded':
    case 'request_too_large':
      return 'context_overflow';
    case 'insufficient_quota':
      return 'bad_request';
    case 'invalid_request_error':
    case 'invalid_prompt':
    case 'not_found_error':
      return isContextOverflow(message) ? 'context_overflow' : 'bad_request';
    default:
      return isContextOverflow(message) ? 'context_overflow' : 'unknown';
  }
}

function classifyStatus(status: number, code: string | undefined, message: string): ProviderErrorKind {
  if (code === 'insufficient_quota') return 'bad_request';
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth';
  if (status === 413 || code === 'context_length_exceeded' || isContextOverflow(message)) return 'context_overflow';
  if (status === 408 || status >= 500) return 'unavailable';
  if (status >= 400) return 'bad_request';
  return 'unknown';
}

// The wordings both APIs (and common OpenAI-compatible servers) use when the prompt does not fit.
const CONTEXT_OVERFLOW =
  /prompt is too long|context[_ ]length|context window|maximum context|too many (input )?tokens|input is too long|exceeds the (model's )?(context|maximum)/i;

function isContextOverflow(message: string): boolean {
  return CONTEXT_OVERFLOW.test(message);
}

/** The `type`/`code`/`message` of an error body: Anthropic nests them under `error`, OpenAI's SDK unwraps them. */
function errorDetails(body: unknown): { code?: string; message?: string } {
  if (body === null || typeof body !== 'object') return {};
  const record = body as Record<string, unknown>;
  const inner =
    record.error !== null && typeof record.error === 'object' ? (record.error as Record<string, unknown>) : record;
  const code = [inner.code, inner.type].find((v): v is string => typeof v === 'string' && v !== 'error');
  const message = typeof inner.message === 'string' ? inner.message : undefined;
  return { ...(code !== undefined ? { code } : {}), ...(message !== undefined ? { message } : {}) };
}

// undici reports a reset mid-body as `TypeError: terminated` with the socket error as its cause.
const NETWORK_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'ECONNABORTED']);

function isConnectionLost(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 4; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
    if (typeof message === 'string' && /^terminated$|other side closed|socket hang up/i.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? errorMessageOf(error) : `${errorMessageOf(error)} (${errorMessageOf(cause)})`;
}

function truncate(text: string, max = 500): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
