/**
 * The run timeline: a waterfall of a run's spans. (Skeleton: the timeline helper fills this in.)
 * @module
 */
import type { StudioSpan } from '../../src/studio/api.js';

/** A mounted timeline. */
export interface TimelineView {
  /** Shows these spans (replacing what was shown); open spans (`durationMs: null`) grow with the clock. */
  show(spans: readonly StudioSpan[]): void;
  /** Removes the view and everything it holds (timers, listeners). */
  destroy(): void;
}

/** A timeline in `container`. */
export function mountTimeline(container: HTMLElement): TimelineView {
  container.textContent = 'timeline: not built yet';
  return { show: () => undefined, destroy: () => container.replaceChildren() };
}
