/**
 * `useThread`: a cubepi server's thread in a React component — its messages streaming in, tool activity, approvals to
 * answer, and send/stop.
 * @module
 */
import { useMemo } from 'react';
import { LOADING_VIEW, threadView$, type ThreadOptions, type ThreadView } from './thread-view.js';
import { useObservable } from './use-observable.js';

/**
 * The thread `threadId` of the cubepi server at `baseUrl` as a {@link ThreadView}: `messages` (assembled, the
 * streaming answer updated in place), `toolActivity`, `pendingApprovals` (each with `approve()`, `deny(reason)`,
 * `edit(args)`), `send(input)`, `stop()`, `status` (`loading`, `idle`, `running`, `reconnecting`, `error`) and
 * `error`. Built on `cubepi/client` (`getThread`, `startRun`, `respond`, `fromAgentEvents`, `cancelRun`) and
 * `cubepi/operators` (`throttleDeltas`, `assembleMessages`, `toolActivity`): see {@link threadView$}.
 *
 * - **Mount** reads the thread and, when it has an active run (another tab's, say), streams it from its start.
 * - **Unmount** cancels the runs this component started (by `send` or by answering an approval) that have not ended,
 *   and nothing else: a run it only watched goes on. `stop()` cancels the streaming run whoever started it.
 * - **Identity.** The thread is read again when `baseUrl`, `threadId`, `token` or `transport` change; `fetch`,
 *   `WebSocket`, `retry` and `throttleMs` are read when it is (pass them stable, or they apply from the next change).
 * - The first render (before the component commits) shows status `loading` and its actions do nothing.
 *
 * @example
 * function Chat({ threadId }: { threadId: string }) {
 *   const thread = useThread({ baseUrl: '/api/agent', threadId, token });
 *   return (
 *     <>
 *       {thread.messages.map((m, i) => <MessageView key={i} message={m} />)}
 *       {thread.pendingApprovals.map((a) => (
 *         <Ask key={a.requestId} tool={a.toolName} onYes={a.approve} onNo={() => a.deny('not now')} />
 *       ))}
 *       <Composer disabled={thread.status !== 'idle'} onSend={thread.send} onStop={thread.stop} />
 *     </>
 *   );
 * }
 */
export function useThread(options: ThreadOptions): ThreadView {
  const { baseUrl, threadId, token, transport } = options;
  const view$ = useMemo(
    () => threadView$(options),
    // The thread's identity; the other options are read when it changes (documented above).
    [baseUrl, threadId, token, transport],
  );
  return useObservable(view$, LOADING_VIEW);
}
