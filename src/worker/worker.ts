/**
 * `startWorker`: takes runs from a {@link RunQueue}, runs them on the thread's agent, streams their events into the
 * run-event log, and survives its own death (another worker resumes the thread). See `docs/scale-out.md`.
 * @module
 */
import type { Principal } from '../types/principal.js';
import { hostname } from 'node:os';
import pg from 'pg';
import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { catchError, concat, defer, EMPTY, map, throwError, type Observable, type Subscription } from 'rxjs';
import type { Agent } from '../agent/agent.js';
import type { RunOptions } from '../agent/agent-options.js';
import { throttleDeltas } from '../../operators/throttle-deltas.js';
import { ConfigurationError, InvalidStateError } from '../types/errors.js';
import type { RunBudget } from '../types/limits.js';
import type { AgentEndEvent, AgentEvent, RunOutcome, SequencedEvent } from '../types/agent-events.js';
import { addUsage, EMPTY_USAGE } from '../types/usage.js';
import { canonicalJson, type Message } from '../types/messages.js';
import { toWireError, type WireError, type WireFrame } from '../wire/frames.js';
import { RunEventLogError, RunQueueError } from './errors.js';
import { storedFrames } from './read-run-events.js';
import { endedSql, lastSeqSql } from './run-events-schema.js';
import { queueInternals, type QueueInternals, type RunJobData, type RunQueue, type RunRow } from './run-queue.js';

/**
 * Builds the agent of a thread for one run (called once per run; the worker disposes the agent after it), told who
 * the run acts for: the principal stored with the run (`RunRequest.principal`), `undefined` for a run queued without
 * one. The run options carry it too, so hooks and tools see it as `ctx.principal`.
 */
export type AgentFactory = (threadId: string, principal?: Principal) => Agent | Promise<Agent>;

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  /** The queue to take runs from (`createRunQueue`). */
  readonly queue: RunQueue;
  /**
   * The agents this worker can run, by the name `enqueue({ agent })` gives. Each factory is called once per run and
   * must give the agent the thread's checkpointer and `threadId` (the worker restores the thread before every run, so
   * the agent sees what other workers stored). The worker disposes the agent when the run ends.
   */
  readonly agents: Readonly<Record<string, AgentFactory>>;
  /**
   * Runs at once in this process for each of its agents (default 4): a worker fetches each agent's runs on loops of
   * its own (pg-boss fetches one agent's runs at a time), so a worker with two agents runs up to `2 × concurrency`.
   */
  readonly concurrency?: number | undefined;
  /** Deltas merged per frame over this many milliseconds before they are appended (default 16; `throttleDeltas`). */
  readonly flushMs?: number | undefined;
  /** This worker's name in the runs table (default `host:pid:random`). */
  readonly workerId?: string | undefined;
  /** How often the worker looks for runs when no notification came (retries are found this way; default 1 s). */
  readonly pollSeconds?: number | undefined;
  /** Background failures (the cancel listener's connection lost and re-made); default `console.warn`. */
  readonly onError?: ((error: unknown) => void) | undefined;
  /**
   * The limit store the API nodes admit runs with (`createPostgresLimitStore`, the one given to
   * `createQueueServer({ limits: { store } })`): each run admitted under a principal's limits runs with its budget —
   * its spend (its sub-agents' included) charged to the principal as each model call ends, and the run cancelled
   * (its sub-agents with it) once the principal's `tokensPerMinute` or `usdPerDay` is reached. See docs/limits.md.
   */
  readonly limits?: RunBudgets | undefined;
}

/** Where a worker finds the budget of a run (`createPostgresLimitStore` is one). */
export interface RunBudgets {
  /** The run's budget, or `undefined` for a run admitted without limits. */
  budgetFor(runId: string): Promise<RunBudget | undefined>;
}

