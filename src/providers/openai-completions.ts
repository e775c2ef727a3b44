/**
 * OpenAI Chat Completions (and every OpenAI-compatible server) as a cubepi provider.
 * @module
 */
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type OpenAI from 'openai';
import type { Observable } from 'rxjs';
import { ConfigurationError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { createOpenAIClient, type OpenAIClientOptions } from './create-openai-client.js';
import { fromSdkStream, stallTimeouts } from './from-sdk-stream.js';
import { findModel } from './model-table.js';
import { buildCompletionsRequest } from './openai-completions-request.js';
import { completionsWireMapper } from './openai-completions-wire-mapper.js';
import { withRefusal } from './openai-request-refusal.js';
import { detectOpenAICompat, OPENAI_COMPAT, type OpenAICompat, type OpenAICompatName } from './openai-compat.js';

/** Options of {@link OpenAIProvider}. */
export interface OpenAIProviderOptions extends OpenAIClientOptions {
  /**
   * The provider id stamped on messages; by default the profile's name (`openai`, `ollama`, `deepseek`, `azure`…).
   * Signatures and reasoning are replayed only to the provider id (and model) that produced them.
   */
  readonly id?: string | undefined;
  /**
   * The server's compat profile ({@link OpenAICompat}): a built-in's name (`'deepseek'`, `'openrouter'`, `'vllm'`,
   * `'llamacpp'`, `'ollama'`, `'lmstudio'`, `'groq'`, `'gemini'`, `'azure'`, `'openai'`) or a profile object. By
   * default detected from the base URL (`baseURL`, else the `client`'s, else `OPENAI_BASE_URL`;
   * `detectOpenAICompat`), `azure` with the `azure` option, `openai` when nothing matches.
   */
  readonly compat?: OpenAICompat | OpenAICompatName | undefined;
  /**
   * The request field that carries `StreamOptions.maxTokens`, overriding the profile's: `max_completion_tokens`
   * (OpenAI's, required by its reasoning models) or `max_tokens` (older OpenAI-compatible servers).
   */
  readonly maxTokensField?: 'max_completion_tokens' | 'max_tokens' | undefined;
}

/**
 * The OpenAI Chat Completions API as a cubepi {@link Provider}, for OpenAI and for any OpenAI-compatible server
 * (`baseURL`): text, parallel tool calls, refusals, usage with cached and reasoning tokens, images in user messages,
 * and the reasoning streams of compatible servers (`reasoning_content`, `reasoning`) as thinking.
 *
 * `stream()` is cold: subscribing sends one request, unsubscribing aborts it (also while waiting for the first byte).
 * Every failure is the terminal `error` event, classified, with the content received so far. If a server returns
 * several choices (`n > 1`), only choice 0 becomes the message.
 *
 * Per-request options (`StreamOptions`): `signal`, `maxTokens`, `temperature`, `reasoningEffort` (`none`, `minimal` …
 * `xhigh`, for reasoning models). Reasoning models' own thinking is not replayed (Chat Completions has no field for
 * it); use {@link OpenAIResponsesProvider} to keep OpenAI reasoning across turns.
 *
 * The run's settings (issue 30):
 * - **Reasoning** (`request.reasoning`, resolved per model by the runner) becomes `reasoning_effort` on a model that
 *   reasons and a profile that takes the field: `off` → `none`, a level as is. `options.reasoningEffort` wins when
 *   both are given. A budget alone (`{ budgetTokens }`) has no Chat Completions field and is not sent.
 * - **Native structured output** (`request.output`) becomes `response_format` `json_schema` (name, description,
 *   schema, strict); the answer's text is the JSON. On a profile without it (`deepseek`: `json_object` only) the call
 *   ends with a `model_incapable` error, unsent.
 * - **Files**: PDFs as `file` parts (`file_data` with `filename`, or `file_id`), wav/mp3 audio as `input_audio`, text
 *   files as text parts, image files as `image_url`, each where the profile takes it ({@link OpenAICompat.files}).
 *   The API takes no file URL (only an image's) and no other document type: such a block, video, or an unresolved
 *   `ref` ends the call with a `model_incapable` error naming the block, before anything is sent. Tool results are
 *   text in this API: a tool's text file is part of its `tool` message; its images and other files follow, as OpenAI
 *   advises, in one user message after the results ("Files returned by the tools above:").
 *
 * OpenAI-compatible servers differ in small ways (reasoning fields, `max_tokens`, usage, tool-call ids, thought
 * signatures): a compat profile ({@link OpenAICompat}) declares each server's, detected from `baseURL` or named.
 * Azure OpenAI goes through the SDK's `AzureOpenAI` client (the `azure` option).
 *
 * @example
 * const openai = new OpenAIProvider();                                                   // OPENAI_API_KEY
 * const ollama = new OpenAIProvider({ baseURL: 'http://localhost:11434/v1', apiKey: 'ollama' }); // profile ollama
 * const vllm = new OpenAIProvider({ baseURL: 'http://gpu-box:8000/v1', apiKey: 'none', compat: 'vllm' });
 * const azure = new OpenAIProvider({
 *   azure: { endpoint: 'https://my-resource.openai.azure.com', deployment: 'gpt-4o', apiVersion: '2024-10-21' },
 * });                                                                                    // AZURE_OPENAI_API_KEY
 */
export class OpenAIProvider implements Provider {
  readonly id: string;
  private readonly client: OpenAI;
  private readonly maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** The server's compat profile (given, or detected from `baseURL`). */
  readonly compat: OpenAICompat;

  /** Throws {@link ConfigurationError} for a missing API key, an unknown profile name or invalid options. */
  constructor(options: OpenAIProviderOptions = {}) {
    this.compat = resolveCompat(options);
    this.id = options.id ?? this.compat.name;
    const field = options.maxTokensField ?? this.compat.maxTokensField;
    if (field !== 'max_completion_tokens' && field !== 'max_tokens') {
      throw new ConfigurationError('OpenAIProvider: maxTokensField must be "max_completion_tokens" or "max_tokens"');
    }
    this.maxTokensField = field;
    this.client = createOpenAIClient(options, 'OpenAIProvider');
  }

  /** Streams the model's answer to `messages` (see the class comment for the contract). */
  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    const timeouts = stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning);
    return withRefusal(
      this.id,
      model.id,
      () =>
        buildCompletionsRequest(model, messages, request, {
          provider: this.id,
          maxTokensField: this.maxTokensField,
          compat: this.compat,
        }),
      (params) =>
        fromSdkStream({
          provider: this.id,
          model: model.id,
          api: 'OpenAI Chat Completions',
          timeouts,
          ...(request.options?.signal !== undefined ? { signal: request.options.signal } : {}),
          open: (signal) => this.client.chat.completions.create(params, { signal }),
          mapper: (asm) => completionsWireMapper(asm, model, this.compat),
          errors: { APIError, APIConnectionError, APIUserAbortError },
        }),
    );
  }
}

function resolveCompat(options: OpenAIProviderOptions): OpenAICompat {
  const { compat } = options;
  if (compat === undefined) {
    if (options.azure !== undefined) return OPENAI_COMPAT.azure;
    // The URL the client will use: the option, the caller's client's, or the SDK's own default from the environment.
    const env = typeof process === 'undefined' ? undefined : process.env.OPENAI_BASE_URL;
    return detectOpenAICompat(options.baseURL ?? options.client?.baseURL ?? (env || undefined));
  }
  if (typeof compat !== 'string') return compat;
  if (!Object.hasOwn(OPENAI_COMPAT, compat)) {
    throw new ConfigurationError(
      `OpenAIProvider: unknown compat profile "${String(compat)}" (built-in: ${Object.keys(OPENAI_COMPAT).join(', ')})`,
    );
  }
  return OPENAI_COMPAT[compat];
}
