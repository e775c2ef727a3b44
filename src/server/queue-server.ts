/**
 * `createQueueServer`: the agent server's routes and wire protocol on a run queue (`cubepi/worker`'s
 * `createRunQueue`) instead of agents in this process — a stateless API node: any node serves any run, workers run
 * them. Structural: this file knows the queue by its shape only, so `cubepi/server` stays free of `pg` and `pg-boss`.
 * See `docs/ui.md` ("On a run queue").
 * @module
 */
import type { Observable } from 'rxjs';
import { decodeStoredExtra, APPROVALS_KEY } from '../agent/stored-extra.js';
import { checkIdempotencyKey } from '../agent/input-keys.js';
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { ConfigurationError, StaleApprovalError } from '../types/errors.js';
import type { ApprovalAnswer, ApprovalRequest } from '../types/approval.js';
import type { Message } from '../types/messages.js';
import type { Principal } from '../types/principal.js';
import type { WireFrame } from '../wire/frames.js';
import { HttpError, json, readJsonBody } from './http.js';
import type { AccessAction } from './access.js';
import { createLimiter, type ServerLimitsOptions } from './limiter.js';
import { ObservedFrameReader } from './observed-frame-reader.js';
import { createOwnership } from './ownership.js';
import { threadOwners } from './thread-owners.js';
import { userInput } from './user-input.js';
import {
  corsPolicy,
  createFetchHandler,
  resolveServing,
  resumePosition,
  sseStreamResponse,
  type HttpAgentServer,
  type ServingOptions,
} from './routes.js';

/** What the queue server enqueues: a prompt, or the answer to an approval request (`RunQueue.enqueue`'s request). */
export type QueueRunRequest = (
  | { readonly threadId: string; readonly agent: string; readonly input: string | Message | readonly Message[] }
  | {
      readonly threadId: string;
      readonly agent: string;
      readonly respond: { readonly requestId: string; readonly answer: ApprovalAnswer };
    }
) & {
  /** Who the run acts for: stored with the run, passed by the worker in its run options. */
  readonly principal?: Principal | undefined;
  /** Whose the run is: the thread owner's `Principal.id` (`null`: an unowned thread). */
  readonly owner?: string | null | undefined;
  /** The run's id, a UUID (given with `limits`: the run's slot is held under it before it is queued). */
  readonly runId?: string | undefined;
  /** The request's idempotency key (`RunRequest.idempotencyKey`): a duplicate is answered with the first run's id. */
  readonly idempotencyKey?: string | undefined;
};

/**
 * What {@link createQueueServer} needs of a run queue: the shape of `cubepi/worker`'s `RunQueue` (which satisfies it
 * as it is), or of anything else that queues runs and streams their frames from any process.
 */
export interface ServedRunQueue {
  /** Queues a run; resolves with its run id once it is committed. Rejects with `InvalidInputError` for bad input. */
  enqueue(request: QueueRunRequest): Promise<string>;
  /** Cancels a run wherever it is; `false` when it had ended. Rejects for an unknown run (`reason: 'unknown_run'`). */
  cancel(runId: string, reason?: string): Promise<boolean>;
  /** The run's frames after `after` (replay, then the live tail), its terminal frame last. Cold. */
  frames(runId: string, options?: { readonly after?: number | undefined }): Observable<WireFrame>;
  /**
   * The run, or `undefined` for an unknown id; with its thread and owner (`RunQueue.run` gives both: the server checks
   * the owner before a watch or a cancel, and treats a run without one as unowned), and `status: 'ended'` once it
   * ended (then a resume past its end is 204).
   */
  run(runId: string): Promise<
    | {
        readonly runId: string;
        readonly threadId?: string | undefined;
        readonly owner?: string | null | undefined;
        readonly status?: string | undefined;
      }
    | undefined
  >;
  /**
   * The thread's oldest run that has not ended; `baseCount` (the thread's messages when it started) once a worker
   * started it.
   */
  activeRun(threadId: string): Promise<{ readonly runId: string; readonly baseCount: number | undefined } | undefined>;
}

