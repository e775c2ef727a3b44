/**
 * `#/threads`: the threads the caller may see, newest first, with a search box (thread id and title); a fork is shown
 * nested under its parent when the parent is listed, else marked with where it came from.
 * @module
 */
import { debounceTime, distinctUntilChanged, fromEvent, map, startWith, switchMap, from, catchError, of } from 'rxjs';
import type { StudioThreadPage, StudioThreadSummary } from '../../src/studio/api.js';
import { h, route } from './dom.js';
import type { Session } from './session.js';
import type { View } from './thread-view.js';

/** The threads view. */
export function threadsView(session: Session): View {
  const search = h('input.search', { type: 'search', placeholder: 'Search threads (id or title)…', name: 'q' });
  const list = h('div.thread-list', { dataset: { part: 'threads' } });
  const errorBox = h('div.error', { hidden: true, role: 'alert' });
  const element = h(
    'div.view.threads-view',
    { dataset: { view: 'threads' } },
    h('h2', null, 'Threads'),
    search,
    errorBox,
    list,
  );
  const input = search as HTMLInputElement;
  const subscription = fromEvent(input, 'input')
    .pipe(
      map(() => input.value.trim()),
      startWith(''),
      debounceTime(150),
      distinctUntilChanged(),
      switchMap((q) =>
        from(session.get<StudioThreadPage>(`threads?limit=200${q === '' ? '' : `&q=${encodeURIComponent(q)}`}`)).pipe(
          catchError((error: unknown) => {
            errorBox.hidden = false;
            errorBox.textContent = error instanceof Error ? error.message : String(error);
            return of({ threads: [], next: null } satisfies StudioThreadPage);
          }),
        ),
      ),
    )
    .subscribe((page) => {
      errorBox.hidden = true;
      list.replaceChildren(tree(page.threads));
    });
  return { element, destroy: () => subscription.unsubscribe() };
}

/** The threads as a tree: forks under their parent when it is in the list. */
function tree(threads: readonly StudioThreadSummary[]): HTMLElement {
  if (threads.length === 0) return h('div.muted', null, 'No threads.');
  const listed = new Set(threads.map((thread) => thread.threadId));
  const children = new Map<string, StudioThreadSummary[]>();
  const roots: StudioThreadSummary[] = [];
  for (const thread of threads) {
    const parent = thread.parent?.threadId;
    if (parent !== undefined && listed.has(parent)) children.set(parent, [...(children.get(parent) ?? []), thread]);
    else roots.push(thread);
  }
  const item = (thread: StudioThreadSummary): HTMLElement =>
    h(
      'li',
      { dataset: { thread: thread.threadId } },
      h(
        'a.thread-link',
        { href: route('threads', thread.threadId) },
        h('span.thread-title', null, thread.title === '' ? '(no user message)' : thread.title),
        h('span.thread-id', null, thread.threadId),
      ),
      h(
        'span.muted',
        null,
        ` ${thread.messageCount} messages · ${new Date(thread.updatedAt).toLocaleString()}` +
          (thread.parent === undefined ? '' : ` · ↳ fork of ${thread.parent.threadId} at ${thread.parent.atSeq}`),
      ),
      (children.get(thread.threadId)?.length ?? 0) > 0
        ? h('ul.forks', null, ...children.get(thread.threadId)!.map(item))
        : null,
    );
  return h('ul.threads', null, ...roots.map(item));
}