/** A running worker (`startWorker`). */
export interface RunWorker {
  readonly workerId: string;
  /** The ids of the runs it is running now. */
  readonly running: readonly string[];
  /**
   * Graceful shutdown (what `cubepi worker` does on SIGTERM): takes no new run, lets the running ones finish for
   * `graceMs` (default 30,000), then cancels the rest (their runs end `cancelled`, their closing events and terminal
   * frames stored, their jobs released) and stops listening. Resolves when nothing runs; idempotent.
   */
  stop(options?: { readonly graceMs?: number | undefined }): Promise<void>;
}

interface ActiveRun {
  readonly controller: AbortController;
  readonly done: Promise<void>;
  /** Set when the run is cancelled: why (a client's Stop, the shutdown). */
  cancelReason?: string;
}

/**
 * Starts a worker on `options.queue`: it takes up to `concurrency` runs at a time (a thread's runs one at a time, in
 * order), runs each on the agent the named factory builds, appends its events to the run-event log as they come
 * (deltas merged per `flushMs`), ends its stream with a terminal frame, records the outcome, and only then releases
 * the run's job. A run that suspends (an approval pending) ends like any other and frees the worker: answering it is
 * a new run (`enqueue({ respond })`). If this process dies, the run's job goes back to the queue after the heartbeat
 * and another worker resumes the thread from its checkpoint (see `docs/scale-out.md`, "Crash recovery").
 *
 * Rejects with `ConfigurationError` for bad options, `RunQueueError` when the queue cannot start.
 */
