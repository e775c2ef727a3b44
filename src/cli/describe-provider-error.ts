/**
 * One line a person can act on for a failed model call (what happened, what to do), from the provider's raw error.
 * Shared by the `cubepi` command and the chat page of `cubepi serve`, so it is browser-safe: no `node:` module, no
 * import beyond types.
 * @module
 */
import type { AssistantMessage } from '../index.js';

/** Where the failed call went, for the line. */
export interface ProviderErrorContext {
  /** The vendor the call went to (picks the variables to name). */
  readonly vendor: 'anthropic' | 'openai';
  /** Whether the call used OpenAI's Responses API (`--provider openai-responses`). */
  readonly responsesApi: boolean;
  /** The server, as the line names it (`api.anthropic.com`, `OPENAI_BASE_URL (http://…)`). */
  readonly endpoint: string;
  readonly model: string;
}

/** The line for a failed call's `errorMessage` and `errorKind`; the raw error shortened to 300 characters in it. */
export function describeProviderError(
  message: Pick<AssistantMessage, 'errorMessage' | 'errorKind'>,
  context: ProviderErrorContext,
): string {
  const raw = message.errorMessage ?? 'unknown error';
  const short = raw.replace(/\s+/g, ' ').slice(0, 300);
  const { vendor, endpoint, model } = context;
  const keyVar = vendor === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
  switch (message.errorKind) {
    case 'auth':
      return `${endpoint} refused the credentials (${short}): check ${keyVar}`;
    case 'rate_limited':
      return `${endpoint} is rate limiting this key (${short}): wait and retry, or use another --model`;
    case 'context_overflow':
      return `the conversation is too long for ${model} (${short}): start a new thread (omit --thread, or /new)`;
    case 'model_incapable':
      return `${model} cannot take this request (${short}): use another --model`;
    default:
  }
  // A server without the endpoint answers 404 and nothing more (a model it lacks gets an error body naming it).
  if (context.responsesApi && /\b404 status code \(no body\)$/.test(raw.trim())) {
    return `${endpoint} has no Responses API (${short}): use --provider openai`;
  }
  if (/\b404\b|not[ _]found|does not exist|unknown model|model_not_found/i.test(raw) && /model|404/i.test(raw)) {
    return (
      `model "${model}" was not found at ${endpoint} (${short}): pass --model with a model it serves ` +
      '(docs/cli.md#models)'
    );
  }
  if (/ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|fetch failed|Connection error|socket|network/i.test(raw)) {
    const variable = vendor === 'anthropic' ? 'ANTHROPIC_BASE_URL' : 'OPENAI_BASE_URL';
    return `cannot reach ${endpoint} (${short}): check your network and ${variable}`;
  }
  return `${vendor} failed: ${short}`;
}
