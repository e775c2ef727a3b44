/**
 * The OpenAI client both OpenAI providers build from their options.
 * @module
 */
import OpenAI from 'openai';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import { resolveApiKey } from './resolve-api-key.js';

/** The connection options both OpenAI providers take. */
export interface OpenAIClientOptions {
  /** Defaults to `OPENAI_API_KEY`. A local OpenAI-compatible server without keys accepts any string. */
  readonly apiKey?: string | undefined;
  /**
   * Defaults to the SDK's (`OPENAI_BASE_URL`, else `https://api.openai.com/v1`). Point it at any OpenAI-compatible
   * server: Ollama (`http://localhost:11434/v1`), vLLM, llama.cpp's server (`http://localhost:8080/v1`).
   */
  readonly baseURL?: string | undefined;
  /** A client you configured yourself (proxy, headers, organization); `apiKey`, `baseURL`, `maxRetries` are then unused. */
  readonly client?: OpenAI | undefined;
  /**
   * How often the SDK itself retries a failed request before the first byte; 0 by default, so a rate limit or an
   * outage reaches you at once as a classified `error` event with `retryAfterMs`, and retrying stays a decision of
   * the run (a retry middleware), visible and cancellable.
   */
  readonly maxRetries?: number | undefined;
}

/**
 * The caller's client, or a new one from the options. Throws {@link ConfigurationError} (at construction, not at the
 * first call) for a missing key or options the SDK rejects.
 */
export function createOpenAIClient(options: OpenAIClientOptions, owner: string): OpenAI {
  if (options.client !== undefined) return options.client;
  const apiKey = resolveApiKey(options.apiKey, ['OPENAI_API_KEY'], owner);
  try {
    return new OpenAI({
      apiKey,
      maxRetries: options.maxRetries ?? 0,
      ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
    });
  } catch (error) {
    throw new ConfigurationError(`${owner}: ${errorMessageOf(error)}`, { cause: error });
  }
}
