/**
 * The OpenAI client both OpenAI providers build from their options.
 * @module
 */
import OpenAI, { AzureOpenAI } from 'openai';
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
  /**
   * Azure OpenAI, through the SDK's `AzureOpenAI` client: requests go to
   * `<endpoint>/openai/deployments/<deployment>/…?api-version=<apiVersion>`. `baseURL` and `apiKey` above are then
   * unused (give the key here).
   */
  readonly azure?: AzureOptions | undefined;
}

/** Azure OpenAI's connection: resource endpoint, deployment, API version, and a key or an Entra ID token provider. */
export interface AzureOptions {
  /** The resource endpoint, `https://<resource>.openai.azure.com` (default `AZURE_OPENAI_ENDPOINT`). */
  readonly endpoint?: string | undefined;
  /** The deployment (Azure's name for the model you deployed); requests go to it whatever `Model.id` says. */
  readonly deployment?: string | undefined;
  /** The API version, `2024-10-21` (default `OPENAI_API_VERSION`). Required one way or the other. */
  readonly apiVersion?: string | undefined;
  /** Defaults to `AZURE_OPENAI_API_KEY`, unless `azureADTokenProvider` is given. */
  readonly apiKey?: string | undefined;
  /**
   * Microsoft Entra ID instead of a key: returns a bearer token for each request (`getBearerTokenProvider(credential,
   * 'https://cognitiveservices.azure.com/.default')` from `@azure/identity`).
   */
  readonly azureADTokenProvider?: (() => Promise<string>) | undefined;
}

/**
 * The caller's client, or a new one from the options. Throws {@link ConfigurationError} (at construction, not at the
 * first call) for a missing key or options the SDK rejects.
 */
export function createOpenAIClient(options: OpenAIClientOptions, owner: string): OpenAI {
  if (options.client !== undefined) return options.client;
  if (options.azure !== undefined) return createAzureClient(options.azure, options.maxRetries, owner);
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

function createAzureClient(azure: AzureOptions, maxRetries: number | undefined, owner: string): OpenAI {
  const tokenProvider = azure.azureADTokenProvider;
  const apiKey =
    tokenProvider === undefined ? resolveApiKey(azure.apiKey, ['AZURE_OPENAI_API_KEY'], `${owner} (azure)`) : undefined;
  const endpoint = azure.endpoint ?? readEnv('AZURE_OPENAI_ENDPOINT');
  const apiVersion = azure.apiVersion ?? readEnv('OPENAI_API_VERSION');
  if (endpoint === undefined) {
    throw new ConfigurationError(`${owner} (azure): no endpoint. Pass azure.endpoint or set AZURE_OPENAI_ENDPOINT`);
  }
  if (apiVersion === undefined) {
    throw new ConfigurationError(`${owner} (azure): no API version. Pass azure.apiVersion or set OPENAI_API_VERSION`);
  }
  try {
    return new AzureOpenAI({
      endpoint,
      apiVersion,
      maxRetries: maxRetries ?? 0,
      ...(azure.deployment !== undefined ? { deployment: azure.deployment } : {}),
      ...(apiKey !== undefined ? { apiKey } : { azureADTokenProvider: tokenProvider }),
    });
  } catch (error) {
    throw new ConfigurationError(`${owner} (azure): ${errorMessageOf(error)}`, { cause: error });
  }
}

function readEnv(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}
