/**
 * `cubepi/server`: agents served over HTTP — runs started and streamed as Server-Sent Events or WebSocket frames,
 * resumable, cancellable, with approvals. A Fetch-style handler at the core (`createAgentServer` for agents in this
 * process, `createQueueServer` for a run queue's workers), mounted on Node by `toNodeListener` and `attachWebSocket`.
 * See `docs/ui.md`.
 * @module
 */
export { createAgentServer, type AgentServer, type AgentServerOptions } from './agent-server.js';
export {
  createQueueServer,
  type QueueRunRequest,
  type QueueServer,
  type QueueServerOptions,
  type ServedRunQueue,
} from './queue-server.js';
export type { HttpAgentServer, ServingOptions } from './routes.js';
export type { ServerLimitsOptions } from './limiter.js';
export { MemoryLimitStore, type MemoryLimitStoreOptions } from './memory-limit-store.js';
export type {
  Admission,
  LimitCode,
  LimitRefusal,
  Limits,
  LimitsPolicy,
  LimitStore,
  RunBudget,
  Spend,
} from '../types/limits.js';
export {
  ownerOnly,
  type AccessAction,
  type AccessDenied,
  type AccessMetrics,
  type AccessResource,
  type Authenticator,
  type Authorize,
} from './access.js';
export { bearerToken } from './auth.js';
export {
  jwtAuthenticator,
  type JsonWebKeySet,
  type Jwk,
  type JwtAuthenticatorOptions,
  type JwtKeys,
} from './jwt-authenticator.js';
export {
  DEFAULT_SERVER_MAX_FILE_BYTES,
  FileInputError,
  fileBytesProblem,
  toFileBlock,
  type FileSource,
} from './file-input.js';
export { attachWebSocket, toNodeListener, type WebSocketOptions } from './node.js';
export type { SequencedEvent, WireError, WireFrame } from '../wire/frames.js';
