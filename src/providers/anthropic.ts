/**
 * `cubepi/providers/anthropic`: Claude through the Anthropic Messages API and the official SDK.
 * @module
 */
import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { Observable } from 'rxjs';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { buildAnthropicRequest, type CacheRetention } from './anthropic-request.js';
import { anthropicWireMapper } from './anthropic-wire-mapper.js';
import { fromSdkStream, stallTimeouts } from './from-sdk-stream.js';
import { findModel } from './model-table.js';

export type { CacheRetention } from './anthropic-request.js';

/** Options of {@link AnthropicProvider}. */
export interface AnthropicProviderOptions {
  /**
   * Defaults to what the SDK finds: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, then its credential profiles. Found
   * lazily, so a missing credential is an `auth` error event at the first call, not a construction error.
   */
  readonly apiKey?: string | undefined;
  /** Defaults to the SDK's (`ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`). */
  readonly baseURL?: string | undefined;
  /** A client you configured yourself (proxy, headers, timeouts); `apiKey`, `baseURL` and `maxRetries` are then unused. */
  readonly client?: Anthropic | undefined;
  /**
   * How often the SDK itself retries a failed request before the first byte; 0 by default, so a rate limit or an
   * outage reaches you at once as a classified `error` event with `retryAfterMs`, and retrying stays a decision of
   * the run (a retry middleware), visible and cancellable.
   */
  readonly maxRetries?: number | undefined;
  /** Prompt-cache breakpoints (system prompt, last tool, last message): `short` (5 min, default), `long` (1 h), `none`. */
  readonly cacheRetention?: CacheRetention | undefined;
  /** The provider id stamped on messages; `anthropic` by default. */
  readonly id?: string | undefined;
}

/**
 * The Anthropic Messages API as a cubepi {@link Provider}: text, tool use (arguments streamed as JSON, several calls
 * per message), extended thinking (signatures kept and replayed; redacted thinking kept opaque and replayed),
 * prompt caching with cache read/write usage, images in user messages and tool results.
 *
 * `stream()` is cold: subscribing sends one request, unsubscribing aborts it (also while waiting for the first byte).
 * Every failure is the terminal `error` event, classified (`rate_limited`, `context_overflow`, `auth`, `unavailable`,
 * `bad_request`, `aborted`, `unknown`), with the content received so far.
 *
 * Per-request options (`StreamOptions`): `signal`, `maxTokens` (default: the model's largest output, at most 32 000;
 * 8 192 for a model the table does not know), `temperature`, `thinkingBudget` (tokens > 0 enable manual extended
 * thinking, `max_tokens` growing by the budget; Claude 5 models only think adaptively, so for them it asks for
 * adaptive thinking), `thinking` (`'adaptive'` or `'disabled'`: sets the thinking mode explicitly, over
 * `thinkingBudget`), `cacheRetention`.
 *
 * @example
 * const provider = new AnthropicProvider();                      // ANTHROPIC_API_KEY
 * const agent = new Agent({ provider, model: findModel('claude-sonnet-4-5')! });
 */
export class AnthropicProvider implements Provider {
  readonly id: string;
  private readonly client: Anthropic;
  private readonly cacheRetention: CacheRetention;

  /** Throws {@link ConfigurationError} for invalid options. */
  constructor(options: AnthropicProviderOptions = {}) {
    this.id = options.id ?? 'anthropic';
    const retention = options.cacheRetention ?? 'short';
    if (retention !== 'short' && retention !== 'long' && retention !== 'none') {
      throw new ConfigurationError(`AnthropicProvider: cacheRetention must be "short", "long" or "none"`);
    }
    this.cacheRetention = retention;
    if (options.client !== undefined) {
      this.client = options.client;
      return;
    }
    try {
      // Without an explicit key the SDK resolves credentials itself, lazily: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
      // then its profile/config chain. So a missing credential shows at the first call, as an `auth` error event.
      this.client = new Anthropic({
        ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
        maxRetries: options.maxRetries ?? 0,
        ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
      });
    } catch (error) {
      throw new ConfigurationError(`AnthropicProvider: ${errorMessageOf(error)}`, { cause: error });
    }
  }

  /** Streams the model's answer to `messages` (see the class comment for the contract). */
  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    const modelMaxTokens = model.maxTokens ?? findModel(model.id)?.maxTokens;
    return fromSdkStream({
      provider: this.id,
      model: model.id,
      api: 'Anthropic',
      timeouts: stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning),
      ...(request.options?.signal !== undefined ? { signal: request.options.signal } : {}),
      open: (signal) => {
        const params = buildAnthropicRequest(model, messages, request, {
          provider: this.id,
          cacheRetention: this.cacheRetention,
          defaultMaxTokens: Math.min(modelMaxTokens ?? 8_192, 32_000),
          ...(modelMaxTokens !== undefined ? { modelMaxTokens } : {}),
        });
        return this.client.messages.create(params, { signal });
      },
      mapper: (asm) => anthropicWireMapper(asm, model),
      errors: { APIError, APIConnectionError, APIUserAbortError },
    });
  }
}
