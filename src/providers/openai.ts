/**
 * `cubepi/providers/openai`: OpenAI through the official SDK, by either API.
 *
 * - {@link OpenAIProvider}: Chat Completions, also for any OpenAI-compatible server (`baseURL`, a compat profile:
 *   {@link OPENAI_COMPAT}, {@link detectOpenAICompat}) and Azure OpenAI (`azure`).
 * - {@link OpenAIResponsesProvider}: the Responses API, with reasoning carried across turns.
 * @module
 */
export { OpenAIProvider, type OpenAIProviderOptions } from './openai-completions.js';
export { OpenAIResponsesProvider, type OpenAIResponsesProviderOptions } from './openai-responses.js';
export type { AzureOptions, OpenAIClientOptions } from './create-openai-client.js';
export { detectOpenAICompat, OPENAI_COMPAT, type OpenAICompat, type OpenAICompatName } from './openai-compat.js';