/** Options of {@link createQueueServer}. */
export interface QueueServerOptions extends ServingOptions {
  /** The run queue (`createRunQueue` of `cubepi/worker`). The server never closes it. */
  readonly queue: ServedRunQueue;
  /** The name the workers know the agent by (`startWorker({ agents: { [name]: … } })`): every run is enqueued for it. */
  readonly agent: string;
  /** Where the workers' agents keep the threads: read for `GET /threads/:id` and `GET /threads`. */
  readonly checkpointer: Checkpointer;
  /**
   * Limits and budgets per principal (docs/limits.md), on a store every API node and worker shares
   * (`createPostgresLimitStore` of `cubepi/worker`, given to `startWorker({ limits })` too, which enforces the budgets
   * while runs run): checked before a run is queued, 429 with `Retry-After` over a limit.
   */
  readonly limits?: ServerLimitsOptions | undefined;
}

/** A server on a run queue: mount {@link fetch}, or `toNodeListener(server)` (and `attachWebSocket`) on Node. */
export interface QueueServer extends HttpAgentServer {
  /** Ends every stream the server is sending (the runs go on: they belong to the workers) and refuses new ones. */
  close(): void;
}

/**
 * Serves the agent server's routes on a run queue: `POST /threads/:id/runs` enqueues a prompt (`{ input, idempotencyKey? }`; 201 `{ runId,
 * threadId }`), `GET /runs/:id/events` streams the run's frames from the queue (SSE, resumable with `Last-Event-ID`;
 * WebSocket with `attachWebSocket`), `DELETE /runs/:id` cancels it wherever it runs, `POST
 * /threads/:id/approvals/:requestId` enqueues the answer (200 `{ runId, threadId }`), `GET /threads/:id` and `GET
 * /threads` read the checkpointer. Holds no run and no agent: run any number of these behind a load balancer.
 *
 * Differences from `createAgentServer` (docs/ui.md, "On a run queue"): a prompt for a thread that has a run is queued
 * behind it (not refused with 409); an answer that is not the last of its batch still gets a run id, whose stream is
 * just its end; `POST /chat`, `GET /chat/:id/stream` and `POST /ag-ui` answer 501.
 *
 * Throws {@link ConfigurationError} for invalid options.
 *
 * @example
 * const queue = createRunQueue({ connectionString: process.env.DATABASE_URL });
 * const server = createQueueServer({ queue, agent: 'support', checkpointer: new PostgresCheckpointer(pool) });
 * http.createServer(toNodeListener(server)).listen(8787, '127.0.0.1');
 */
