/**
 * Typed errors, so a host can react to a failure without parsing its message. Every class has a stable `code`.
 *
 * Failures of a model call and of a tool are *values* (an `error` stream event, an error tool result), not these
 * errors: these are for configuration mistakes, misuse of the API, bugs in hooks, and cancellation.
 * @module
 */
import type { RunOutcome } from './agent-events.js';
import type { Message, ProviderErrorKind } from './messages.js';
import type { OutputIssue } from './output.js';

/** The base of every error cubepi throws. */
export abstract class CubepiError extends Error {
  /** A stable, machine-readable identifier of the error class. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Invalid options given to a constructor. Raised at construction, never at the first call. */
export class ConfigurationError extends CubepiError {
  readonly code = 'configuration';
}

/** An invalid argument given to a method (a prompt that is not a message, a negative limit, …). */
export class InvalidInputError extends CubepiError {
  readonly code = 'invalid_input';
}

/** A run was asked for while another run of the same agent is active (use `steer` or `followUp` instead). */
export class AgentBusyError extends CubepiError {
  readonly code = 'agent_busy';
}

/**
 * A thread's active agent (stored by a handoff, state key `handoff.active`) is not one the Agent can reach: neither the
 * Agent itself nor an agent its handoff tools lead to, transitively (see docs/handoffs.md). Raised when a run starts on
 * such a thread (typically after a restore in a process configured without that agent); nothing runs, nothing is
 * written. Never a silent fallback to the root agent.
 */
export class UnknownAgentError extends CubepiError {
  readonly code = 'unknown_agent';
  /** The active agent's name, as the thread stored it. */
  readonly agent: string;
  /** The names the Agent can reach. */
  readonly known: readonly string[];

  constructor(agent: string, known: readonly string[]) {
    super(
      `The thread's active agent "${agent}" is not reachable from this Agent (known: ${known.length === 0 ? 'none' : known.map((name) => `"${name}"`).join(', ')}); register it with a handoff`,
    );
    this.agent = agent;
    this.known = known;
  }
}

/** An operation the current state does not allow (resuming an empty history, …); nothing was done. */
export class InvalidStateError extends CubepiError {
  readonly code = 'invalid_state';
}

/** The names of the middleware hooks: the seven of a turn and the two of a run's lifecycle. */
export type HookName =
  | 'transformContext'
  | 'convertToLlm'
  | 'transformSystemPrompt'
  | 'beforeToolCall'
  | 'afterToolCall'
  | 'shouldStopAfterTurn'
  | 'afterModelResponse'
  | 'onRunStart'
  | 'onRunEnd';

/** Where a {@link HookError} happened. */
export interface HookErrorDetails {
  /** The middleware's name (`agent options` for a hook passed to the `Agent` constructor). */
  readonly middleware: string;
  readonly hook: HookName | (string & {});
  /** The middleware's phase, when it has one. */
  readonly phase?: string | undefined;
  /** A hash of the hook's input, to correlate failures without logging the input itself. */
  readonly inputHash?: string | undefined;
  readonly cause: unknown;
}

/**
 * A hook threw or errored: a bug, not a tool failure. The run ends (its transcript kept consistent: unanswered tool
 * calls get error results), `prompt()` rejects with this error and `agent_end` is still emitted.
 */
export class HookError extends CubepiError {
  readonly code = 'hook_error';
  readonly middleware: string;
  readonly hook: string;
  readonly phase?: string | undefined;
  readonly inputHash?: string | undefined;

  constructor(details: HookErrorDetails) {
    super(`Hook ${details.hook} of middleware "${details.middleware}" failed: ${errorMessageOf(details.cause)}`, {
      cause: details.cause,
    });
    this.middleware = details.middleware;
    this.hook = details.hook;
    if (details.phase !== undefined) this.phase = details.phase;
    if (details.inputHash !== undefined) this.inputHash = details.inputHash;
  }
}

/**
 * Why a run was cancelled: `abort()`, its `prompt$` subscriber left, its deadline passed, a caller's signal fired, or
 * the budget of the run that started it (a sub-agent's parent) is spent.
 */
export type AbortReason = 'abort' | 'unsubscribed' | 'deadline' | 'signal' | 'budget';

/**
 * A run was cancelled. It is the `reason` of the run's `AbortSignal` (so tools and hooks can tell why) and is never
 * retried or turned into an ordinary error.
 */
export class RunAbortedError extends CubepiError {
  // Assigned in the constructor rather than as class fields: no field initializer to compile on a process's first
  // cancellation, which is on the path a cancelled run settles by.
  declare readonly code: 'aborted';
  declare readonly reason: AbortReason;

