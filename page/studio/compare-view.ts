/**
 * `#/compare/<threadA>/<threadB>`: two threads side by side, aligned where they branch — the shared prefix shown once
 * (dimmed, folded), the differing tails next to each other.
 * @module
 */
import type { StudioThread } from '../../src/studio/api.js';
import type { Message } from '../../src/types/messages.js';
import { h, route } from './dom.js';
import { messageRow } from './messages-view.js';
import type { Session } from './session.js';
import type { View } from './thread-view.js';

/** The compare view of threads `a` and `b`. */
export function compareView(session: Session, a: string, b: string): View {
  const errorBox = h('div.error', { hidden: true, role: 'alert' });
  const body = h('div.compare-body');
  const element = h(
    'div.view.compare-view',
    { dataset: { view: 'compare' } },
    h(
      'h2',
      null,
      'Compare ',
      h('a', { href: route('threads', a) }, a),
      ' and ',
      h('a', { href: route('threads', b) }, b),
    ),
    errorBox,
    body,
  );
  const controller = new AbortController();
  const get = (id: string) => session.get<StudioThread>(`threads/${encodeURIComponent(id)}`, controller.signal);
  Promise.all([get(a), get(b)]).then(
    ([left, right]) => {
      const shared = sharedPrefix(left, right);
      const options = { actions: false };
      const column = (thread: StudioThread) =>
        h(
          'div.compare-column',
          { dataset: { thread: thread.threadId } },
          h('h3', null, thread.threadId),
          ...thread.messages.slice(shared).map((message, i) => messageRow(message, shared + i, options)),
          thread.messages.length === shared ? h('div.muted', null, 'Nothing after the branch point.') : null,
        );
      body.replaceChildren(
        h(
          'details.shared',
          { dataset: { part: 'shared' }, open: shared <= 4 },
          h('summary', null, `${shared} shared message${shared === 1 ? '' : 's'} (0–${shared - 1})`),
          ...left.messages.slice(0, shared).map((message, seq) => messageRow(message, seq, options)),
        ),
        h('div.branch-point', null, `↳ the threads branch at message ${shared}`),
        h('div.compare-columns', null, column(left), column(right)),
      );
    },
    (error: unknown) => {
      if (controller.signal.aborted) return;
      errorBox.hidden = false;
      errorBox.textContent = error instanceof Error ? error.message : String(error);
    },
  );
  return { element, destroy: () => controller.abort() };
}

/** Where the two branch: a fork's `atSeq` when one is the other's fork, else the length of the equal prefix. */
function sharedPrefix(left: StudioThread, right: StudioThread): number {
  if (right.parent?.threadId === left.threadId) return right.parent.atSeq;
  if (left.parent?.threadId === right.threadId) return left.parent.atSeq;
  let i = 0;
  const same = (x: Message, y: Message) => JSON.stringify(x) === JSON.stringify(y);
  while (i < left.messages.length && i < right.messages.length && same(left.messages[i]!, right.messages[i]!)) i++;
  return i;
}
