import { findModel, type Message, type Usage } from '../index.js';

/**
 * `1,234 in · 56 out · $0.0012 · 2 model calls` (cached tokens only when there are some). The cost only when `priced`:
 * a model the model table does not know (a local server's) has no price, and `$0.0000` would say it is free.
 */
export function formatUsage(usage: Usage, modelCalls: number, priced = true): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const parts = [`${n(usage.input)} in`, `${n(usage.output)} out`];
  if (usage.cacheRead > 0) parts.push(`${n(usage.cacheRead)} cached`);
  if (priced) parts.push(`$${usage.cost.total.toFixed(usage.cost.total < 0.01 ? 4 : 2)}`);
  parts.push(`${modelCalls} model call${modelCalls === 1 ? '' : 's'}`);
  return parts.join(' · ');
}

/** Whether every model call in `messages` was priced: its model is in the model table, or its usage has a cost. */
export function isPriced(messages: readonly Message[]): boolean {
  return messages.every((m) => m.role !== 'assistant' || m.usage.cost.total > 0 || findModel(m.model) !== undefined);
}
