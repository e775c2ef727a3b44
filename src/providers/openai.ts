/**
 * `cubepi/providers/openai`: OpenAI through the official SDK, by either API.
 *
 * - {@link OpenAIProvider}: Chat Completions, also for any OpenAI-compatible server (`baseURL`).
 * - {@link OpenAIResponsesProvider}: the Responses API, with reasoning carried across turns.
 * @module
 */
export { OpenAIProvider, type OpenAIProviderOptions } from './openai-completions.js';
export { OpenAIResponsesProvider, type OpenAIResponsesProviderOptions } from './openai-responses.js';
export type { OpenAIClientOptions } from './create-openai-client.js';
