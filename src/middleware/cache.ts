/**
 * Answering an identical model request from a store.
 * @module
 */
import { defer, from, of, switchMap, tap, type Observable } from 'rxjs';
import { isPromiseLike } from '../types/is-promise-like.js';
import { canonicalJson, type AssistantMessage } from '../types/messages.js';
import { sha256Hex } from './sha256.js';
import type { StreamEvent } from '../types/stream-events.js';
import { EMPTY_USAGE } from '../types/usage.js';
import type { Middleware } from './types.js';
import type { ModelCallContext, ModelCallNext, ModelRequest } from './wrapper-types.js';

/** Where cached responses live: a `Map` fits; so does any async store. */
export interface ResponseStore {
  get(key: string): AssistantMessage | undefined | PromiseLike<AssistantMessage | undefined>;
  /** Not awaited; a throw or a rejected Promise is ignored (see {@link cache}). */
  set(key: string, message: AssistantMessage): unknown;
}

/** Options of {@link cache}. */
export interface CacheOptions {
  readonly store: ResponseStore;
  /** The key of a request (default: a hash of provider, model, system prompt, messages, tools, tool choice, options). */
  readonly key?: ((request: ModelRequest) => string) | undefined;
  readonly name?: string | undefined;
}

/**
 * A wrapper (phase `cache`) that answers a model request identical to an earlier one with the stored response,
 * without calling the model (`next` is not called: a `replace`); otherwise it calls the model and stores a
 * successful response (`done`). Error and aborted responses are never stored. A replayed response has zero usage (no
 * tokens were spent) and the current time as its timestamp.
 *
 * `store.get` may answer with a Promise (awaited before the call). `store.set` may too, but it is not awaited: the
 * response goes out at once, and a failed write — a throw or a rejected Promise — is ignored (the next identical
 * request is simply a miss). Report write failures from the store's own `set` if you need to see them.
 *
 * @example
 * new Agent({ provider, model, middleware: [cache({ store: new Map() })] });
 */
export function cache(options: CacheOptions): Middleware {
  const { store } = options;
  const keyOf = options.key ?? requestKey;
  return {
    name: options.name ?? 'cache',
    phase: 'cache',
    nextCalls: 'at-most-once',
    wrapModelCall(request: ModelRequest, _ctx: ModelCallContext, next: ModelCallNext): Observable<StreamEvent> {
      return defer(() => {
        const key = keyOf(request);
        const found = store.get(key);
        return (isPromiseLike(found) ? from(found) : of(found)).pipe(
          switchMap((hit): Observable<StreamEvent> => {
            if (hit !== undefined)
              return of({ type: 'done', message: { ...hit, usage: EMPTY_USAGE, timestamp: Date.now() } });
            return next(request).pipe(
              tap((event) => {
                if (event.type === 'done') write(store, key, event.message);
              }),
            );
          }),
        );
      });
    },
  };
}

/**
 * Stores `message`, ignoring a failed write: a throw, or a rejected Promise (without a handler it would be an
 * unhandled rejection, which ends a Node process by default). A cache that cannot store is only a missed hit next
 * time; the response goes out either way. There is no channel to report to from here: a store that wants failures
 * logged logs them in its own `set`.
 */
function write(store: ResponseStore, key: string, message: AssistantMessage): void {
  try {
    const written = store.set(key, message);
    if (isPromiseLike(written)) Promise.resolve(written).catch(() => undefined);
  } catch {
    // a synchronous failure is ignored the same way
  }
}

/**
 * The default key: a SHA-256 of everything that decides the response — provider, model, system prompt, messages
 * (without their timestamps), tools, tool choice and options.
 */
export function requestKey(request: ModelRequest): string {
  const decisive = {
    provider: request.provider.id,
    model: request.model.id,
    systemPrompt: request.systemPrompt,
    messages: request.messages.map((message) => ({ ...message, timestamp: 0 })),
    tools: request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
    })),
    toolChoice: request.toolChoice ?? null,
    options: request.options ?? null,
  };
  return sha256Hex(canonicalJson(decisive));
}