export async function startWorker(options: WorkerOptions): Promise<RunWorker> {
  if (typeof options !== 'object' || options === null) throw new ConfigurationError('startWorker: options needed');
  const internal = queueInternals(options.queue);
  const agents = options.agents;
  if (typeof agents !== 'object' || agents === null || Object.keys(agents).length === 0) {
    throw new ConfigurationError('startWorker: `agents` must name at least one agent factory');
  }
  for (const [name, factory] of Object.entries(agents)) {
    if (typeof factory !== 'function') throw new ConfigurationError(`startWorker: agents.${name} must be a function`);
  }
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw new ConfigurationError(`startWorker: concurrency must be a positive integer, got ${String(concurrency)}`);
  }
  const flushMs = options.flushMs ?? 16;
  if (!(typeof flushMs === 'number' && flushMs >= 0)) throw new ConfigurationError('startWorker: flushMs must be >= 0');
  const pollSeconds = options.pollSeconds ?? 1;
  if (!(typeof pollSeconds === 'number' && pollSeconds >= 0.5)) {
    throw new ConfigurationError('startWorker: pollSeconds must be at least 0.5');
  }
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  const onError = options.onError ?? ((error: unknown) => console.warn('cubepi worker:', error));

  const boss = await internal.boss();
  const active = new Map<string, ActiveRun>();
  const workIds: string[] = [];
  // A job was sent (pg-boss's NOTIFY, heard on the cancel listener's connection), or that connection came back (what
  // was sent meanwhile): every fetch loop fetches now instead of at its next poll.
  const wake = (): void => {
    for (const id of workIds) boss.notifyWorker(id);
  };
  const listener = new CancelListener(
    internal,
    (runId, reason) => cancelLocal(runId, reason),
    wake,
    // After a reconnect: the runs cancelled while it was away.
    async () => {
      const ids = [...active.keys()];
      if (ids.length === 0) return;
      const { rows } = await internal.pool.query<{ run_id: string }>(
        `SELECT run_id FROM ${internal.tables.runs} WHERE run_id = ANY($1) AND cancel_requested_at IS NOT NULL`,
        [ids],
      );
      for (const row of rows) cancelLocal(row.run_id, 'cancelled');
    },
    onError,
  );
  await listener.start();
  let stopping: Promise<void> | undefined;
  let shuttingDown = false;

  function cancelLocal(runId: string, reason: string): void {
    const run = active.get(runId);
    if (run === undefined || run.controller.signal.aborted) return;
    run.cancelReason = reason;
    run.controller.abort(new Error(reason));
  }

  const budgets = options.limits;
  if (budgets !== undefined && typeof (budgets as Partial<RunBudgets>).budgetFor !== 'function') {
    throw new ConfigurationError('startWorker: `limits` must be a limit store (createPostgresLimitStore)');
  }
  const runner = new RunExecutor(internal, agents, workerId, flushMs, budgets, onError);
  // One pg-boss fetch loop per slot (not one `work` with `localConcurrency`): a loop that finished a run is woken at
  // once to fetch again, instead of sleeping out the rest of its polling interval — which would cap a worker at
  // `concurrency / pollSeconds` short runs a second — and the thread's next run, unblocked by this run's end, is taken
  // by the loop that ended it. Each agent has its own loops: a run's job carries its agent's number as its priority,
  // and a loop fetches that one number only, so a worker never takes a run for an agent it lacks.
  const numbers = await Promise.all(Object.keys(agents).map((name) => internal.agentNumber(name)));
  for (const priority of numbers.flatMap((number) => Array.from({ length: concurrency }, () => number))) {
    let workId = '';
    workId = await boss.work(
      internal.queueName,
      {
        batchSize: 1,
        pollingIntervalSeconds: pollSeconds,
        notifyPollingIntervalSeconds: pollSeconds,
        includeMetadata: true, // the output of the attempt before: why it was lost
        minPriority: priority,
        maxPriority: priority,
      },
      async ([job]: JobWithMetadata<RunJobData>[]) => {
        if (job === undefined) return;
        const controller = new AbortController();
        let resolveDone!: () => void;
        const run: ActiveRun = { controller, done: new Promise<void>((resolve) => (resolveDone = resolve)) };
        active.set(job.data.runId, run);
        if (shuttingDown) cancelLocal(job.data.runId, SHUTDOWN);
        try {
          await runner.execute(job, run);
        } finally {
          active.delete(job.data.runId);
          resolveDone();
          if (!shuttingDown) boss.notifyWorker(workId);
        }
      },
    );
    workIds.push(workId);
  }
  const sweeper = new LostRunSweeper(internal, boss, runner, onError);
  // Runs an older version queued whose job was active then (its worker has died since): their retries get their
  // agent's number here.
  const relabelling = setInterval(() => void internal.relabelRuns().catch(onError), RELABEL_MS);
  relabelling.unref();
  const offWork = (wait: boolean) => Promise.all(workIds.map((id) => boss.offWork(internal.queueName, { id, wait })));

  return {
    workerId,
    get running() {
      return [...active.keys()];
    },
    stop(stopOptions = {}) {
      stopping ??= (async () => {
        const graceMs = stopOptions.graceMs ?? 30_000;
        // No new fetch from here on; a fetch already in flight may still hand over a job (it joins `active`).
        await offWork(false);
        clearInterval(relabelling);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const graceOver = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
        const idle = (async () => {
          while (active.size > 0) await Promise.all([...active.values()].map((run) => run.done));
        })();
        await Promise.race([idle, graceOver]);
        clearTimeout(timer);
        shuttingDown = true; // a job handed over from now on is cancelled as it starts
        for (const runId of active.keys()) cancelLocal(runId, SHUTDOWN);
        // Every handler has returned (pg-boss waits for its workers' loops), so every job is settled.
        await offWork(true);
        await sweeper.stop();
        await listener.stop();
      })();
      return stopping;
    },
  };
}

const SHUTDOWN = 'the worker is shutting down';
const RELABEL_MS = 30_000;

/** Runs one job: the run's first attempt, or its resumption after a worker died. @internal */
class RunExecutor {
  constructor(
    private readonly internal: QueueInternals,
    private readonly agents: Readonly<Record<string, AgentFactory>>,
    private readonly workerId: string,
    private readonly flushMs: number,
    private readonly budgets: RunBudgets | undefined,
    private readonly onError: (error: unknown) => void,
  ) {}

