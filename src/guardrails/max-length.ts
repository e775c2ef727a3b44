/**
 * A bound on the length of text, in characters or in estimated tokens.
 * @module
 */
import { estimateTextTokens } from '../middleware/estimate-tokens.js';
import { ConfigurationError } from '../types/errors.js';
import type { Model } from '../types/model.js';
import type { GuardrailVerdict, TextCheck } from './verdict.js';

/** The bounds of {@link maxLengthCheck}: at least one of them. */
export interface MaxLengthCheckOptions {
  /** The most characters (UTF-16 code units, as `string.length` counts) the text may have. */
  readonly maxChars?: number | undefined;
  /** The most tokens the text may have, by the project's estimate (`estimateTextTokens`; no tokenizer). */
  readonly maxTokens?: number | undefined;
  /** The model whose provider family the token estimate uses (default: the generic family). */
  readonly model?: Model | undefined;
}

function checkBound(name: string, value: number | undefined): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 0))
    throw new ConfigurationError(`maxLengthCheck: \`${name}\` must be a non-negative integer, not ${String(value)}`);
}

/**
 * A {@link TextCheck} that trips with reason `max_length_exceeded` when `text` has more than `maxChars` characters or
 * more than `maxTokens` estimated tokens; `pass` otherwise. `info` is `{ limit: 'chars' | 'tokens', max, actual }`.
 * Characters are checked first (no estimate is made of a text already too long). Bounds must be non-negative
 * integers, at least one given (`ConfigurationError` at construction). A check whose signal is already aborted
 * throws its reason.
 *
 * @example
 * const check = maxLengthCheck({ maxChars: 20_000, maxTokens: 4_000 });
 */
export function maxLengthCheck(options: MaxLengthCheckOptions): TextCheck {
  const { maxChars, maxTokens, model } = options ?? {};
  checkBound('maxChars', maxChars);
  checkBound('maxTokens', maxTokens);
  if (maxChars === undefined && maxTokens === undefined)
    throw new ConfigurationError('maxLengthCheck: give `maxChars`, `maxTokens` or both');
  return (text, context): GuardrailVerdict => {
    context.signal.throwIfAborted();
    if (maxChars !== undefined && text.length > maxChars)
      return {
        trip: true,
        reason: 'max_length_exceeded',
        info: { limit: 'chars', max: maxChars, actual: text.length },
      };
    if (maxTokens !== undefined) {
      const tokens = estimateTextTokens(text, model);
      if (tokens > maxTokens)
        return { trip: true, reason: 'max_length_exceeded', info: { limit: 'tokens', max: maxTokens, actual: tokens } };
    }
    return 'pass';
  };
}
