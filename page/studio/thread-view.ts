/**
 * `#/threads/<id>`: a thread as a conversation (messages, tool calls and results, thinking, fork points, compaction,
 * state patches, pending approvals), its runs from the trace file, and — with an agent server — live runs: a prompt
 * starts one, an active one is followed, both stream into the conversation (assembled, at most one render per
 * animation frame) and into a live timeline; Stop cancels; approvals are answered; any message can be retried from
 * (edited first), which opens the fork.
 * @module
 */
import { animationFrameScheduler, auditTime, filter, share, Subscription, type Observable } from 'rxjs';
import {
  cancelRun,
  fromAgentEvents,
  respond,
  retryFrom,
  runEventsUrl,
  startRun,
  type SequencedEvent,
} from '../../src/client/index.js';
import { assembleMessages, throttleDeltas } from '../../operators/index.js';
import type { StudioRunList, StudioThread } from '../../src/studio/api.js';
import type { ApprovalAnswer } from '../../src/types/approval.js';
import type { Message } from '../../src/types/messages.js';
import type { AgentEvent } from '../../src/types/agent-events.js';
import { renderChain } from './chain-view.js';
import { h, route } from './dom.js';
import { spansFromEvents } from './live-spans.js';
import { markersBefore, markersOf, messageRow, stateChanges, textOf, type Markers } from './messages-view.js';
import { StudioRequestError, type Session } from './session.js';
import { mountTimeline, type TimelineView } from './timeline.js';

/**
 * Stored messages drawn at first (the last ones; "Show earlier" draws five times as many more each time): a
 * 10,000-message thread opens in a fraction of a second, and no row has a listener of its own (clicks are delegated).
 */
const WINDOW = 300;

/** A mounted view. */
export interface View {
  readonly element: HTMLElement;
  destroy(): void;
}

/**
 * Runs this page started (a prompt, an approval, a retry): kept subscribed until they end, whatever view is shown,
 * since unsubscribing from cubepi/client's `startRun` cancels the run.
 */
const started = new Set<Subscription>();
function keepRunning(run: Observable<SequencedEvent>, onError: (error: unknown) => void): Observable<SequencedEvent> {
  const shared = run.pipe(share());
  const subscription = shared.subscribe({ error: onError });
  started.add(subscription);
  subscription.add(() => started.delete(subscription));
  return shared;
}

