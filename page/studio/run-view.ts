/**
 * `#/runs/<runId>`: a run from the trace file — its summary, the timeline of its spans, its tokens and cost, and the
 * middleware chain it ran with.
 * @module
 */
import type { StudioRunTrace } from '../../src/studio/api.js';
import { renderChain } from './chain-view.js';
import { h, route } from './dom.js';
import type { Session } from './session.js';
import type { View } from './thread-view.js';
import { mountTimeline, type TimelineView } from './timeline.js';
import { renderUsageChart } from './usage-chart.js';

/** The run view of `runId`. */
export function runView(session: Session, runId: string): View {
  const summary = h('div.run-summary', { dataset: { part: 'summary' } });
  const timelineBox = h('div.timeline', { dataset: { part: 'timeline' } });
  const usageBox = h('div.usage', { dataset: { part: 'usage' } });
  const chainBox = h('div.chain', { dataset: { part: 'chain' } });
  const errorBox = h('div.error', { hidden: true, role: 'alert' });
  const element = h(
    'div.view.run-view',
    { dataset: { view: 'run' } },
    h('h2', null, `Run ${runId}`),
    errorBox,
    summary,
    h('h3', null, 'Timeline'),
    timelineBox,
    h('h3', null, 'Tokens and cost'),
    usageBox,
    h('h3', null, 'Middleware chain'),
    chainBox,
  );
  const controller = new AbortController();
  let timeline: TimelineView | undefined;
  session.get<StudioRunTrace>(`runs/${encodeURIComponent(runId)}`, controller.signal).then(
    (trace) => {
      const run = trace.run;
      summary.replaceChildren(
        run.threadId === null
          ? h('span', null, 'no thread')
          : h('a', { href: route('threads', run.threadId) }, run.threadId),
        h(
          'span',
          null,
          ` · ${run.outcome ?? 'unknown outcome'} · ${Math.round(run.durationMs)} ms · ${run.inputTokens} input → ` +
            `${run.outputTokens} output tokens` +
            (run.costUsd === null ? '' : ` · $${run.costUsd.toFixed(4)}`) +
            ` · ${trace.spans.length} spans`,
        ),
      );
      timeline = mountTimeline(timelineBox);
      timeline.show(trace.spans);
      renderUsageChart(usageBox, trace.spans);
      renderChain(chainBox, trace.chain);
    },
    (error: unknown) => {
      if (controller.signal.aborted) return;
      errorBox.hidden = false;
      errorBox.textContent = error instanceof Error ? error.message : String(error);
    },
  );
  return {
    element,
    destroy: () => {
      controller.abort();
      timeline?.destroy();
    },
  };
}