export function createQueueServer(options: QueueServerOptions): QueueServer {
  const settings = resolveServing('createQueueServer', checkOptions(options));
  const { queue, agent, checkpointer } = options;
  const readers = new Set<ObservedFrameReader>();
  let closed = false;
  const limiter = createLimiter('createQueueServer', options.limits, undefined, (denied) =>
    settings.access.deny(denied),
  );

  /**
   * Queues the run `build` makes: with limits, admitted first (so a refused request claims no thread), under an id of
   * its own whose slot the admission holds (freed by the run's end, wherever it runs; here when building or queueing
   * failed). 429 over a limit, nothing queued.
   */
  async function enqueueAdmitted(
    principal: Principal,
    action: AccessAction,
    threadId: string,
    build: () => Promise<QueueRunRequest>,
  ): Promise<string> {
    if (limiter === undefined) return queue.enqueue(await build());
    const runId = globalThis.crypto.randomUUID();
    const budget = await limiter.admit(principal, runId, action, threadId);
    try {
      const run = await build();
      const queued = await queue.enqueue(budget === undefined ? run : { ...run, runId });
      // A duplicate (its idempotency key names a run already queued) queued nothing under this run's slot.
      if (queued !== runId) await budget?.release();
      return queued;
    } catch (error) {
      await budget?.release();
      throw error;
    }
  }

  const owners = threadOwners(checkpointer);
  const ownership = createOwnership(settings.access, owners, checkpointer);

  const checkOpen = () => {
    if (closed) throw new HttpError(503, 'closing', 'the server is closing');
  };

  async function startRun(principal: Principal, request: Request, threadId: string): Promise<Response> {
    checkOpen();
    const body = await readJsonBody(request, settings.maxBodyBytes);
    if (typeof body === 'object' && body !== null && 'resume' in body) {
      // A queued run that loses its worker is taken over by another (docs/scale-out.md): nothing is left to continue.
      throw new HttpError(501, 'not_implemented', '`resume` is served by createAgentServer only, not on a run queue');
    }
    // User content only, checked before anything is admitted, claimed or queued (400 otherwise).
    const input = userInput((body as { input?: unknown } | null)?.input, settings.maxFileBytes);
    const key = (body as { idempotencyKey?: unknown } | null)?.idempotencyKey;
    const idempotencyKey = key === undefined ? undefined : checkIdempotencyKey(key, 'idempotencyKey');
    const runId = await enqueueAdmitted(principal, 'start_run', threadId, async () => ({
      threadId,
      agent,
      input,
      principal,
      owner: await ownership.claim(principal, 'start_run', threadId),
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    }));
    return json(201, { runId, threadId });
  }

  async function answerApproval(
    principal: Principal,
    request: Request,
    threadId: string,
    requestId: string,
  ): Promise<Response> {
    checkOpen();
    const answer = (await readJsonBody(request, settings.maxBodyBytes)) as ApprovalAnswer;
    // A thread the caller may not answer on is answered as one without that request (nothing is queued).
    const allowed = await ownership.onThread(principal, 'answer_approval', threadId);
    if (allowed === undefined) throw new StaleApprovalError(requestId, 'unknown');
    // With no run ahead of it, the stored approvals are the truth: a stale answer is refused here, as in process.
    // Behind a run, the request may not be stored yet (that run is suspending): the answer's own run decides.
    if ((await queue.activeRun(threadId)) === undefined) {
      const request = (await storedRequests(threadId)).find((r) => r.requestId === requestId);
      if (request === undefined) throw new StaleApprovalError(requestId, 'unknown');
      if (request.answer !== undefined) throw new StaleApprovalError(requestId, 'answered');
    }
    const runId = await enqueueAdmitted(principal, 'answer_approval', threadId, () =>
      Promise.resolve({ threadId, agent, respond: { requestId, answer }, principal, owner: allowed.owner }),
    );
    return json(200, { runId, threadId });
  }

  /** The approval requests of the thread's suspended batch (answered ones with their answer), from its checkpoint. */
  async function storedRequests(
    threadId: string,
  ): Promise<readonly (ApprovalRequest & { answer?: ApprovalAnswer | undefined })[]> {
    const stored = await checkpointer.load(threadId);
    if (stored === null || stored.extra[APPROVALS_KEY] === undefined) return [];
    return decodeStoredExtra(stored.extra).approvals?.requests ?? [];
  }

  async function getThread(principal: Principal, threadId: string): Promise<Response> {
    // A thread the caller may not read answers exactly as one that does not exist: empty, nothing active.
    if ((await ownership.onThread(principal, 'read_thread', threadId)) === undefined) {
      return json(200, { threadId, messages: [], pending: [], activeRunId: null });
    }
    // The history up to the active run, read between two looks at that run: when both see the same run (or none), the
    // stored messages were read while it was the thread's active run, so its `baseCount` cuts them where it began.
    for (let attempt = 0; ; attempt++) {
      const before = await queue.activeRun(threadId);
      const stored = await checkpointer.load(threadId);
      const active = await queue.activeRun(threadId);
      if (before?.runId !== active?.runId && attempt < 3) continue;
      const messages = stored?.messages ?? [];
      const pending =
        stored === null || stored.extra[APPROVALS_KEY] === undefined
          ? []
          : (decodeStoredExtra(stored.extra).approvals?.requests ?? []).filter((r) => r.answer === undefined);
      return json(200, {
        threadId,
        messages: active?.baseCount === undefined ? messages : messages.slice(0, active.baseCount),
        pending,
        activeRunId: active?.runId ?? null,
      });
    }
  }

  async function listThreads(principal: Principal, url: URL): Promise<Response> {
    return json(200, await ownership.list(principal, url, () => []));
  }

  /** Resolves when `principal` may do `action` on the run; rejects with 404 (as for a missing run) otherwise. */
  /** The run, when the caller may `action` it; else 404 `unknown_run`, exactly as for a run that does not exist. */
  async function ownedRun(
    principal: Principal,
    action: 'watch_run' | 'cancel_run',
    runId: string,
  ): Promise<NonNullable<Awaited<ReturnType<ServedRunQueue['run']>>>> {
    const run = await queue.run(runId);
    const owned = run === undefined ? undefined : { runId, threadId: run.threadId, owner: run.owner ?? null };
    if (run === undefined || owned === undefined || !(await ownership.onRun(principal, action, owned))) {
      throw new HttpError(404, 'unknown_run', `no run ${runId}`);
    }
    return run;
  }

  async function cancelRun(principal: Principal, runId: string): Promise<Response> {
    await ownedRun(principal, 'cancel_run', runId);
    try {
      return json(202, { runId, cancelled: await queue.cancel(runId, 'cancelled by a client') });
    } catch (error) {
      if (isUnknownRun(error)) throw new HttpError(404, 'unknown_run', `no run ${runId}`);
      throw error;
    }
  }

  /** A reader of the run's frames after `Last-Event-ID` (or `?after=`): 404 for an unknown run. */
  async function openRunStream(
    runId: string,
    lastEventId: string | null,
    principal: Principal,
  ): Promise<ObservedFrameReader> {
    checkOpen();
    const after = resumePosition(lastEventId);
    const run = await ownedRun(principal, 'watch_run', runId);
    checkOpen();
    const reader: ObservedFrameReader = new ObservedFrameReader(
      queue.frames(runId, { after }),
      settings.heartbeatMs,
      () => readers.delete(reader),
    );
    readers.add(reader);
    // An ended run's replay is bounded: wait for its start, so a resume at or past its end is known (`atEnd`: SSE 204,
    // which stops an EventSource reconnecting forever) before the response is chosen.
    if (run.status === 'ended') await reader.settled();
    return reader;
  }

  async function streamRun(principal: Principal, request: Request, url: URL, runId: string): Promise<Response> {
    const lastEventId = request.headers.get('last-event-id') ?? url.searchParams.get('after');
    return sseStreamResponse(await openRunStream(runId, lastEventId, principal));
  }

  const notServed = (route: string) => async (): Promise<Response> => {
    throw new HttpError(
      501,
      'not_implemented',
      `${route} is not served on a run queue (createQueueServer): use POST /threads/:id/runs and GET /runs/:id/events`,
    );
  };

  const corsFor = corsPolicy(options);
  return {
    fetch: createFetchHandler(settings, corsFor, {
      startRun,
      answerApproval,
      getThread,
      listThreads,
      cancelRun,
      streamRun,
      chat: notServed('POST /chat'),
      resumeChat: notServed('GET /chat/:id/stream'),
      agUi: notServed('POST /ag-ui'),
      retryFrom: notServed('POST /threads/:id/retry'),
    }),
    close() {
      closed = true;
      for (const reader of [...readers]) reader.stop();
    },
    metrics: () => settings.access.metrics(),
    settings,
    openRunStream,
    corsFor,
  };
}

function checkOptions(options: QueueServerOptions): QueueServerOptions {
  if (typeof options !== 'object' || options === null)
    throw new ConfigurationError('createQueueServer: options needed');
  const queue = options.queue as Partial<ServedRunQueue> | undefined;
  const methods = ['enqueue', 'cancel', 'frames', 'run', 'activeRun'] as const;
  if (typeof queue !== 'object' || queue === null || methods.some((name) => typeof queue[name] !== 'function')) {
    throw new ConfigurationError('createQueueServer: `queue` must be a run queue (createRunQueue of cubepi/worker)');
  }
  if (typeof options.agent !== 'string' || options.agent === '') {
    throw new ConfigurationError('createQueueServer: `agent` must name the agent the workers run (startWorker agents)');
  }
  const checkpointer = options.checkpointer as Partial<Checkpointer> | undefined;
  if (typeof checkpointer?.load !== 'function' || typeof checkpointer.listThreads !== 'function') {
    throw new ConfigurationError('createQueueServer: `checkpointer` must be the checkpointer the workers use');
  }
  return options;
}

/** A run queue's "no such run" (`RunQueueError` with `reason: 'unknown_run'`), recognised by its shape. */
function isUnknownRun(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { reason?: unknown }).reason === 'unknown_run';
}
