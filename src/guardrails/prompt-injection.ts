/**
 * A heuristic for prompt injection in text a model will read (a tool's result, a fetched page): known phrases, role
 * markers, hidden characters and exfiltration links, each a weighted signal, summed against a threshold. It is a
 * tripwire for the crude and the copied, not a defence: a paraphrase passes it.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { GuardrailVerdict, TextCheck } from './verdict.js';

// Not a type guard: `Array.isArray` would narrow a readonly array to `any[]`.
const isList = (value: unknown): boolean => Array.isArray(value);

/** One signal of {@link promptInjectionCheck}: a name, what finds it, and what it adds to the score. */
export interface PromptInjectionSignal {
  readonly name: string;
  readonly pattern: RegExp;
  readonly weight: number;
}

/** Options of {@link promptInjectionCheck}. */
export interface PromptInjectionCheckOptions {
  /** The score at or above which the check trips (default 1: one strong signal, or two weaker ones). */
  readonly threshold?: number | undefined;
  /** Signals of the caller's own, scored beside the built-ins (each counted once however often it matches). */
  readonly signals?: readonly PromptInjectionSignal[] | undefined;
}

// Invisible characters: zero-width spaces and joiners (but U+200D, the emoji joiner), bidirectional overrides and
// isolates, word joiners, the BOM. Unicode tag characters (U+E0000–U+E007F) are a signal of their own: they spell
// ASCII no one sees and some models read.
const INVISIBLE = /[\u200B\u200C\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/gu;
const TAGS = /[\u{E0000}-\u{E007F}]/u;

/** The built-in phrase signals, matched on the text with invisible characters removed. */
export const PROMPT_INJECTION_SIGNALS: readonly PromptInjectionSignal[] = [
  {
    name: 'ignore_instructions',
    pattern:
      /\b(?:ignore|disregard|forget|override|bypass)\s{1,5}(?:(?:all|any|the|your|my|of|these|those)\s{1,5}){0,3}(?:previous|prior|above|earlier|preceding|former|original|system)\s{1,5}(?:instructions?|prompts?|directions|rules|guidelines|messages|context)\b/i,
    weight: 1,
  },
  {
    name: 'role_reassignment',
    pattern:
      /\byou\s{1,5}are\s{1,5}now\b|\bfrom\s{1,5}now\s{1,5}on,?\s{1,5}you\s{1,5}(?:are|will|must)\b|\bpretend\s{1,5}to\s{1,5}be\b|\bjailbr(?:oken|eak)\b|\bDAN\s{1,5}mode\b/i,
    weight: 0.6,
  },
  {
    name: 'system_prompt',
    pattern:
      /\bsystem\s{1,5}prompt\b|\b(?:reveal|print|repeat|show)\s{1,5}(?:me\s{1,5})?(?:your|the)\s{1,5}(?:hidden\s{1,5}|initial\s{1,5}|original\s{1,5})?(?:instructions|prompt)\b|\bnew\s{1,5}instructions\s{0,5}:/i,
    weight: 0.5,
  },
  {
    name: 'role_tag',
    pattern:
      /<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|\[\/?INST\]|<<\/?SYS>>|<\/?(?:system|assistant)>|^\s{0,8}#{0,3}\s{0,3}(?:system|assistant)\s{0,3}:/im,
    weight: 1,
  },
  {
    name: 'begin_system',
    pattern:
      /\b(?:BEGIN|END|START)\s{1,5}(?:SYSTEM|ADMIN|DEVELOPER|ROOT)(?:\s{1,5}(?:PROMPT|MESSAGE|INSTRUCTIONS?|MODE|OVERRIDE))?\b/,
    weight: 0.8,
  },
  {
    name: 'markdown_image_exfiltration',
    pattern: /!\[[^\]\n]{0,300}\]\(\s{0,5}https?:\/\/[^\s)?]{1,500}\?[^\s)]{1,4000}\)/i,
    weight: 0.8,
  },
];

const BASE64_RUN = /[A-Za-z0-9+/]{24,}={0,2}/g;
const MAX_DECODED_RUN = 65_536;

