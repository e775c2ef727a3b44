/**
 * `useRun`: one run of a cubepi server, watched by its id in a React component.
 * @module
 */
import { useMemo } from 'react';
import { CONNECTING_VIEW, runView$, type RunView, type RunViewOptions } from './run-view.js';
import { useObservable } from './use-observable.js';

/**
 * The run `runId` of the cubepi server at `baseUrl` as a {@link RunView}: its `messages` streaming in (assembled),
 * `toolActivity`, the `pendingApprovals` it raised, `status` (`connecting`, `running`, `reconnecting`, `done`,
 * `error`), `outcome`, `error` and `stop()`. The streaming part of {@link useThread}, for a run started elsewhere (a
 * job a server or another tab started, a run id from a link or a notification); see {@link runView$}.
 *
 * - **Mount** opens the run's stream from its start: a run that already ended is replayed, then `done`.
 * - **Unmount** closes the stream and does **not** cancel the run: this component did not start it. `stop()` cancels
 *   it on the server.
 * - **Identity.** The stream opens again when `baseUrl`, `runId`, `threadId`, `token` or `transport` change; `fetch`,
 *   `WebSocket`, `retry` and `throttleMs` are read when it does.
 * - The first render (before the component commits) shows status `connecting`, and its `stop` does nothing.
 *
 * @example
 * function Job({ runId }: { runId: string }) {
 *   const run = useRun({ baseUrl: '/api/agent', runId, token });
 *   return (
 *     <>
 *       {run.messages.map((m, i) => <MessageView key={i} message={m} />)}
 *       {run.status === 'running' && <button onClick={run.stop}>Stop</button>}
 *       {run.status === 'done' && <p>Finished: {run.outcome}</p>}
 *     </>
 *   );
 * }
 */
export function useRun(options: RunViewOptions): RunView {
  const { baseUrl, runId, threadId, token, transport } = options;
  const view$ = useMemo(
    () => runView$(options),
    // The run's identity; the other options are read when it changes (documented above).
    [baseUrl, runId, threadId, token, transport],
  );
  return useObservable(view$, CONNECTING_VIEW);
}