  constructor(reason: AbortReason, message = defaultAbortMessage(reason)) {
    super(message);
    this.code = 'aborted';
    this.reason = reason;
  }
}

function defaultAbortMessage(reason: AbortReason): string {
  switch (reason) {
    case 'abort':
      return 'Run aborted';
    case 'unsubscribed':
      return 'Run aborted: its subscriber unsubscribed';
    case 'deadline':
      return 'Run aborted: deadline exceeded';
    case 'signal':
      return "Run aborted: the caller's signal fired";
    case 'budget':
      return 'Run aborted: the budget is spent';
  }
}

/** Whether an error means "cancelled" (a {@link RunAbortedError} or a DOM `AbortError`). */
export function isAbortError(error: unknown): boolean {
  return (
    error instanceof RunAbortedError ||
    (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError')
  );
}

/**
 * A failed model call, classified. Providers report failures as `error` stream events; this class is for code that
 * must throw one (a wrapper, a custom provider built on a throwing client).
 */
export class ProviderError extends CubepiError {
  readonly code = 'provider_error';
  readonly kind: ProviderErrorKind;
  readonly retryAfterMs?: number | undefined;
  readonly status?: number | undefined;

  constructor(
    message: string,
    details: { kind: ProviderErrorKind; retryAfterMs?: number; status?: number; cause?: unknown },
  ) {
    super(message, { cause: details.cause });
    this.kind = details.kind;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.status !== undefined) this.status = details.status;
  }
}

/**
 * A tool's execution failed: it threw, its Promise rejected or its Observable errored. The model sees an error
 * result carrying the message; the host finds this error (the tool's own as `cause`) on the call's `ToolOutcome`
 * (`wrapToolCall`) — so a retry wrapper can tell a thrown error from an `isError` result.
 */
export class ToolExecutionError extends CubepiError {
  readonly code = 'tool_execution_error';
  readonly toolName: string;
  readonly toolCallId: string;

  constructor(details: { toolName: string; toolCallId: string; cause: unknown; message?: string }) {
    super(details.message ?? errorMessageOf(details.cause), { cause: details.cause });
    this.toolName = details.toolName;
    this.toolCallId = details.toolCallId;
  }
}

/** The message of any thrown value. */
export function errorMessageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** The checkpointer operation an error happened in. `open` covers connecting, opening a file and migrations. */
export type CheckpointOperation =
  'open' | 'load' | 'append' | 'saveExtra' | 'listThreads' | 'deleteThread' | 'fork' | 'claimThread' | 'threadOwner';

/** What a {@link CheckpointError} reports. */
export interface CheckpointErrorDetails {
  readonly operation: CheckpointOperation;
  /** The thread the operation was about; absent for `listThreads` and `open`. */
  readonly threadId?: string | undefined;
  /** The driver's error (a `SqliteError`, a `pg` error, a `TypeError` from serialisation, …). */
  readonly cause?: unknown;
  /** Replaces the generated message. */
  readonly message?: string | undefined;
}

/**
 * A checkpointer could not do what it was asked: the store is unreachable, the disk is full, the connection was
 * lost, a message cannot be serialised. Every write is one transaction, so a failed `append` or `saveExtra` never
 * wrote part of itself; it wrote nothing when it failed before reaching the store (a message that cannot be
 * serialised, a closed database, a refused connection). When the connection is lost after the statement or its
 * commit reached the server (PostgreSQL), the write may have landed: its outcome is unknown, and only a reload
 * tells. The driver's error is the `cause`; backends never let a raw driver error escape.
 *
 * In a run, this ends the run and `prompt()` rejects with it. Memory and store may then differ (the store may even
 * hold the write that failed): reload before continuing, as an `Agent` does at its next run. Corruption and schema
 * problems are the subclasses
 * {@link CheckpointCorruptionError} and {@link CheckpointSchemaError}; a lost race is {@link ThreadConflictError},
 * which is not a failure and not a subclass.
 */
export class CheckpointError extends CubepiError {
  readonly code: 'checkpoint_error' | 'checkpoint_corruption' | 'checkpoint_schema' = 'checkpoint_error';
  readonly operation: CheckpointOperation;
  readonly threadId?: string | undefined;

