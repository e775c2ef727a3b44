/**
 * Hashing hook inputs for error reports.
 * @module
 */
import { canonicalJson } from '../types/messages.js';
import { sha256Hex } from './sha256.js';

/**
 * A short, stable hash of a hook's input (SHA-256 of its canonical JSON, 16 hex digits): enough to correlate a
 * failure with logs, nothing of the input itself. `undefined` when the input cannot be serialised.
 */
export function hashInput(input: unknown): string | undefined {
  try {
    return sha256Hex(canonicalJson(input)).slice(0, 16);
  } catch {
    return undefined;
  }
}
