/**
 * A request a provider will not send, known before sending it: a file the API cannot take, a schema it cannot
 * express. Loads no SDK and no `node:` module.
 * @module
 */
import { of, type Observable } from 'rxjs';
import type { ProviderErrorKind } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import { MessageAssembler } from './message-assembler.js';

/**
 * Thrown by a request builder for a request it will not send: `kind` is the terminal `error` event's `errorKind`
 * (`model_incapable` for content the API cannot take, so a `fallback` moves on; `bad_request` for a request no model
 * of this API takes as given), `message` names the block or the schema path and why. The provider turns it into
 * that event ({@link refusedStream}); it never reaches the Observable error channel.
 */
export class RequestRefusal extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'RequestRefusal';
  }
}

/**
 * The stream of a request refused before it was sent: one terminal `error` event (no `start`, nothing sent), then
 * completion.
 *
 * @example
 * try { params = build(...) } catch (e) { if (e instanceof RequestRefusal) return refusedStream(id, model.id, e); throw e; }
 */
export function refusedStream(
  provider: string,
  model: string,
  refusal: { readonly kind: ProviderErrorKind; readonly message: string },
): Observable<StreamEvent> {
  return of(new MessageAssembler({ provider, model }).error(refusal.kind, refusal.message));
}

/**
 * Base64 → bytes without `node:buffer` (atob is global in Node 16+ and browsers); `undefined` for text that is not
 * base64.
 */
export function decodeBase64(data: string): Uint8Array | undefined {
  let binary: string;
  try {
    binary = atob(data);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