  async execute(job: JobWithMetadata<RunJobData>, run: ActiveRun): Promise<void> {
    const { runId, threadId, agent: agentName } = job.data;
    const { pool, tables } = this.internal;
    // The run's last stored seq comes back with the row (one round trip): where this attempt's frames start.
    const { rows } = await pool.query<RunRow & { last_seq: string }>(
      `UPDATE ${tables.runs} SET status = 'running', attempts = attempts + 1, worker = $2,
         started_at = coalesce(started_at, clock_timestamp())
       WHERE run_id = $1 AND status <> 'ended'
       RETURNING *, ${lastSeqSql(this.internal.logTables, '$1')} AS last_seq`,
      [runId, this.workerId],
    );
    const row = rows[0];
    if (row === undefined) {
      // Ended already (cancelled while queued, or by an earlier attempt): its stream may still lack its terminal
      // frame if the process that ended it died in between.
      await this.ensureTerminal(runId);
      return;
    }
    const lastSeq = Number(row.last_seq);
    if (row.cancel_requested_at !== null) {
      run.cancelReason = 'cancelled';
      run.controller.abort(new Error('cancelled'));
    }
    const leaseLost = job.signal;
    const onLeaseLost = () => run.controller.abort(new Error('the worker lost the run (its lease expired)'));
    leaseLost.addEventListener('abort', onLeaseLost, { once: true });
    try {
      if (job.retryCount >= this.internal.retryLimit && job.retryCount > 0) {
        // Its attempts were lost retryLimit times: end it rather than hold its thread's queue forever.
        await this.endWith(runId, lastSeq, 'error', lostError(runId, job.retryCount, job.output));
        return;
      }
      const factory = Object.hasOwn(this.agents, agentName) ? this.agents[agentName] : undefined;
      if (factory === undefined) {
        await this.endWith(runId, lastSeq, 'error', {
          name: 'ConfigurationError',
          message: `no agent named ${JSON.stringify(agentName)} on worker ${this.workerId}`,
          code: 'unknown_agent',
        });
        return;
      }
      let agent: Agent;
      try {
        agent = await factory(threadId, row.principal ?? undefined);
        if (typeof (agent as Partial<Agent> | undefined)?.restore !== 'function') {
          throw new TypeError(`it returned ${agent === null ? 'null' : typeof agent}, not an Agent`);
        }
      } catch (error) {
        // The application's own code failed: its error is the run's, not a lost worker's (and another worker, taking
        // the run at once, would most likely fail the same way).
        const cause = toWireError(error);
        await this.endWith(runId, lastSeq, 'error', {
          name: cause.name,
          message: `the agent factory ${JSON.stringify(agentName)} failed on worker ${this.workerId}: ${cause.message}`,
          code: 'agent_factory',
        });
        return;
      }
      try {
        await agent.restore();
        let baseCount = row.base_count;
        if (baseCount === null) {
          baseCount = agent.state.messages.length;
          await pool.query(`UPDATE ${tables.runs} SET base_count = $2 WHERE run_id = $1`, [runId, baseCount]);
        }
        const open = chooseRun(agent, row, baseCount);
        await this.stream(runId, lastSeq, open, run, leaseLost, row.attempts);
      } finally {
        await agent.dispose().catch(() => {});
      }
    } finally {
      leaseLost.removeEventListener('abort', onLeaseLost);
    }
  }

