/**
 * A run's tokens and cost as a chart: per model call, stacked SVG bars, and the run's totals. Styles `usage-` in
 * timeline.css.
 * @module
 */
import type { StudioSpan } from '../../src/studio/api.js';
import { escapeHtml } from './timeline.js';

/** One model call's tokens, split into the chart's segments. */
interface CallTokens {
  readonly label: string;
  /** Input tokens not read from a cache (cache writes included). */
  readonly input: number;
  readonly cached: number;
  /** Output tokens that are not reasoning. */
  readonly output: number;
  readonly reasoning: number;
}

const SEGMENTS = [
  ['input', 'input'],
  ['cached', 'cached input'],
  ['output', 'output'],
  ['reasoning', 'reasoning'],
] as const;

const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/**
 * Draws the tokens and cost of a run's spans into `container` (replacing what it held): for each model call (`model`
 * spans, in start order, those that recorded usage) a bar of its input tokens (uncached, then cached) and output
 * tokens (then reasoning) stacked; below, the run's totals — from the run span when it recorded them (`agent_end`'s
 * usage), else summed over the calls — and its cost (`cubepi.usage.cost_usd`), or "not recorded" when no span has
 * one. The cached and reasoning segments appear only when some call has them. Spans without any model call: a line
 * saying so.
 *
 * @example
 * renderUsageChart(document.querySelector('#usage')!, trace.spans);
 */
export function renderUsageChart(container: HTMLElement, spans: readonly StudioSpan[]): void {
  const calls: CallTokens[] = [];
  let costSum: number | null = null;
  const models = spans.filter((s) => s.kind === 'model').sort((a, b) => a.startMs - b.startMs);
  for (const span of models) {
    const a = span.attributes;
    const cost = a['cubepi.usage.cost_usd'];
    if (typeof cost === 'number') costSum = (costSum ?? 0) + cost;
    if (a['gen_ai.usage.input_tokens'] === undefined && a['gen_ai.usage.output_tokens'] === undefined) continue;
    const cached = num(a['gen_ai.usage.cache_read.input_tokens']);
    const reasoning = num(a['gen_ai.usage.reasoning.output_tokens']);
    const model = a['gen_ai.response.model'] ?? a['gen_ai.request.model'];
    calls.push({
      label: `#${calls.length + 1} ${typeof model === 'string' ? model : ''}`.trim(),
      input: Math.max(0, num(a['gen_ai.usage.input_tokens']) - cached),
      cached,
      output: Math.max(0, num(a['gen_ai.usage.output_tokens']) - reasoning),
      reasoning,
    });
  }
  const run = spans.find((s) => s.kind === 'run' && s.parentSpanId === null) ?? spans.find((s) => s.kind === 'run');
  const ra = run?.attributes ?? {};
  const recorded = typeof ra['gen_ai.usage.input_tokens'] === 'number';
  const sum = (key: keyof CallTokens) => calls.reduce((total, call) => total + (call[key] as number), 0);
  const totals = {
    input: recorded ? num(ra['gen_ai.usage.input_tokens']) : sum('input') + sum('cached'),
    output: recorded ? num(ra['gen_ai.usage.output_tokens']) : sum('output') + sum('reasoning'),
    cached: recorded ? num(ra['gen_ai.usage.cache_read.input_tokens']) : sum('cached'),
    reasoning: recorded ? num(ra['gen_ai.usage.reasoning.output_tokens']) : sum('reasoning'),
  };
  const runCost = ra['cubepi.usage.cost_usd'];
  const cost = typeof runCost === 'number' ? runCost : costSum;

  if (calls.length === 0) {
    container.innerHTML = `<div class="usage"><p class="usage-none">no model call recorded usage</p>${totalsHtml(totals, cost, 0)}</div>`;
    return;
  }
  const present = SEGMENTS.filter(([key]) => key === 'input' || key === 'output' || calls.some((c) => c[key] > 0));
  const legend = present.map(([key, name]) => `<span><i class="usage-swatch usage-${key}"></i>${name}</span>`).join('');
  container.innerHTML = `<div class="usage"><div class="usage-legend">${legend}</div>${chartSvg(calls)}${totalsHtml(totals, cost, calls.length)}</div>`;
}

