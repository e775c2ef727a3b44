/**
 * Who a request (and the run it starts) acts for: the identity `cubepi/server`'s `authenticate` gives a caller, the
 * owner of the threads it creates, and what hooks and tools see as `ctx.principal`. See `docs/security.md`.
 * @module
 */

/**
 * An authenticated caller. `id` is what ownership compares: two principals with the same `id` own the same threads.
 * `roles` and `claims` are for an `authorize` of your own (and for tools); the default authorization reads only `id`.
 * Keep it small and JSON-serialisable: a run queue stores it with each run so its worker can pass it on.
 */
export interface Principal {
  /** A stable, unique identity (a user id, a JWT's `sub`): the owner recorded on every thread this caller creates. */
  readonly id: string;
  /** Roles the authenticator granted (e.g. `admin`), if any. */
  readonly roles?: readonly string[] | undefined;
  /** Further claims (a verified JWT's payload, a tenant id, …), if any. */
  readonly claims?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * The principal of a server with no `authenticate` and no `authToken`: everyone who can reach the server is this one
 * principal, so it owns every thread it serves (one owner for everything; ownership separates nobody).
 */
export const ANONYMOUS_PRINCIPAL: Principal = Object.freeze({ id: 'anonymous' });

/** True when `value` is a {@link Principal}: an object whose `id` is a non-empty string. */
export function isPrincipal(value: unknown): value is Principal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { id?: unknown }).id === 'string' &&
    (value as { id: string }).id !== ''
  );
}
