/**
 * Tool-call ids that another API accepts.
 * @module
 */

/**
 * Maps a tool-call id onto `[a-zA-Z0-9_-]{1,maxLength}`, the alphabet every API accepts (Anthropic rejects `|` and
 * `.`; OpenAI Chat Completions rejects ids over 40 characters). The mapping is a pure function of the id, so a call
 * and its result, converted separately, still match. Other characters become `_`; an id that is too long keeps its
 * head and gets a hash of the whole id as its tail, so two long ids that share a prefix stay distinct.
 *
 * @example
 * normalizeToolCallId('toolu_01NRLabsLyVHZPKxbKvkfSMn', 40) // unchanged
 * normalizeToolCallId('call_abc|fc_0123…', 40)              // 'call_abc_fc_0123…' cut to 40 with a hash tail
 */
export function normalizeToolCallId(id: string, maxLength: number): string {
  const clean = id.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (clean.length > 0 && clean.length <= maxLength) return clean;
  const hash = fnv1a(id);
  return clean.length === 0 ? `call_${hash}`.slice(0, maxLength) : `${clean.slice(0, maxLength - 9)}_${hash}`;
}

/** 32-bit FNV-1a as 8 hex digits: small, stable across runs and platforms. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
