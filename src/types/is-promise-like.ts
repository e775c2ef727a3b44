/**
 * Telling a thenable from a plain value.
 * @module
 */

/**
 * Whether a value is a thenable (has a callable `then`): what the loop, the hook composition and the listeners await.
 * A plain value or an Observable is not.
 */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
