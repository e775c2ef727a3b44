/**
 * Where a transcript may be cut without separating a tool call from its result.
 * @module
 */
import type { Message } from '../types/messages.js';

/**
 * The indices, from `from` on, where a turn starts: a message that is not a tool result, and is not a user message
 * following another (prompts sent together stay together). Everything before such an index is complete: every tool
 * call there has its result there (the loop keeps the transcript that way), so cutting at it never leaves a call
 * without its result nor a result without its call.
 */
export function turnStarts(messages: readonly Message[], from = 0): number[] {
  const starts: number[] = [];
  for (let i = Math.max(0, from); i < messages.length; i++) {
    const role = messages[i]!.role;
    if (role === 'toolResult') continue;
    if (i > 0 && messages[i - 1]!.role === 'user' && i !== from) continue;
    starts.push(i);
  }
  return starts;
}