function decodeBase64(run: string): string | undefined {
  const usable = run.replace(/=+$/, '');
  const trimmed = usable.slice(0, usable.length - (usable.length % 4));
  try {
    const binary = atob(trimmed);
    let printable = 0;
    for (let i = 0; i < binary.length; i++) {
      const code = binary.charCodeAt(i);
      if ((code >= 32 && code < 127) || code === 10 || code === 13 || code === 9) printable++;
    }
    // Random ids and hashes decode to noise; a payload meant for a model decodes to text.
    return printable / Math.max(1, binary.length) > 0.9 ? binary : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A {@link TextCheck} that scores `text` for prompt injection and trips, reason `prompt_injection_suspected`, when the
 * score reaches `threshold` (default 1); `pass` otherwise. Signals (each counted once): `ignore_instructions` (1:
 * "ignore all previous instructions"), `role_reassignment` (0.6: "you are now", "from now on you are"),
 * `system_prompt` (0.5: "system prompt", "reveal your instructions"), `role_tag` (1: `<|im_start|>`, `[INST]`,
 * `<<SYS>>`, a line starting `system:`), `begin_system` (0.8: "BEGIN SYSTEM PROMPT"), `markdown_image_exfiltration`
 * (0.8: an image link with a query string, a way to leak data through a rendered answer), `invisible_characters` (0.5:
 * zero-width or bidirectional control characters), `unicode_tags` (1: tag characters, hidden ASCII), and
 * `base64_payload` (1: a base64 blob that decodes to text carrying one of the phrase signals). Phrases are matched
 * with invisible characters removed, so "ig\u200Bnore" still reads "ignore". `info` is
 * `{ score, threshold, signals: [{ name, weight, text }] }`.
 *
 * A heuristic, not a defence: it catches copied attacks and crude ones, and misses paraphrases, other languages and
 * anything new. Pair it with least privilege (what a tool result can make the agent do) rather than trust it.
 * Options are validated (`ConfigurationError`): a positive finite threshold, signals with a name, a RegExp and a
 * finite weight. A check whose signal is already aborted throws its reason.
 *
 * @example
 * const check = promptInjectionCheck({ threshold: 0.8 });
 */
export function promptInjectionCheck(options: PromptInjectionCheckOptions = {}): TextCheck {
  const threshold = options.threshold ?? 1;
  if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold <= 0)
    throw new ConfigurationError(
      `promptInjectionCheck: \`threshold\` must be a positive number, not ${String(threshold)}`,
    );
  const own = options.signals ?? [];
  if (!isList(own)) throw new ConfigurationError('promptInjectionCheck: `signals` must be an array');
  for (const signal of own)
    if (
      typeof signal?.name !== 'string' ||
      signal.name === '' ||
      !(signal.pattern instanceof RegExp) ||
      typeof signal.weight !== 'number' ||
      !Number.isFinite(signal.weight)
    )
      throw new ConfigurationError(
        'promptInjectionCheck: a signal needs a non-empty `name`, a RegExp `pattern` and a finite `weight`',
      );
  // Without the g or y flag a RegExp keeps no state between calls: each check can share it.
  const phrases = [...PROMPT_INJECTION_SIGNALS, ...own].map((s) => ({
    ...s,
    pattern: new RegExp(s.pattern.source, s.pattern.flags.replace(/[gy]/g, '')),
  }));

  return (text, context): GuardrailVerdict => {
    context.signal.throwIfAborted();
    const signals: { name: string; weight: number; text: string }[] = [];
    const add = (name: string, weight: number, matched: string) => {
      if (!signals.some((s) => s.name === name)) signals.push({ name, weight, text: matched.slice(0, 200) });
    };
    const invisible = text.match(INVISIBLE);
    if (invisible !== null)
      add(
        'invisible_characters',
        0.5,
        invisible.map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`).join(' '),
      );
    const tag = TAGS.exec(text);
    if (tag !== null) add('unicode_tags', 1, `U+${tag[0].codePointAt(0)!.toString(16).toUpperCase()}`);
    const visible = invisible === null ? text : text.replace(INVISIBLE, '');
    for (const { name, pattern, weight } of phrases) {
      const match = pattern.exec(visible);
      if (match !== null) add(name, weight, match[0]);
    }
    for (const run of visible.matchAll(BASE64_RUN)) {
      if (run[0].length > MAX_DECODED_RUN) continue;
      const decoded = decodeBase64(run[0]);
      if (decoded === undefined) continue;
      const hit = phrases.find((p) => p.weight > 0 && p.pattern.test(decoded));
      if (hit !== undefined) {
        add('base64_payload', 1, `${hit.name}: ${run[0]}`);
        break;
      }
    }
    const score = Math.round(signals.reduce((sum, s) => sum + s.weight, 0) * 1000) / 1000;
    if (score < threshold) return 'pass';
    return { trip: true, reason: 'prompt_injection_suspected', info: { score, threshold, signals } };
  };
}
