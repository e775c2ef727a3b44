/**
 * `Array.isArray` without its narrowing: checking a typed list (`readonly Middleware[]`) with `Array.isArray` narrows
 * it to `any[]`, and everything read from it after is unchecked.
 * @module
 */

/** Whether `value` is an array, for validating arguments whose type already says so. */
export function isList(value: unknown): boolean {
  return Array.isArray(value);
}