/** The thread view of `threadId`. */
export function threadView(session: Session, threadId: string): View {
  const element = h('div.view.thread-view', { dataset: { view: 'thread' } });
  const life = new Subscription();
  const controller = new AbortController();
  life.add(() => controller.abort());
  let timeline: TimelineView | undefined;
  let thread: StudioThread | undefined;
  let markers: Markers | undefined;
  let liveRunId: string | undefined;
  let following: Subscription | undefined;

  const title = h('h2', null, threadId);
  const parentLine = h('div.parent-line');
  const errorBox = h('div.error', { hidden: true, role: 'alert' });
  const stored = h('div.messages', { dataset: { part: 'stored' } });
  const live = h('div.messages.live', { dataset: { part: 'live' } });
  const pendingBox = h('div.pending', { dataset: { part: 'pending' } });
  const stateBox = h('div.state', { dataset: { part: 'state' } });
  const statusLine = h('div.status', { dataset: { part: 'status' } });
  const stopButton = h(
    'button.stop',
    { type: 'button', dataset: { action: 'stop' }, disabled: true },
    'Stop',
  ) as HTMLButtonElement;
  const promptBox = h('textarea', {
    name: 'prompt',
    rows: 2,
    placeholder: 'Send a message on this thread…',
  }) as HTMLTextAreaElement;
  const form = h(
    'form.prompt',
    null,
    promptBox,
    h('button', { type: 'submit', dataset: { action: 'send' } }, 'Send'),
    stopButton,
  ) as HTMLFormElement;
  const runsBox = h('div.runs', { dataset: { part: 'runs' } });
  const timelineBox = h('div.live-timeline', { dataset: { part: 'live-timeline' } });
  const chainBox = h('div.chain', { dataset: { part: 'chain' } });
  const conversation = h(
    'section.conversation',
    null,
    title,
    parentLine,
    errorBox,
    stored,
    live,
    pendingBox,
    stateBox,
    statusLine,
    session.config.live ? form : null,
  );
  element.append(
    conversation,
    h(
      'aside.side',
      null,
      h('h3', null, 'Runs'),
      runsBox,
      h('h3', null, 'Live run'),
      timelineBox,
      h('h3', null, 'Middleware chain'),
      chainBox,
    ),
  );

  const showError = (error: unknown) => {
    errorBox.hidden = false;
    errorBox.textContent = error instanceof Error ? error.message : String(error);
  };

  /** The first stored message drawn: a long thread shows its last {@link WINDOW} rows, earlier ones on demand. */
  let drawnFrom = 0;
  const earlier = h('button.earlier', { type: 'button', dataset: { action: 'earlier' } });

  /** The rows (and markers) of the stored messages `[from, to)`. */
  function storedRows(data: StudioThread, from: number, to: number): DocumentFragment {
    const fragment = document.createDocumentFragment();
    const rowOptions = { actions: session.config.live };
    for (let seq = from; seq < to; seq++) {
      for (const marker of markersBefore(seq, markers!)) fragment.append(marker);
      fragment.append(messageRow(data.messages[seq]!, seq, rowOptions));
    }
    if (to === data.messages.length) for (const marker of markersBefore(to, markers!)) fragment.append(marker);
    return fragment;
  }

  function drawEarlier(data: StudioThread, count: number): void {
    const from = Math.max(0, drawnFrom - count);
    earlier.after(storedRows(data, from, drawnFrom));
    drawnFrom = from;
    earlier.hidden = from === 0;
    earlier.textContent = `Show earlier messages (${from} more)`;
  }

  function renderStored(data: StudioThread): void {
    markers = markersOf(threadId, data.forks, data.extra);
    drawnFrom = Math.max(0, data.messages.length - WINDOW);
    earlier.hidden = drawnFrom === 0;
    earlier.textContent = `Show earlier messages (${drawnFrom} more)`;
    stored.replaceChildren(earlier, storedRows(data, drawnFrom, data.messages.length));
    parentLine.replaceChildren(
      ...(data.parent === undefined
        ? []
        : [
            h('span', null, '↳ fork of '),
            h('a', { href: route('threads', data.parent.threadId) }, data.parent.threadId),
            h('span', null, ` at message ${data.parent.atSeq} · `),
            h('a', { href: route('compare', data.parent.threadId, threadId) }, 'compare with parent'),
          ]),
    );
    renderPending(data);
    renderState(data);
  }

  function renderPending(data: StudioThread): void {
    pendingBox.replaceChildren(
      ...data.pending.map((request) =>
        h(
          'div.approval',
          { dataset: { request: request.requestId } },
          h('strong', null, `Approval: ${request.toolName}`),
          h('span.muted', null, ` — ${request.reason}`),
          h('pre.args', null, JSON.stringify(request.args, null, 2)),
          h('textarea.edit-args', { hidden: true, rows: 3 }, JSON.stringify(request.args)),
          h(
            'div.buttons',
            null,
            h('button', { type: 'button', dataset: { action: 'approve', request: request.requestId } }, 'Approve'),
            h('button', { type: 'button', dataset: { action: 'deny', request: request.requestId } }, 'Deny'),
            h('button', { type: 'button', dataset: { action: 'edit-args', request: request.requestId } }, 'Edit args'),
          ),
        ),
      ),
    );
  }

  function renderState(data: StudioThread): void {
    const changes = stateChanges(data.extra);
    stateBox.replaceChildren(
      ...(changes.length === 0
        ? []
        : [
            h('h4', null, 'Run state (last patch per key)'),
            ...changes.map((change) =>
              h(
                'div.patch',
                { dataset: { key: change.key } },
                h('code', null, change.key),
                h('span', null, ` = ${JSON.stringify(change.value) ?? 'deleted'}`),
                h('span.muted', null, ` · by ${change.producer} · v${change.version}`),
              ),
            ),
          ]),
    );
  }

  function renderRuns(list: StudioRunList): void {
    runsBox.replaceChildren(
      list.runs.length === 0
        ? h('div.muted', null, session.config.traces ? 'No runs in the trace file yet.' : 'No trace file.')
        : h(
            'ul',
            null,
            ...list.runs.map((run) =>
              h(
                'li',
                { dataset: { run: run.runId } },
                h('a', { href: route('runs', run.runId) }, new Date(run.startMs).toLocaleTimeString()),
                h('span', null, ` ${run.outcome ?? ''} · ${Math.round(run.durationMs)} ms`),
                h(
                  'span.muted',
                  null,
                  ` · ${run.inputTokens}→${run.outputTokens} tok` +
                    (run.costUsd === null ? '' : ` · $${run.costUsd.toFixed(4)}`),
                ),
              ),
            ),
          ),
    );
  }

  async function load(): Promise<void> {
    try {
      const [data, runs] = await Promise.all([
        session.get<StudioThread>(`threads/${encodeURIComponent(threadId)}`, controller.signal),
        session.get<StudioRunList>(`runs?thread=${encodeURIComponent(threadId)}`, controller.signal),
      ]);
      thread = data;
      renderStored(data);
      renderRuns(runs);
      if (data.activeRunId !== null && session.config.live && following === undefined) {
        follow(fromAgentEvents(runEventsUrl(session.apiBase, data.activeRunId, 'sse', threadId), session.client));
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      // A thread not written yet (or not the caller's: the same answer) is an empty one a prompt starts.
      if (error instanceof StudioRequestError && error.code === 'unknown_thread' && session.config.live) {
        thread = { threadId, seq: 0, messages: [], extra: {}, forks: [], activeRunId: null, pending: [] };
        renderStored(thread);
        statusLine.textContent = 'A new thread: send a message to start it.';
        return;
      }
      showError(error);
    }
  }

  /** Streams a run into the conversation, the live timeline and the chain; reloads the thread when it ends. */
  function follow(source: Observable<SequencedEvent>): void {
    following?.unsubscribe();
    const events$: Observable<AgentEvent> = source.pipe(share());
    const base = thread?.messages.length ?? 0;
    const run = new Subscription();
    following = run;
    life.add(run);
    timeline ??= mountTimeline(timelineBox);
    const shownTimeline = timeline;
    const rows = new WeakMap<Message, HTMLElement>();
    statusLine.textContent = 'running…';
    stopButton.disabled = false;
    run.add(
      events$.pipe(filter((event) => event.type === 'agent_start')).subscribe((event) => {
        if (event.type !== 'agent_start') return;
        if (liveRunId === undefined) liveRunId = event.runId;
        renderChain(chainBox, event.middleware ?? null);
      }),
    );
    run.add(
      events$.pipe(spansFromEvents(), auditTime(0, animationFrameScheduler)).subscribe((spans) => {
        shownTimeline.show(spans);
      }),
    );
    run.add(
      events$.pipe(throttleDeltas(16), assembleMessages(), auditTime(0, animationFrameScheduler)).subscribe({
        next: (messages) => {
          // Settled messages keep their row (the same object comes back); only the streaming one is drawn again.
          const children = messages.map((message, i) => {
            let row = rows.get(message);
            if (row === undefined) {
              row = messageRow(message, base + i, { actions: false });
              rows.set(message, row);
            }
            return row;
          });
          live.replaceChildren(...children);
        },
        error: (error: unknown) => {
          showError(error);
          ended();
        },
        complete: ended,
      }),
    );
    function ended(): void {
      if (following !== run) return;
      following = undefined;
      liveRunId = undefined;
      stopButton.disabled = true;
      statusLine.textContent = '';
      void load().then(() => live.replaceChildren());
    }
  }

  const answer = (requestId: string, reply: ApprovalAnswer) => {
    pendingBox.replaceChildren();
    follow(keepRunning(respond(session.apiBase, threadId, requestId, reply, session.client), showError));
  };

  const retry = (seq: number, input: string | undefined) => {
    const run = retryFrom(session.apiBase, threadId, input === undefined ? { seq } : { seq, input }, {
      ...session.client,
      // The fork's view follows the run (its thread names it active): this page keeps it running meanwhile.
      onFork: (fork) => {
        location.hash = route('threads', fork.threadId);
      },
    });
    keepRunning(run, showError);
  };

  element.addEventListener('click', (event) => {
    const target = (event.target as HTMLElement).closest<HTMLElement>('[data-action]');
    if (target === null || !element.contains(target)) return;
    const { action, seq, request } = target.dataset;
    if (action === 'earlier' && thread !== undefined) {
      drawEarlier(thread, WINDOW * 5);
    } else if (action === 'stop' && liveRunId !== undefined) {
      void cancelRun(session.apiBase, liveRunId, session.client).catch(showError);
    } else if (action === 'retry' && seq !== undefined) {
      retry(Number(seq), undefined);
    } else if (action === 'edit' && seq !== undefined) {
      const row = target.closest('.msg');
      const message = thread?.messages[Number(seq)];
      if (row === null || message === undefined || row.querySelector('.editor') !== null) return;
      row.append(
        h(
          'div.editor',
          null,
          h('textarea', { rows: 3 }, textOf(message.content)),
          h('button', { type: 'button', dataset: { action: 'edit-send', seq } }, 'Send edited'),
          h('button', { type: 'button', dataset: { action: 'edit-cancel' } }, 'Cancel'),
        ),
      );
    } else if (action === 'edit-send' && seq !== undefined) {
      const text = target.closest('.editor')?.querySelector('textarea')?.value ?? '';
      retry(Number(seq), text);
    } else if (action === 'edit-cancel') {
      target.closest('.editor')?.remove();
    } else if (action === 'approve' && request !== undefined) {
      answer(request, { approve: true });
    } else if (action === 'deny' && request !== undefined) {
      answer(request, { deny: 'denied from the studio' });
    } else if (action === 'edit-args' && request !== undefined) {
      const box = target.closest('.approval')?.querySelector<HTMLTextAreaElement>('textarea.edit-args');
      if (box === undefined || box === null) return;
      if (box.hidden) {
        box.hidden = false;
        target.textContent = 'Run with these args';
        return;
      }
      try {
        answer(request, { edit: JSON.parse(box.value) as Record<string, unknown> });
      } catch (error) {
        showError(error);
      }
    }
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = promptBox.value.trim();
    if (text === '' || following !== undefined) return;
    promptBox.value = '';
    follow(keepRunning(startRun(session.apiBase, threadId, text, session.client), showError));
  });

  void load();
  return {
    element,
    destroy: () => {
      life.unsubscribe();
      timeline?.destroy();
    },
  };
}