  /** Streams the run into the log, then its terminal frame and outcome. Throws (the job is retried) on a log failure. */
  private async stream(
    runId: string,
    lastSeq: number,
    open: ((agent: RunOptions) => Observable<AgentEvent>) | Finished,
    run: ActiveRun,
    leaseLost: AbortSignal,
    attempt: number,
  ): Promise<void> {
    const log = queueLog(this.internal, runId);
    // A worker before this one took the run and was lost: say so first, so a client does not sit in silence and
    // knows the open message is about to be replaced.
    const recovering: AgentEvent[] = attempt > 1 ? [{ type: 'run_recovering', runId, attempt }] : [];
    if (typeof open !== 'function') {
      // The run had reached its end; its stream may not have: close it from the checkpoint.
      const closing = [...recovering, ...(await this.closingEvents(runId, open.outcome, open.messages, open.pending))];
      const frames = closing.map((event, i): WireFrame => {
        const seq = lastSeq + i + 1;
        return { kind: 'event', seq, event: { ...event, seq } };
      });
      await this.endWith(runId, lastSeq + frames.length, open.outcome, undefined, frames);
      return;
    }
    // The principal's budget (docs/limits.md); a store that cannot say runs the run without it, reported.
    const budget = await this.budgets?.budgetFor(runId).catch((error: unknown) => {
      this.onError(error);
      return undefined;
    });
    let seq = lastSeq;
    let outcome: RunOutcome | 'error' = 'completed';
    let appendError: unknown;
    const appends: Promise<void>[] = [];
    // Frames wait here for the next flush: the first at once (a reader sees the run start without delay), then
    // what came within `flushMs` in one append; what is left at the end goes with the terminal frame.
    let buffered: WireFrame[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    let flushed = false;
    const flush = (): void => {
      clearTimeout(timer);
      timer = undefined;
      if (buffered.length === 0 || appendError !== undefined) return;
      const frames = buffered;
      buffered = [];
      flushed = true;
      appends.push(
        log.append(frames).catch((error: unknown) => {
          appendError ??= error;
          run.controller.abort(new Error('the run-event log refused an append'));
        }),
      );
    };
    let subscription: Subscription | undefined;
    const ended = await new Promise<{ error?: WireError }>((resolve) => {
      const runOptions: RunOptions = { signal: run.controller.signal, runId };
      subscription = concat(
        recovering,
        open(budget === undefined ? runOptions : { ...runOptions, limits: budget.limits }),
      )
        .pipe(
          throttleDeltas(this.flushMs),
          map((event, index): SequencedEvent => ({ ...event, seq: lastSeq + index + 1 })),
        )
        .subscribe({
          next: (event) => {
            if (appendError !== undefined) return;
            seq = event.seq;
            if (event.type === 'agent_end') outcome = event.outcome;
            buffered.push({ kind: 'event', seq: event.seq, event });
            if (!flushed) flush();
            else timer ??= setTimeout(flush, this.flushMs);
          },
          error: (error: unknown) => resolve({ error: toWireError(error) }),
          complete: () => resolve({}),
        });
    });
    subscription?.unsubscribe(); // closed already; for symmetry should the run be left early one day
    clearTimeout(timer);
    const notOurs = () => appendError !== undefined || (leaseLost.aborted && run.cancelReason === undefined);
    if (!notOurs()) {
      // The frames left, the terminal frame and the outcome: one statement (queued behind the appends in flight, and
      // refused unwritten if one of them fails).
      const rest = buffered;
      buffered = [];
      const last = appends.length;
      appends.push(
        ended.error !== undefined
          ? this.endWith(runId, seq, 'error', ended.error, rest)
          : this.endWith(runId, seq, outcome, undefined, rest),
      );
      // A failure of the appends before it is the run's loss (the end was refused behind it).
      await Promise.all(appends.slice(0, last));
    }
    if (notOurs()) {
      await Promise.allSettled(appends);
      // Not ours to end: the log refused us (another worker writes this run) or the lease is gone. The job is failed
      // and, while it has retries, resumed from the checkpoint by whichever worker takes it.
      throw appendError instanceof Error
        ? appendError
        : new RunQueueError('database', runId, `run ${runId}: the worker lost its lease`, appendError);
    }
    await Promise.all(appends);
    await budget?.release();
  }

  /**
   * The events that close a run whose messages are all stored but whose stream was cut (its worker died after the
   * checkpoint write, before the frames): `agent_start` (the resumption, as for any retried run), `message_start` and
   * `message_end` of each stored message of the run the stream lacks, and `agent_end` with the stored outcome.
   */
  private async closingEvents(
    runId: string,
    outcome: RunOutcome,
    messages: readonly Message[],
    pending: AgentEndEvent['pending'],
  ): Promise<AgentEvent[]> {
    const stored = await storedFrames(this.internal.pool, this.internal.logTables, runId);
    const streamed = new Set<string>();
    for (const { json, compact } of stored) {
      if (compact) continue;
      const event = JSON.parse(json) as AgentEvent;
      if (event.type === 'message_end') streamed.add(canonicalJson(event.message));
    }
    const events: AgentEvent[] = [{ type: 'agent_start', runId }];
    for (const message of messages) {
      if (streamed.has(canonicalJson(message))) continue; // key order aside (a JSONB store reorders keys)
      events.push({ type: 'message_start', runId, message }, { type: 'message_end', runId, message });
    }
    const usage = messages.reduce((sum, m) => (m.role === 'assistant' ? addUsage(sum, m.usage) : sum), EMPTY_USAGE);
    events.push({
      type: 'agent_end',
      runId,
      messages,
      outcome,
      usage,
      ...(pending !== undefined && pending.length > 0 ? { pending } : {}),
    });
    return events;
  }

  /**
   * Appends `frames` (the run's last events, up to `seq`) and the terminal frame after them, and records the outcome,
   * in one statement: a reader whose stream ended finds the run ended, and a process dying before it leaves the job
   * active with neither written (the worker that takes it again runs or closes the run).
   */
  private endWith(
    runId: string,
    seq: number,
    outcome: RunOutcome | 'error',
    error: WireError | undefined,
    frames: readonly WireFrame[] = [],
  ): Promise<void> {
    return this.internal.log.appendWith(runId, [...frames, terminalFrame(runId, seq + 1, outcome, error)], {
      sql: `UPDATE ${this.internal.tables.runs} SET status = 'ended', outcome = $9, error = $10,
              ended_at = clock_timestamp()
            WHERE run_id = $8 AND status <> 'ended'`,
      values: [runId, outcome, error === undefined ? null : JSON.stringify(error)],
    });
  }

  /**
   * Ends a run whose job failed for good (its last attempt lost: no worker will take it again) with `error`, unless
   * it had ended, and gives its stream its terminal frame.
   */
  async endLost(runId: string, error: WireError): Promise<void> {
    await this.internal.pool.query(
      `UPDATE ${this.internal.tables.runs} SET status = 'ended', outcome = 'error', error = $2,
         ended_at = clock_timestamp()
       WHERE run_id = $1 AND status <> 'ended'`,
      [runId, JSON.stringify(error)],
    );
    // A worker that lost the run may still be appending to it: its frames are taken until the terminal one.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.ensureTerminal(runId);
        return;
      } catch (failure) {
        if (!(failure instanceof RunEventLogError && failure.reason === 'seq_order') || attempt === 5) throw failure;
      }
    }
  }

  /** The terminal frame of an ended run whose stream lacks it. */
  private async ensureTerminal(runId: string): Promise<void> {
    const log = queueLog(this.internal, runId);
    if (await log.ended()) return;
    const { rows } = await this.internal.pool.query<RunRow>(
      `SELECT * FROM ${this.internal.tables.runs} WHERE run_id = $1`,
      [runId],
    );
    const row = rows[0];
    if (row === undefined || row.status !== 'ended') return;
    const frame = terminalFrame(runId, (await log.lastSeq()) + 1, row.outcome ?? 'completed', row.error ?? undefined);
    await log.append([frame]).catch((error: unknown) => {
      if (!(error instanceof RunEventLogError && error.reason === 'run_ended')) throw error;
    });
  }
}

