// Plain JS (bundled by esbuild, not type-checked with the Node code: the project's tsconfig has no DOM library).
// The page of the timeline's browser test and of bench/studio.mjs: the studio's run views (timeline, usage chart,
// chain) on `window.studio`, bundled by esbuild, mounted into #timeline, #usage and #chain by the test.
import { Subject } from 'rxjs';
import { renderChain } from '../../page/studio/chain-view.js';
import { spansFromEvents } from '../../page/studio/live-spans.js';
import { mountTimeline } from '../../page/studio/timeline.js';
import { renderUsageChart } from '../../page/studio/usage-chart.js';

/** Live events in, the timeline redrawn per change (what the studio's live run view does). */
function live(container) {
  const timeline = mountTimeline(container);
  const events = new Subject();
  let changes = 0;
  const subscription = events.pipe(spansFromEvents()).subscribe((spans) => {
    changes += 1;
    timeline.show(spans);
  });
  return {
    push: (event) => events.next(event),
    changes: () => changes,
    stop: () => {
      subscription.unsubscribe();
      timeline.destroy();
    },
  };
}

Object.assign(window, { studio: { mountTimeline, renderUsageChart, renderChain, spansFromEvents, live }, ready: true });
