/**
 * `cubepi/react`: React hooks over `cubepi/client` and `cubepi/operators`. React (18 or later) is an optional peer
 * dependency: only this entry imports it. See `docs/ui.md` ("React").
 * @module
 */
export { useObservable } from './use-observable.js';
export { useThread } from './use-thread.js';
export { useRun } from './use-run.js';
export { CONNECTING_VIEW, runView$, type RunStatus, type RunView, type RunViewOptions } from './run-view.js';
export {
  LOADING_VIEW,
  threadView$,
  type PendingApproval,
  type ThreadOptions,
  type ThreadStatus,
  type ThreadView,
} from './thread-view.js';
