/**
 * A filter of words and regular expressions over text, with word boundaries that hold for any script.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { GuardrailVerdict, TextCheck } from './verdict.js';

// Not a type guard: `Array.isArray` would narrow a readonly array to `any[]`.
const isList = (value: unknown): boolean => Array.isArray(value);

/** What {@link keywordCheck} looks for and what it does on a match. */
export interface KeywordCheckOptions {
  /** Words or phrases, matched literally (regular-expression characters in them mean themselves). */
  readonly words?: readonly string[] | undefined;
  /** Regular expressions, matched as given (their own flags; `wholeWord` and `caseSensitive` do not apply to them). */
  readonly patterns?: readonly RegExp[] | undefined;
  /** Whether `words` match only in the same case (default `false`: case-insensitive, by Unicode case folding). */
  readonly caseSensitive?: boolean | undefined;
  /**
   * Whether `words` match only as whole words (default `true`): not preceded or followed by a letter, mark or digit
   * of any script (`café` is not found in `cafés`, `ass` not in `class`).
   */
  readonly wholeWord?: boolean | undefined;
  /** `trip` (default) stops the text; `redact` replaces each match with `replacement` (default `[REDACTED]`). */
  readonly action?: 'trip' | 'redact' | undefined;
  readonly replacement?: string | undefined;
}

const escape = (word: string) => word.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/**
 * A {@link TextCheck} that trips (reason `keyword_matched`) or redacts when `text` holds one of `words` or matches one
 * of `patterns`; `pass` otherwise. `info` is `{ matches: [{ term, text, index }] }`: the configured word (or the
 * pattern's source) and what it matched. Needs at least one word or pattern, no empty word, RegExp patterns
 * (`ConfigurationError` at construction). A check whose signal is already aborted throws its reason.
 *
 * @example
 * const check = keywordCheck({ words: ['password', 'mot de passe'], patterns: [/\bAKIA[0-9A-Z]{16}\b/] });
 */
export function keywordCheck(options: KeywordCheckOptions): TextCheck {
  const { words = [], patterns = [], caseSensitive = false, wholeWord = true, action = 'trip' } = options ?? {};
  if (!isList(words) || !isList(patterns))
    throw new ConfigurationError('keywordCheck: `words` and `patterns` must be arrays');
  if (words.length === 0 && patterns.length === 0)
    throw new ConfigurationError('keywordCheck: give at least one of `words` or `patterns`');
  for (const word of words)
    if (typeof word !== 'string' || word.trim() === '')
      throw new ConfigurationError(`keywordCheck: a word must be a non-empty string, not ${JSON.stringify(word)}`);
  for (const pattern of patterns)
    if (!(pattern instanceof RegExp)) throw new ConfigurationError('keywordCheck: every pattern must be a RegExp');
  if (action !== 'trip' && action !== 'redact')
    throw new ConfigurationError(`keywordCheck: \`action\` must be 'trip' or 'redact', not ${JSON.stringify(action)}`);
  const replacement = options.replacement ?? '[REDACTED]';

  // One alternation per word, longest first so a phrase wins over a word it starts with. `\b` knows only ASCII
  // letters; Unicode lookarounds over letters, marks and digits are what a word boundary means in any script.
  const terms = [...words].sort((a, b) => b.length - a.length);
  const body = terms.map((w) => `(${escape(w)})`).join('|');
  const bounded = wholeWord ? `(?<![\\p{L}\\p{M}\\p{N}_])(?:${body})(?![\\p{L}\\p{M}\\p{N}_])` : `(?:${body})`;
  const matchers: { term: (index: number) => string; regex: RegExp }[] = [];
  if (terms.length > 0)
    matchers.push({
      regex: new RegExp(bounded, caseSensitive ? 'gu' : 'giu'),
      term: (group) => terms[group]!,
    });
  for (const pattern of patterns) {
    const flags = pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`;
    matchers.push({ regex: new RegExp(pattern.source, flags), term: () => pattern.source });
  }

  return (text, context): GuardrailVerdict => {
    context.signal.throwIfAborted();
    const matches: { term: string; text: string; index: number; end: number }[] = [];
    for (const { regex, term } of matchers) {
      for (const match of text.matchAll(new RegExp(regex))) {
        if (match[0] === '') continue;
        const group = match.length > 1 ? match.slice(1).findIndex((g) => g !== undefined) : 0;
        matches.push({
          term: term(Math.max(0, group)),
          text: match[0],
          index: match.index,
          end: match.index + match[0].length,
        });
      }
    }
    if (matches.length === 0) return 'pass';
    const info = { matches: matches.map(({ term, text: matched, index }) => ({ term, text: matched, index })) };
    if (action === 'trip') return { trip: true, reason: 'keyword_matched', info };
    matches.sort((a, b) => a.index - b.index || b.end - a.end);
    let out = '';
    let at = 0;
    for (const match of matches) {
      if (match.index < at) continue; // overlapping matches of two terms: the first one covers it
      out += text.slice(at, match.index) + replacement;
      at = match.end;
    }
    return { rewrite: true, text: out + text.slice(at), info };
  };
}