/**
 * What this attempt runs. First attempt (nothing of the run stored yet: the thread has `baseCount` messages or fewer):
 * the request itself. After a worker died mid-run: the answer again if it was not stored; nothing if the run had
 * suspended or finished (its outcome); else `resume$` — the Agent's restore closed the interrupted tool calls
 * (`interrupted` results; approved idempotent calls run again).
 */
/** A run that had reached its end before its worker was lost: what its stream still needs. */
interface Finished {
  readonly outcome: RunOutcome;
  readonly messages: readonly Message[];
  readonly pending: AgentEndEvent['pending'];
}

function chooseRun(
  agent: Agent,
  row: RunRow,
  baseCount: number,
): ((options: RunOptions) => Observable<AgentEvent>) | Finished {
  const request = row.request;
  // Every run option of the run carries who it acts for (hooks and tools see it as ctx.principal).
  const as = (options: RunOptions): RunOptions =>
    row.principal === null ? options : { ...options, principal: row.principal };
  if (request.kind === 'respond') {
    if (agent.pending.some((pending) => pending.requestId === request.requestId)) {
      return (options) => agent.respond$(request.requestId, request.answer, as(options));
    }
    if (row.attempts <= 1) return (options) => agent.respond$(request.requestId, request.answer, as(options));
  } else if (agent.state.messages.length <= baseCount) {
    return (options) => agent.prompt$(request.input as string | Message | readonly Message[], as(options));
  }
  const messages = agent.state.messages.slice(baseCount);
  if (agent.pending.length > 0) return { outcome: 'suspended', messages, pending: agent.pending };
  const last = agent.state.messages.at(-1);
  if (last?.role === 'assistant' && last.stopReason !== 'toolUse') {
    // The run had reached its end before the worker was lost: its outcome is what its last answer says.
    const outcome =
      last.stopReason === 'aborted'
        ? 'cancelled'
        : last.stopReason === 'error'
          ? 'failed'
          : last.stopReason === 'blocked'
            ? 'stopped'
            : 'completed';
    return { outcome, messages, pending: undefined };
  }
  return (options) => resumeOrNothing(agent, as(options));
}

