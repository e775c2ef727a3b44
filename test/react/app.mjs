// The page of test/react/react-browser.test.ts (plain JS, bundled by esbuild: the tests have no DOM types or JSX).
// `mount(threadId)` renders a useThread view in StrictMode and exposes it as `window.view`; `mountRun(runId, threadId)`
// renders a useRun view as `window.run`; `observable()` renders components reading one Observable with
// useObservable, for the tearing and subscription checks. `statuses` and `runStatuses` hold each status shown, in order.
import { createElement as h, StrictMode, startTransition, useLayoutEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Observable } from 'rxjs';
import { useObservable, useRun, useThread } from '../../src/react/index.ts';

const root = createRoot(document.getElementById('root'));
window.view = undefined;
window.lengths = [];
window.runIds = [];
window.statuses = [];
window.run = undefined;
window.runLengths = [];
window.runStatuses = [];

const assistantText = (messages) => {
  const last = messages.at(-1);
  if (last === undefined || last.role !== 'assistant') return '';
  return last.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
};

function Chat({ threadId }) {
  const view = useThread({ baseUrl: location.origin, threadId, throttleMs: 0 });
  useLayoutEffect(() => {
    window.view = view;
    const length = assistantText(view.messages).length;
    if (length > 0 && window.lengths.at(-1) !== length) window.lengths.push(length);
    if (view.runId !== null && !window.runIds.includes(view.runId)) window.runIds.push(view.runId);
    if (window.statuses.at(-1) !== view.status) window.statuses.push(view.status);
  });
  return h('pre', { id: 'status' }, view.status);
}

window.mount = (threadId) => root.render(h(StrictMode, null, h(Chat, { threadId })));
window.unmount = () => root.unmount();

function Run({ runId, threadId }) {
  const run = useRun({ baseUrl: location.origin, runId, threadId, throttleMs: 0 });
  useLayoutEffect(() => {
    window.run = run;
    const length = assistantText(run.messages).length;
    if (length > 0 && window.runLengths.at(-1) !== length) window.runLengths.push(length);
    if (window.runStatuses.at(-1) !== run.status) window.runStatuses.push(run.status);
  });
  return h('pre', { id: 'run-status' }, run.status);
}

window.mountRun = (runId, threadId) => {
  window.runLengths = [];
  window.runStatuses = [];
  root.render(h(StrictMode, null, h(Run, { runId, threadId })));
};

// useObservable: one source read by 40 slow components while it emits mid-render.
const counts = (window.counts = { subscribed: 0, active: 0, torn: 0, commits: 0 });
// Shared by every reader (a hot source, as agent.events$ is): each component's store subscribes to it once.
const readers = new Set();
const source$ = new Observable((subscriber) => {
  counts.subscribed++;
  counts.active++;
  readers.add(subscriber);
  return () => {
    readers.delete(subscriber);
    counts.active--;
  };
});
const emit = (value) => {
  for (const reader of readers) reader.next(value);
};

function Slow({ index }) {
  const value = useObservable(source$, -1);
  const until = performance.now() + 2;
  while (performance.now() < until); // a slow render, so a concurrent render yields between children
  return h('span', { className: 'value', 'data-index': index }, String(value));
}

function Board() {
  const [round, setRound] = useState(0);
  window.nextRound = () => startTransition(() => setRound((r) => r + 1));
  useLayoutEffect(() => {
    const values = new Set([...document.querySelectorAll('.value')].map((node) => node.textContent));
    counts.commits++;
    if (values.size > 1) counts.torn++;
  });
  return h(
    'div',
    { 'data-round': round },
    Array.from({ length: 40 }, (_, i) => h(Slow, { key: i, index: i })),
  );
}

window.observable = () => root.render(h(StrictMode, null, h(Board)));
window.emitValue = (value) => emit(value);
window.ready = true;
