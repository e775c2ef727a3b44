/**
 * Who a request acts for, as the limits see it. Until the server authenticates callers, everyone who passes the token
 * check is one principal, `anonymous`: limits then bound the whole server. @internal
 * @module
 */

/** The one principal of a server that does not tell callers apart. @internal */
export const ANONYMOUS = Object.freeze({ id: 'anonymous' });

/** The principal `request` acts for. @internal */
export function principalOf(_request: Request): { readonly id: string } {
  return ANONYMOUS;
}