  constructor(details: CheckpointErrorDetails) {
    const where = details.threadId === undefined ? '' : ` for thread "${details.threadId}"`;
    super(
      details.message ??
        `Checkpoint ${details.operation} failed${where}` +
          (details.cause === undefined ? '' : `: ${errorMessageOf(details.cause)}`),
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.operation = details.operation;
    if (details.threadId !== undefined) this.threadId = details.threadId;
  }
}

/**
 * An `append` passed `expectedSeq`, but the thread's stored `seq` was different: someone else wrote the thread (or
 * deleted it) since the caller loaded it. Nothing was written. `actual` is the stored `seq` when the append was
 * refused. Reload the thread (`load`) and decide again; an `Agent` does this for you.
 */
export class ThreadConflictError extends CubepiError {
  readonly code = 'thread_conflict';
  readonly threadId: string;
  readonly expected: number;
  readonly actual: number;

  /** `message` replaces the generated one (a fork names the thread that already exists). */
  constructor(threadId: string, expected: number, actual: number, message?: string) {
    super(message ?? `Thread "${threadId}" changed under this writer: expected seq ${expected}, found ${actual}`);
    this.threadId = threadId;
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * `deleteThread` was asked to delete a thread that has forks (`Checkpointer.fork`): they share its messages, so
 * it is kept, and nothing was changed. `forks` names them (the direct forks, oldest first); delete them first.
 */
export class ThreadHasForksError extends CubepiError {
  readonly code = 'thread_has_forks';
  readonly threadId: string;
  readonly forks: readonly string[];

  constructor(threadId: string, forks: readonly string[]) {
    const shown = forks.slice(0, 5).map((id) => JSON.stringify(id));
    const more = forks.length > 5 ? ` and ${forks.length - 5} more` : '';
    super(`Thread "${threadId}" has forks (${shown.join(', ')}${more}) that share its messages: delete them first`);
    this.threadId = threadId;
    this.forks = [...forks];
  }
}

/**
 * A checkpointer was asked for an operation its backend does not have (nothing was done): `fromSeedCheckpointer` over
 * a backend of the seed's protocol (`load`, `append`, `saveExtra` only) has no `listThreads`, and no `deleteThread`
 * unless the backend gives one. Not a failure of the store: retrying never helps; use a backend that has it.
 */
export class CheckpointUnsupportedError extends CubepiError {
  readonly code = 'checkpoint_unsupported';
  readonly operation: CheckpointOperation;
  readonly threadId?: string | undefined;

  constructor(operation: CheckpointOperation, reason: string, threadId?: string) {
    super(`Checkpoint ${operation} is not supported: ${reason}`);
    this.operation = operation;
    if (threadId !== undefined) this.threadId = threadId;
  }
}

/**
 * Stored data could not be read back as what was written: a row that is not valid JSON, is not a message, or is
 * missing from the sequence. `seq` names the bad row; it is absent when the bad data is the thread's own record
 * (its `extra`, its counter). The thread is not loaded at all rather than loaded with a hole.
 */
export class CheckpointCorruptionError extends CheckpointError {
  override readonly code = 'checkpoint_corruption';
  readonly seq?: number | undefined;
  readonly reason: string;

  constructor(threadId: string, seq: number | undefined, reason: string, options?: { cause?: unknown }) {
    super({
      operation: 'load',
      threadId,
      cause: options?.cause,
      message: `Corrupt checkpoint of thread "${threadId}"${seq === undefined ? '' : ` at seq ${seq}`}: ${reason}`,
    });
    if (seq !== undefined) this.seq = seq;
    this.reason = reason;
  }
}

/**
 * The store's schema version is not one this code can use: newer than it knows (written by a later cubepi), or
 * otherwise unreadable. Raised when the checkpointer opens the store, before anything is written.
 */
export class CheckpointSchemaError extends CheckpointError {
  override readonly code = 'checkpoint_schema';
  /** The version found in the store (`NaN` when it is not a version number at all). */
  readonly found: number;
  /** The newest version this code knows. */
  readonly supported: number;

  constructor(details: { found: number; supported: number; location: string }) {
    super({
      operation: 'open',
      message: Number.isNaN(details.found)
        ? `Checkpoint schema of ${details.location} has an unreadable version; refusing to use it`
        : `Checkpoint schema of ${details.location} is at version ${details.found}, newer than this cubepi ` +
          `supports (${details.supported}); upgrade cubepi, or use another table prefix or schema`,
    });
    this.found = details.found;
    this.supported = details.supported;
  }
}

/**
 * The family of a state patch the run refused: a conflict ({@link StatePatchConflictError}) or a write the producer
 * may not make ({@link StatePatchPermissionError}). Either fails the run, even for a middleware declared
 * `onError: 'skip'` (the refused patch is not applied, and the run cannot go on as if it had been).
 */
export abstract class StatePatchError extends CubepiError {
  /** The refused patch's producer (a middleware's name). */
  abstract readonly producer: string;
  /** The keys of the refused patch at fault. */
  abstract readonly keys: readonly string[];
}

/**
 * A patch the run state cannot take as it is: two patches from one parallel tool batch changed the same key (which one
 * should win is not defined, so neither silently does), or a patch declared the state version it read
 * (`StatePatch.baseVersion`) and the state has moved on since. The run ends (outcome `failed`); the producers are named.
 */
export class StatePatchConflictError extends StatePatchError {
  readonly code = 'state_patch_conflict';
  /** The key in conflict: for a stale version, the patch's first key (`''` when it changes no key). */
  readonly key: string;
  /**
   * The earlier producer and the refused patch's. For a stale version: the producer of the state's current version
   * when one of the values' keys records it (`changedBy`), else `''`; then the refused patch's.
   */
  readonly producers: readonly [string, string];
  /** The refused patch's producer (a middleware's name). */
  readonly producer: string;
  /** The keys of the refused patch in conflict: the batch's shared key, or every key the stale patch changes. */
  readonly keys: readonly string[];
  /** `'batch'`: two calls of a parallel batch changed one key. `'version'`: the patch's `baseVersion` was stale. */
  readonly reason: 'batch' | 'version';
  /** For a stale version: the version the patch declared it read (`baseVersion`); `undefined` for a batch conflict. */
  readonly expectedVersion: number | undefined;
  /** For a stale version: the state's version when the patch came; `undefined` for a batch conflict. */
  readonly actualVersion: number | undefined;

  constructor(key: string, first: string, second: string);
  constructor(stale: StaleStateVersion);
  constructor(keyOrStale: string | StaleStateVersion, first?: string, second?: string) {
    if (typeof keyOrStale === 'string') {
      super(
        `State key "${keyOrStale}" was changed by two patches of one parallel tool batch: ${first} and ${second}; ` +
          'change it from one hook, or run the batch sequentially',
      );
      this.key = keyOrStale;
      this.producers = [first!, second!];
      this.producer = second!;
      this.keys = [keyOrStale];
      this.reason = 'batch';
      this.expectedVersion = undefined;
      this.actualVersion = undefined;
      return;
    }
    const { producer, keys, expectedVersion, actualVersion, lastProducer = '' } = keyOrStale;
    const what = keys.length === 0 ? 'a patch' : `a patch of ${keys.map((k) => `"${k}"`).join(', ')}`;
    super(
      `${producer} sent ${what} based on state version ${expectedVersion}, but the state is at version ` +
        `${actualVersion}${lastProducer === '' ? '' : ` (last changed by ${lastProducer})`}; read the state again ` +
        'and send a new patch',
    );
    this.key = keys[0] ?? '';
    this.producers = [lastProducer, producer];
    this.producer = producer;
    this.keys = Object.freeze([...keys]);
    this.reason = 'version';
    this.expectedVersion = expectedVersion;
    this.actualVersion = actualVersion;
  }
}

/**
 * A patch wrote what its producer may not: a key outside the middleware's `writes`, or anything at all from an
 * `observeOnly` middleware. Nothing of the patch was applied and the run fails (not skippable by `onError: 'skip'`).
 * `keys` are the offending ones, as `writes` names them: a `values` key (`set`, `delete`),
 * `cubepi:fragment.<id>` for a context fragment added or removed, `cubepi:events` for `appendEvents`.
 */
export class StatePatchPermissionError extends StatePatchError {
  readonly code = 'state_patch_permission';
  readonly producer: string;
  readonly keys: readonly string[];
  /** What the producer may write (its `writes`; empty for an `observeOnly` middleware). */
  readonly allowed: readonly string[];

  constructor(producer: string, keys: readonly string[], allowed: readonly string[], observeOnly = false) {
    const what = keys.map((k) => `"${k}"`).join(', ');
    super(
      observeOnly
        ? `${producer} is observeOnly: it may not patch the state (it wrote ${what})`
        : `${producer} may not write ${what}: its writes are ${allowed.length === 0 ? 'none' : allowed.map((k) => `"${k}"`).join(', ')}`,
    );
    this.producer = producer;
    this.keys = keys;
    this.allowed = allowed;
  }
}

/** What a {@link StatePatchConflictError} for a stale `baseVersion` is built from. */
export interface StaleStateVersion {
  readonly producer: string;
  readonly keys: readonly string[];
  readonly expectedVersion: number;
  readonly actualVersion: number;
  /** Who made the state's current version, when known. */
  readonly lastProducer?: string | undefined;
}

/**
 * An approval answer that cannot be taken: the request id is unknown to the agent, or was already answered.
 * Nothing was recorded.
 */
export class StaleApprovalError extends CubepiError {
  readonly code = 'stale_approval';
  readonly requestId: string;

  constructor(requestId: string, why: 'unknown' | 'answered') {
    super(
      why === 'unknown'
        ? `No pending approval request "${requestId}" (agent.pending lists the open ones)`
        : `Approval request "${requestId}" was already answered`,
    );
    this.requestId = requestId;
  }
}

/**
 * An input was given with an idempotency key the agent has already taken (`RunOptions.idempotencyKey` of `prompt`,
 * `respond`, …, or `InputOptions.idempotencyKey` of `steer` and `followUp`): nothing was started or queued. `runId` is
 * the run that took the first input with this key — in this process, or in another one that stored it on the same
 * thread — or `undefined` when no run has taken it yet (a steering message still queued, an answer that did not
 * complete its batch). See docs/agent.md, "Idempotent inputs and settled results".
 */
export class DuplicateInputError extends CubepiError {
  readonly code = 'duplicate_input';

  constructor(
    readonly idempotencyKey: string,
    readonly runId: string | undefined,
  ) {
    super(
      runId === undefined
        ? `The input with idempotency key "${idempotencyKey}" was already given (no run has taken it yet)`
        : `The input with idempotency key "${idempotencyKey}" was already taken by run ${runId}`,
    );
  }
}

/**
 * A run with `output` ended without a valid answer (`agent.prompt(…, { output })` rejects with it): `reason`
 * `invalid` (the answers were not values of the schema and `outputRetries` were spent; `issues` are the last one's) or
 * `missing` (the run ended `outcome` before the model answered). `messages` are what the run added.
 */
export class OutputError extends CubepiError {
  readonly code = 'output_error';
  constructor(
    message: string,
    readonly reason: 'invalid' | 'missing',
    readonly outcome: RunOutcome,
    readonly issues: readonly OutputIssue[],
    readonly attempts: number,
    readonly messages: readonly Message[],
  ) {
    super(message);
  }
}

/**
 * A file block stored by reference (`ref`) could not be resolved to its bytes before a model request: the blob store
 * has no blob at that address (deleted, or a store other than the one the thread was written with), or the agent has
 * no blob store at all. Names the block: `messageIndex` in the request's messages, `blockIndex` in its content. The
 * run fails with it before anything is sent (`prompt()` rejects with it).
 */
export class BlobMissingError extends CubepiError {
  readonly code = 'blob_missing';
  constructor(
    readonly ref: string,
    readonly messageIndex: number,
    readonly blockIndex: number,
    reason: 'not_found' | 'no_store',
  ) {
    super(
      `File block ${blockIndex} of message ${messageIndex} refers to blob ${ref}, ` +
        (reason === 'no_store'
          ? 'but the agent has no blob store to read it from'
          : 'which the blob store does not hold'),
    );
  }
}

/** What a {@link Store} was doing when it failed. */
export type StoreOperation = 'put' | 'get' | 'delete' | 'list' | 'search' | 'open';

/**
 * A store backend could not do what it was asked (the database is unreachable, closed, full). The driver's error is
 * the `cause`; a failed `put` wrote nothing. Bad arguments are {@link InvalidInputError}s, bad embeddings
 * {@link EmbeddingError}s, not this.
 */
export class StoreError extends CubepiError {
  readonly code = 'store_error';
  constructor(
    readonly operation: StoreOperation,
    cause: unknown,
  ) {
    super(`Store ${operation} failed: ${errorMessageOf(cause)}`, { cause });
  }
}

/**
 * The store's `embed` function threw, or returned what is not one finite, non-zero vector of the store's `dimensions`
 * per text. Names the items' keys (`keys`; empty for a search's query) and their namespace. Nothing was written.
 */
export class EmbeddingError extends CubepiError {
  readonly code = 'embedding_error';
  constructor(
    readonly keys: readonly string[],
    readonly namespace: readonly string[],
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    const what =
      keys.length === 0
        ? 'the search query'
        : `item${keys.length > 1 ? 's' : ''} ${keys.map((k) => JSON.stringify(k)).join(', ')}`;
    super(`Embedding ${what} in namespace ${JSON.stringify(namespace)} failed: ${reason}`, options);
  }
}
