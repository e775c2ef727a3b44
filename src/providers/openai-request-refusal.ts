/**
 * A request the OpenAI providers refuse to send, found while building its body: the typed `error` event it ends as.
 * @module
 */
import { defer, of, type Observable } from 'rxjs';
import type { ProviderErrorKind } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import { MessageAssembler } from './message-assembler.js';

/**
 * Thrown by the OpenAI request builders for a request the API (or the server's compat profile) cannot take and that
 * cubepi can tell before sending it: a file kind or source the API has no field for, an unresolved blob `ref`, native
 * structured output on a server without `json_schema`. {@link withRefusal} turns it into the call's terminal `error`
 * event (`kind`, the message naming the block and the reason), so no vendor 400 is ever asked for. Not exported from
 * the package: it never leaves a provider.
 */
export class OpenAIRequestRefusal extends Error {
  constructor(
    readonly kind: ProviderErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'OpenAIRequestRefusal';
  }
}

/**
 * A cold stream that builds the request body at subscription, then streams it with `send`; a body the builder
 * refused ({@link OpenAIRequestRefusal}) ends the stream with that `error` event alone, before any request is sent.
 * Other errors thrown by `build` are bugs and go to the Observable error channel.
 */
export function withRefusal<TBody>(
  provider: string,
  model: string,
  build: () => TBody,
  send: (body: TBody) => Observable<StreamEvent>,
): Observable<StreamEvent> {
  return defer(() => {
    let body: TBody;
    try {
      body = build();
    } catch (error) {
      if (!(error instanceof OpenAIRequestRefusal)) throw error;
      return of(new MessageAssembler({ provider, model }).error(error.kind, error.message));
    }
    return send(body);
  });
}