function chartSvg(calls: readonly CallTokens[]): string {
  const barWidth = 28;
  const gap = 18;
  const left = 48;
  const top = 8;
  const height = 160;
  const bottom = 34;
  const max = Math.max(1, ...calls.map((c) => c.input + c.cached + c.output + c.reasoning));
  const step = niceStep(max);
  const scaleMax = Math.ceil(max / step) * step;
  const width = left + calls.length * (barWidth + gap) + gap;
  const y = (tokens: number) => top + height - (tokens / scaleMax) * height;
  let svg = `<svg class="usage-svg" role="img" aria-label="tokens per model call" width="${width}" height="${top + height + bottom}" viewBox="0 0 ${width} ${top + height + bottom}">`;
  for (let t = 0; t <= scaleMax; t += step) {
    svg += `<line class="usage-grid" x1="${left}" x2="${width}" y1="${y(t)}" y2="${y(t)}"/>`;
    svg += `<text class="usage-tick" x="${left - 6}" y="${y(t) + 3}" text-anchor="end">${compact(t)}</text>`;
  }
  svg += `<line class="usage-axis" x1="${left}" x2="${left}" y1="${top}" y2="${top + height}"/>`;
  svg += `<line class="usage-axis" x1="${left}" x2="${width}" y1="${top + height}" y2="${top + height}"/>`;
  calls.forEach((call, i) => {
    const x = left + gap + i * (barWidth + gap);
    let base = 0;
    svg += `<g class="usage-bar" data-call="${i}">`;
    for (const [key, name] of SEGMENTS) {
      const value = call[key];
      if (value <= 0) continue;
      svg +=
        `<rect class="usage-${key}" data-segment="${key}" data-tokens="${value}" x="${x}" y="${y(base + value)}" ` +
        `width="${barWidth}" height="${y(base) - y(base + value)}"><title>${escapeHtml(call.label)}: ${value} ${name} tokens</title></rect>`;
      base += value;
    }
    svg += `<text class="usage-call" x="${x + barWidth / 2}" y="${top + height + 14}" text-anchor="middle">#${i + 1}</text>`;
    svg += `<text class="usage-call" x="${x + barWidth / 2}" y="${top + height + 26}" text-anchor="middle">${compact(base)}</text>`;
    svg += '</g>';
  });
  return `${svg}</svg>`;
}

function totalsHtml(
  totals: { input: number; output: number; cached: number; reasoning: number },
  cost: number | null,
  calls: number,
): string {
  const item = (key: string, name: string, value: string) =>
    `<div data-total="${key}"><dt>${name}</dt><dd>${value}</dd></div>`;
  let html = '<dl class="usage-totals">';
  html += item('calls', 'model calls', String(calls));
  html += item('input', 'input', totals.input.toLocaleString('en-US'));
  if (totals.cached > 0) html += item('cached', 'of which cached', totals.cached.toLocaleString('en-US'));
  html += item('output', 'output', totals.output.toLocaleString('en-US'));
  if (totals.reasoning > 0) html += item('reasoning', 'of which reasoning', totals.reasoning.toLocaleString('en-US'));
  html += item('cost', 'cost', cost === null ? 'not recorded' : formatUsd(cost));
  return `${html}</dl>`;
}

/** `$0.0034`, `$1.25`: enough digits for the cents of a cheap call. */
export function formatUsd(usd: number): string {
  if (usd === 0) return '$0';
  if (usd >= 1) return `$${usd.toFixed(2)}`;
  return `$${usd.toPrecision(2).replace(/0+$/, '')}`;
}

function niceStep(max: number): number {
  const raw = max / 4;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => max / s <= 5) ?? 10 * power;
}

function compact(n: number): string {
  if (n >= 1e6) return `${Math.round(n / 1e5) / 10}M`;
  if (n >= 1e4) return `${Math.round(n / 100) / 10}k`;
  return String(Math.round(n));
}
