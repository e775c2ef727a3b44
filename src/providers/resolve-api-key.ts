/**
 * API keys from options or the environment, checked at construction.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';

/**
 * The key passed in, else the first of `envNames` that is set. Throws {@link ConfigurationError} when there is none,
 * so a missing key fails at construction, not at the first call.
 */
export function resolveApiKey(explicit: string | undefined, envNames: readonly string[], owner: string): string {
  if (explicit !== undefined && explicit !== '') return explicit;
  for (const name of envNames) {
    const value = process.env[name];
    if (value !== undefined && value !== '') return value;
  }
  throw new ConfigurationError(
    `${owner}: no API key. Pass { apiKey } or set ${envNames.join(' or ')} (a local OpenAI-compatible server without keys accepts any string, e.g. 'local').`,
  );
}