/** `resume$`, or an empty run when the history gives the model nothing to answer (InvalidStateError). */
function resumeOrNothing(agent: Agent, options: RunOptions): Observable<AgentEvent> {
  return defer(() => agent.resume$(options)).pipe(
    catchError((error: unknown) => (error instanceof InvalidStateError ? EMPTY : throwError(() => error))),
  );
}

function terminalFrame(
  runId: string,
  seq: number,
  outcome: RunOutcome | 'error',
  error: WireError | undefined,
): WireFrame {
  return outcome === 'error'
    ? { kind: 'error', seq, runId, error: error ?? { name: 'Error', message: 'the run failed' } }
    : { kind: 'end', seq, runId };
}

/** The log operations of one run. */
function queueLog(internal: QueueInternals, runId: string) {
  return {
    append: (frames: readonly WireFrame[]) => internal.log.appendRunEvents(runId, frames),
    lastSeq: () => internal.log.lastSeq(runId),
    ended: async () => {
      const { rows } = await internal.pool.query<{ ended: boolean }>(
        `SELECT ${endedSql(internal.logTables, '$1')} AS ended`,
        [runId],
      );
      return rows[0]?.ended === true;
    },
  };
}

/** The `worker_lost` error of a run whose attempts were lost `lost` times; `output`: pg-boss's record of the last. */
function lostError(runId: string, lost: number, output: unknown): WireError {
  const cause = lossOf(output);
  return {
    name: 'RunQueueError',
    message:
      `run ${runId} was not run again: ${lost} ${lost === 1 ? 'attempt was' : 'attempts were'} lost (a worker ` +
      `died or lost its lease, or PostgreSQL failed under it)${cause === undefined ? '' : `; the last: ${cause}`}`,
    code: 'worker_lost',
  };
}

/** The message of a failed attempt as pg-boss stores it (a thrown error, serialized; `{ value }` for a timeout). */
function lossOf(output: unknown): string | undefined {
  const stored = output as { message?: unknown; value?: { message?: unknown } } | null | undefined;
  if (typeof stored?.message === 'string') return stored.message;
  if (typeof stored?.value?.message === 'string') return stored.value.message;
  return undefined;
}

/**
 * Ends the runs whose jobs failed for good. pg-boss fails a job whose last retry was lost too (its worker died, or
 * its heartbeat or its handler failed with the database), and under `key_strict_fifo` a failed job holds every later
 * job of its key: without this, the run would never end and its thread would be blocked forever. Every
 * `superviseIntervalSeconds`, for each thread pg-boss reports blocked, it ends the failed job's run (`worker_lost`,
 * the loss's cause kept) with its terminal frame, then deletes the job, so the thread's next run is taken. Each step
 * is idempotent: several workers may sweep at once, and one dying in between leaves the job for the next pass.
 */
