/**
 * A run's tokens and cost as a chart. (Skeleton: the timeline helper fills this in.)
 * @module
 */
import type { StudioSpan } from '../../src/studio/api.js';

/** Draws the tokens (input, output, per model call) and cost of a run's spans into `container`. */
export function renderUsageChart(container: HTMLElement, spans: readonly StudioSpan[]): void {
  void spans;
  container.textContent = 'usage: not built yet';
}
