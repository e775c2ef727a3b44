/**
 * Moving a failing model call to another model or provider.
 * @module
 */
import { catchError, defer, throwError, type Observable } from 'rxjs';
import { ConfigurationError } from '../types/errors.js';
import { isList } from '../types/is-list.js';
import type { ProviderErrorKind } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { failBeforeContent, FailedBeforeContent } from './hold-until-content.js';
import type { Middleware } from './types.js';
import type { ModelCallContext, ModelCallNext, ModelRequest } from './wrapper-types.js';

/** A model to fall back to, and the provider that serves it. */
export interface FallbackTarget {
  readonly provider: Provider;
  readonly model: Model;
}

/** Options of {@link fallback}. */
export interface FallbackOptions {
  /** The error kinds that move the call on (default `rate_limited`, `unavailable`, `timeout`, `context_overflow`, `auth`). */
  readonly on?: readonly ProviderErrorKind[] | undefined;
  readonly name?: string | undefined;
}

/** What moves a call on by default: failures another model may not have. */
export const FALLBACK_ERROR_KINDS: readonly ProviderErrorKind[] = [
  'rate_limited',
  'unavailable',
  'timeout',
  'context_overflow',
  'auth',
];

/**
 * A wrapper (phase `adapter`) that moves a model call to the next target when it fails with one of the `on` kinds
 * **before its first content event**. The request's own model is tried first, then each target in order. A model
 * that cannot take the request (`canServe`: an input kind it lacks, tools for a model with `tools: false`, a
 * thinking budget for a model that does not reason, a request over its context window — by its own facts or the
 * model table's) is not sent it: its `model_attempt` carries `incapable` with the reason, it ends as a
 * `model_incapable` (or `context_overflow`) error, and the call always moves on from it, whatever `on` says. The
 * model that answered is the one stamped on the assistant message, and the loop emits a `model_fallback` event for
 * each move. When every target failed, the last error event is the call's result — a typed `model_incapable` error
 * when no model of the chain can take the request. The transcript is converted for each provider by that provider
 * (cross-provider handoff).
 *
 * Place it inside `retry` (the recommended chain is trace → deadline → cache → retry → fallback → provider): each
 * attempt of the retry then walks the fallback chain.
 *
 * @example
 * fallback([{ provider: new OpenAIProvider(), model: findModel('gpt-4.1')! }])
 */
export function fallback(targets: readonly FallbackTarget[], options: FallbackOptions = {}): Middleware {
  if (!isList(targets) || targets.length === 0) throw new ConfigurationError('fallback: give at least one target');
  for (const [i, target] of targets.entries()) {
    const candidate = target as Partial<FallbackTarget> | null | undefined;
    if (typeof candidate?.provider?.stream !== 'function' || typeof candidate.model?.id !== 'string') {
      throw new ConfigurationError(`fallback: target ${i} needs a provider and a Model`);
    }
  }
  const on = new Set<ProviderErrorKind>(options.on ?? FALLBACK_ERROR_KINDS);
  on.delete('aborted');
  return {
    name: options.name ?? 'fallback',
    phase: 'adapter',
    nextCalls: 'many',
    wrapModelCall(request: ModelRequest, _ctx: ModelCallContext, next: ModelCallNext): Observable<StreamEvent> {
      // Every target is tried in turn: one that cannot take the request is refused by the loop (not sent), so its
      // attempt says why, and the call moves on from it.
      const chain: ModelRequest[] = [request, ...targets.map((target) => ({ ...request, ...target }))];
      const from = (index: number): Observable<StreamEvent> =>
        defer(() => next(chain[index]!)).pipe(
          failBeforeContent(
            (event) => index < chain.length - 1 && (event.errorKind === 'model_incapable' || on.has(event.errorKind)),
          ),
          catchError((error: unknown) =>
            error instanceof FailedBeforeContent ? from(index + 1) : throwError(() => error),
          ),
        );
      return from(0);
    },
  };
}