class LostRunSweeper {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pass: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly internal: QueueInternals,
    private readonly boss: PgBoss,
    private readonly runner: RunExecutor,
    private readonly onError: (error: unknown) => void,
  ) {
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.pass;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.pass = this.sweep()
        .catch((error: unknown) =>
          this.onError(new RunQueueError('database', '', 'looking for runs whose jobs failed failed', error)),
        )
        .finally(() => this.schedule());
    }, this.internal.superviseIntervalSeconds * 1000);
    this.timer.unref();
  }

  private async sweep(): Promise<void> {
    const { queueName } = this.internal;
    for (const threadId of await this.boss.getBlockedKeys(queueName)) {
      if (this.stopped) return;
      const job = await this.failedJob(threadId);
      if (job === undefined) continue;
      await this.runner.endLost(job.data.runId, lostError(job.data.runId, job.retryCount + 1, job.output));
      await this.boss.deleteJob(queueName, job.id);
    }
  }

  /**
   * The failed job of a blocked thread. A job's id is its run's: looked up by id for the run that started last (no
   * later run of the thread can have started once it failed) and the runs not ended; else among the thread's jobs.
   */
  private async failedJob(threadId: string): Promise<JobWithMetadata<RunJobData> | undefined> {
    const { pool, tables, queueName } = this.internal;
    const { rows } = await pool.query<{ run_id: string }>(
      `(SELECT run_id FROM ${tables.runs} WHERE thread_id = $1 AND started_at IS NOT NULL ORDER BY started_at DESC
        LIMIT 1)
       UNION (SELECT run_id FROM ${tables.runs} WHERE thread_id = $1 AND status <> 'ended' ORDER BY created_at
        LIMIT 10)`,
      [threadId],
    );
    for (const { run_id } of rows) {
      const [job] = await this.boss.findJobs<RunJobData>(queueName, { id: run_id });
      if (job?.state === 'failed') return job;
    }
    const jobs = await this.boss.findJobs<RunJobData>(queueName, { key: threadId, limit: 10_000 });
    return jobs.find((job) => job.state === 'failed');
  }
}

/**
 * The worker's one LISTEN connection: the queue's cancel channel, and pg-boss's job channel (pg-boss runs without a
 * listener of its own, see createRunQueue); re-made when it drops, then the runs cancelled meanwhile are checked and
 * the fetch loops woken.
 */
class CancelListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retry: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly internal: QueueInternals,
    private readonly cancel: (runId: string, reason: string) => void,
    private readonly wake: () => void,
    private readonly recheck: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  async start(reconnecting = false): Promise<void> {
    const client = new pg.Client(this.internal.connection);
    client.on('notification', (message) => {
      if (message.channel === this.internal.bossChannel) {
        if (message.payload === this.internal.queueName) this.wake();
        return;
      }
      try {
        const { runId, reason } = JSON.parse(message.payload ?? '{}') as { runId?: unknown; reason?: unknown };
        if (typeof runId === 'string') this.cancel(runId, typeof reason === 'string' ? reason : 'cancelled');
      } catch {
        // Not ours.
      }
    });
    client.on('error', (error) => {
      if (this.stopped || client !== this.client) return;
      this.onError(new RunQueueError('database', '', 'the cancel listener lost its connection; reconnecting', error));
      void client.end().catch(() => {});
      this.client = undefined;
      this.reconnect(0);
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.internal.tables.cancelChannel}"; LISTEN "${this.internal.bossChannel}"`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    this.client = client;
    if (this.stopped) await this.stop();
    else if (reconnecting) {
      this.wake();
      await this.recheck();
    }
  }

  /** Makes the connection again after a pause, and again (longer pauses) for as long as that fails. */
  private reconnect(failures: number): void {
    if (this.stopped) return;
    this.retry = setTimeout(
      () =>
        void this.start(true).catch((error: unknown) => {
          if (this.client !== undefined || this.stopped) {
            this.onError(error); // connected, but the check of the runs cancelled meanwhile failed
            return;
          }
          this.onError(new RunQueueError('database', '', 'the cancel listener could not reconnect', error));
          this.reconnect(failures + 1);
        }),
      Math.min(1000 * 2 ** failures, 10_000),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
