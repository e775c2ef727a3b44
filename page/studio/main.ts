/**
 * The studio page: hash routes `#/threads`, `#/threads/<threadId>`, `#/runs/<runId>`, `#/compare/<a>/<b>`; the token
 * from `#token=` at first load (then sessionStorage), used for the studio-api and the agent server's routes.
 * @module
 */
import { compareView } from './compare-view.js';
import { h } from './dom.js';
import { runView } from './run-view.js';
import { openSession, StudioRequestError, takeToken, type Session } from './session.js';
import { threadView, type View } from './thread-view.js';
import { threadsView } from './threads-view.js';

const token = takeToken();
const main = h('main', { id: 'view' });
document.body.append(
  h(
    'header',
    null,
    h('a.brand', { href: '#/threads' }, 'cubepi studio'),
    h('nav', null, h('a', { href: '#/threads' }, 'Threads')),
    h('span.mode', { id: 'mode' }),
  ),
  main,
);

let current: View | undefined;

function show(session: Session): void {
  current?.destroy();
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const [head, a, b] = parts;
  if (head === 'threads' && a !== undefined && a !== '') current = threadView(session, a);
  else if (head === 'runs' && a !== undefined && a !== '') current = runView(session, a);
  else if (head === 'compare' && a !== undefined && b !== undefined) current = compareView(session, a, b);
  else current = threadsView(session);
  main.replaceChildren(current.element);
  document.body.dataset.route = head === undefined || head === '' ? 'threads' : head;
}

openSession(token).then(
  (session) => {
    document.getElementById('mode')!.textContent =
      (session.config.live ? 'live' : 'read-only') + (session.config.traces ? ' · traces' : '');
    if (location.hash === '' || location.hash === '#') history.replaceState(null, '', '#/threads');
    addEventListener('hashchange', () => show(session));
    show(session);
  },
  (error: unknown) => {
    const message =
      error instanceof StudioRequestError && error.status === 401
        ? 'This studio needs its token: open the URL cubepi studio printed (…/#token=…).'
        : error instanceof Error
          ? error.message
          : String(error);
    main.replaceChildren(h('div.error', { role: 'alert' }, message));
  },
);
