/**
 * Reading how long a provider asked us to wait.
 * @module
 */

/** Response headers as either SDK exposes them: a `Headers` object or a plain record. */
export type HeadersLike =
  { get(name: string): string | null } | Readonly<Record<string, string | string[] | undefined>>;

/**
 * The delay a rate-limited or overloaded response asks for, in milliseconds, or `undefined` when it gave none.
 *
 * Reads `retry-after-ms` first (OpenAI sends it, with sub-second precision), then `retry-after` as seconds or as an
 * HTTP date (RFC 9110 §10.2.3; a date in the past means "now", 0). Negative, empty or unparseable values are ignored.
 * `now` is injectable so a date can be tested without a clock.
 *
 * @example
 * parseRetryAfter(new Headers({ 'retry-after': '7' })) // 7000
 */
export function parseRetryAfter(headers: HeadersLike | undefined | null, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(header(headers, 'retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const value = header(headers, 'retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number.parseFloat(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Readonly<Record<string, string | string[] | undefined>>;
  const value = record[name] ?? record[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}
