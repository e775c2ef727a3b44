/**
 * Small `inputFilter`s for {@link handoff}: what the agent handed to sees of the conversation before it.
 * @module
 */
import type { Message } from '../types/messages.js';

/**
 * Drops tool traffic: every `toolResult` message, and the tool calls of assistant messages (an assistant message left
 * with no content is dropped too). The target sees the user's messages and the previous agent's text.
 *
 * @example
 * handoff(billing, { description: 'Invoices', inputFilter: removeToolCalls })
 */
export function removeToolCalls(messages: readonly Message[]): Message[] {
  const kept: Message[] = [];
  for (const message of messages) {
    if (message.role === 'toolResult') continue;
    if (message.role !== 'assistant') {
      kept.push(message);
      continue;
    }
    const content = message.content.filter((block) => block.type !== 'toolCall');
    if (content.length === 0) continue;
    kept.push(content.length === message.content.length ? message : { ...message, content });
  }
  return kept;
}

/**
 * A filter keeping the last `n` messages, moved forward past any leading tool result (so no result is left without
 * its call). Throws `RangeError` for an `n` that is not a positive integer.
 *
 * @example
 * handoff(billing, { description: 'Invoices', inputFilter: lastN(6) })
 */
export function lastN(n: number): (messages: readonly Message[]) => Message[] {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`lastN: n must be a positive integer, got ${String(n)}`);
  return (messages) => {
    let start = Math.max(0, messages.length - n);
    while (start < messages.length && messages[start]!.role === 'toolResult') start++;
    return messages.slice(start);
  };
}
