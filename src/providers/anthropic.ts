/**
 * `cubepi/providers/anthropic`: Claude through the Anthropic Messages API and the official SDK.
 * @module
 */
import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { defer, type Observable } from 'rxjs';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { buildAnthropicRequest, type CacheRetention } from './anthropic-request.js';
import { FILES_API_BETA, usesFileIds } from './anthropic-files.js';
import { anthropicWireMapper } from './anthropic-wire-mapper.js';
import { fromSdkStream, stallTimeouts } from './from-sdk-stream.js';
import { classifyError } from './classify-error.js';
import { findModel } from './model-table.js';
import { RequestRefusal, refusedStream } from './request-refusal.js';

export type { CacheRetention } from './anthropic-request.js';

const SDK_ERRORS = { APIError, APIConnectionError, APIUserAbortError };

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
 * prompt caching with cache read/write usage, images and files in user messages and tool results, native structured
 * output.
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
 * - **Reasoning** (`request.reasoning`, the run's `reasoning` resolved for the model): `off` → thinking disabled; a
 *   budget → `thinking: { type: 'enabled', budget_tokens }`; an effort → `output_config.effort`, with adaptive
 *   thinking on the models that take no budget (Opus 4.6 and later). `thinkingBudget` or `thinking`, when given,
 *   win: the run's setting is then not read at all.
 * - **Structured output** (`request.output`) → `output_config.format` (`json_schema`; generally available, no beta
 *   header): the final text is the JSON. A schema Claude cannot express (an open record, a value of any type, a
 *   recursive `$ref`) is a `bad_request` error event naming the JSON Pointer path, sent nowhere.
 * - **Files**: PDFs as `document` blocks by `data` (base64), `url` (Anthropic fetches it) or `fileId` (the Files
 *   API; the request then carries `anthropic-beta: files-api-2025-04-14`); text files (`text/*`, JSON, XML) as
 *   plain-text `document` blocks (or by `fileId`); images by data, URL or file id; `name` as the document's title.
 *   The same in tool results, whose content holds documents as they are. Audio, video, other documents, a text file
 *   by URL and an unresolved `ref` are a `model_incapable` error event naming the block, before anything is sent.
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
    const timeouts = stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning);
    const signal = request.options?.signal;
    return defer(() => {
      let params: Anthropic.MessageCreateParamsStreaming | undefined;
      // Built at subscription, before anything is sent: a file or a schema the API cannot take is the terminal
      // error event (`model_incapable`, `bad_request`) without a request. An aborted signal is left to the skeleton.
      if (signal?.aborted !== true) {
        try {
          params = buildAnthropicRequest(model, messages, request, {
            provider: this.id,
            cacheRetention: this.cacheRetention,
            defaultMaxTokens: Math.min(modelMaxTokens ?? 8_192, 32_000),
            ...(modelMaxTokens !== undefined ? { modelMaxTokens } : {}),
          });
        } catch (error) {
          if (error instanceof RequestRefusal) return refusedStream(this.id, model.id, error);
          return refusedStream(this.id, model.id, classifyError(error, SDK_ERRORS));
        }
      }
      const body = params;
      return fromSdkStream({
        provider: this.id,
        model: model.id,
        api: 'Anthropic',
        timeouts,
        ...(signal !== undefined ? { signal } : {}),
        open: (abort) => {
          // Files API ids need its beta; everything else this provider sends is generally available.
          const headers = usesFileIds(body!.messages) ? { 'anthropic-beta': FILES_API_BETA } : undefined;
          return this.client.messages.create(body!, { signal: abort, ...(headers ? { headers } : {}) });
        },
        mapper: (asm) => anthropicWireMapper(asm, model),
        errors: SDK_ERRORS,
      });
    });
  }
}
