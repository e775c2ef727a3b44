/**
 * `cubepi/client`: a cubepi server's runs as Observables, in the browser or anywhere with `fetch` (no Node import).
 * Watch a run (`fromAgentEvents`), start one (`startRun`: unsubscribing cancels it), continue a thread
 * (`resumeThread`: after a failed or lost run), answer approvals (`respond`),
 * read threads (`getThread`). Pipe the events through `cubepi/operators` (`assembleMessages`, `toolActivity`) into any
 * UI. See `docs/ui.md`.
 * @module
 */
export {
  AgentServerError,
  LimitExceededError,
  RemoteRunError,
  RunLostError,
  StreamBrokenError,
  type LimitErrorCode,
} from './errors.js';
export {
  fromAgentEvents,
  type AgentEventsOptions,
  type ClientOptions,
  type RetryOptions,
  type WebSocketConstructor,
  type WebSocketLike,
} from './from-agent-events.js';
export {
  cancelRun,
  getThread,
  listThreads,
  listThreadPage,
  type ListThreadsClientOptions,
  respond,
  resumeThread,
  retryFrom,
  type RetryFromClientOptions,
  type RetryFromRequest,
  runEventsUrl,
  startRun,
  type RemoteThread,
  type RemoteThreadInfo,
  type RunClientOptions,
} from './runs.js';
export type { SequencedEvent, WireError, WireFrame } from '../wire/frames.js';
