/**
 * The usage of a run's messages.
 * @module
 */
import type { Message } from './messages.js';
import { addUsage, EMPTY_USAGE, type Usage } from './usage.js';

/**
 * What a run's messages cost: the usage of its assistant messages (its own model calls) plus the `usage` tool results
 * carry (what a tool spent on model calls of its own, such as a sub-agent's run). `agent_end.usage` and `BudgetCap`
 * both count this way.
 *
 * @example
 * usageOf(agent.state.messages).cost.total // dollars spent by the whole thread, sub-agents included
 */
export function usageOf(messages: readonly Message[]): Usage {
  let usage = EMPTY_USAGE;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'assistant') usage = addUsage(usage, message.usage);
    else if (message.role === 'toolResult' && message.usage !== undefined) usage = addUsage(usage, message.usage);
  }
  return usage;
}
