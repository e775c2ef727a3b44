/**
 * HTTP plumbing of the agent server: typed HTTP errors, JSON responses, bounded JSON bodies.
 * @module
 */
import {
  AgentBusyError,
  CubepiError,
  InvalidInputError,
  InvalidStateError,
  StaleApprovalError,
} from '../types/errors.js';

/** A request the server refuses, with its status and a stable `code`. @internal */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Headers the response carries (e.g. `allow` on a 405). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The headers of every SSE response the server sends (a run's frames, a front-end protocol's stream). @internal */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

/** An SSE comment line: keeps an idle stream open through proxies. @internal */
export const HEARTBEAT = new TextEncoder().encode(':\n\n');

/** A JSON response. @internal */
export function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
  });
}

/**
 * The response for a failure: `{ "error": { "code", "message" } }` with the status of its kind — 400 for invalid
 * input, 409 for a busy thread, a stale approval or a state that does not allow the request, 500 (with a generic
 * message: internals are not sent to clients) for anything else.
 * @internal
 */
export function errorResponse(error: unknown): Response {
  if (error instanceof HttpError && error.status === 429 && 'refusal' in error) return limitResponse(error);
  if (error instanceof HttpError) {
    const response = json(error.status, { error: { code: error.code, message: error.message } });
    for (const [name, value] of Object.entries(error.headers)) response.headers.set(name, value);
    return response;
  }
  if (error instanceof CubepiError) {
    const status = statusOf(error);
    if (status !== 500) return json(status, { error: { code: error.code, message: error.message } });
  }
  return json(500, { error: { code: 'internal', message: 'the server failed to handle the request' } });
}

/**
 * A 429 of a limit (`LimitHttpError`): `Retry-After` in whole seconds, and the body `{ "error": { "code", "message",
 * "limit", "used", "allowed", "retryAfterMs" } }` (`code`: `rate_limited`, `budget_exceeded` or `too_many_runs`).
 */
function limitResponse(error: HttpError & { readonly refusal?: unknown }): Response {
  const refusal = error.refusal as { limit: string; used: number; allowed: number; retryAfterMs: number };
  const response = json(429, {
    error: {
      code: error.code,
      message: error.message,
      limit: refusal.limit,
      used: refusal.used,
      allowed: refusal.allowed,
      retryAfterMs: refusal.retryAfterMs,
    },
  });
  response.headers.set('retry-after', String(Math.max(1, Math.ceil(refusal.retryAfterMs / 1000))));
  return response;
}

/** The HTTP status of one of cubepi's typed errors. @internal */
export function statusOf(error: CubepiError): number {
  if (error instanceof InvalidInputError) return 400;
  if (error instanceof AgentBusyError || error instanceof StaleApprovalError || error instanceof InvalidStateError) {
    return 409;
  }
  return 500;
}

/**
 * The request's JSON body, read up to `limit` bytes: a longer body (by its `Content-Length`, or as it streams) is
 * refused with 413 before it is parsed; a body that is not JSON with 400.
 * @internal
 */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) throw tooLarge(limit);
  if (request.body === null) throw new HttpError(400, 'invalid_input', 'a JSON body is required');
  const reader: ReadableStreamDefaultReader<Uint8Array> = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
  } catch {
    throw new HttpError(400, 'invalid_input', 'the body is not valid JSON');
  }
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body_too_large', `the body is larger than ${limit} bytes`);
}
