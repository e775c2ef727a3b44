import type { Usage } from '../index.js';

/** `1,234 in · 56 out · $0.0012` (cached tokens and cost only when there are some). */
export function formatUsage(usage: Usage, modelCalls: number): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const parts = [`${n(usage.input)} in`, `${n(usage.output)} out`];
  if (usage.cacheRead > 0) parts.push(`${n(usage.cacheRead)} cached`);
  parts.push(`$${usage.cost.total.toFixed(usage.cost.total < 0.01 ? 4 : 2)}`);
  parts.push(`${modelCalls} model call${modelCalls === 1 ? '' : 's'}`);
  return parts.join(' · ');
}
