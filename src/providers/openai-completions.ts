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
   * `'llamacpp'`, `'ollama'`, `'lmstudio'`, `'groq'`, `'gemini'`, `'openai'`) or a profile object. By default detected
   * from `baseURL` (`detectOpenAICompat`; `azure` with the `azure` option), `openai` when nothing matches.
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
 * Per-request options (`StreamOptions`): `signal`, `maxTokens`, `temperature`, `reasoningEffort` (`minimal` … `high`,
 * for reasoning models). Reasoning models' own thinking is not replayed (Chat Completions has no field for it); use
 * {@link OpenAIResponsesProvider} to keep OpenAI reasoning across turns.
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
    return fromSdkStream({
      provider: this.id,
      model: model.id,
      api: 'OpenAI Chat Completions',
      timeouts: stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning),
      ...(request.options?.signal !== undefined ? { signal: request.options.signal } : {}),
      open: (signal) =>
        this.client.chat.completions.create(
          buildCompletionsRequest(model, messages, request, {
            provider: this.id,
            maxTokensField: this.maxTokensField,
            compat: this.compat,
          }),
          { signal },
        ),
      mapper: (asm) => completionsWireMapper(asm, model, this.compat),
      errors: { APIError, APIConnectionError, APIUserAbortError },
    });
  }
}

function resolveCompat(options: OpenAIProviderOptions): OpenAICompat {
  const { compat } = options;
  if (compat === undefined)
    return options.azure !== undefined ? OPENAI_COMPAT.azure : detectOpenAICompat(options.baseURL);
  if (typeof compat !== 'string') return compat;
  if (!Object.hasOwn(OPENAI_COMPAT, compat)) {
    throw new ConfigurationError(
      `OpenAIProvider: unknown compat profile "${String(compat)}" (built-in: ${Object.keys(OPENAI_COMPAT).join(', ')})`,
    );
  }
  return OPENAI_COMPAT[compat];
}
