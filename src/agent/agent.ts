/**
 * The Agent facade: state, queues and runs around {@link runAgentLoop}.
 *
 * Its parts, each in its own file: the options and their validation (`agent-options.ts`), the state and its snapshots
 * (`agent-state.ts`), the steering and follow-up queues (`message-queues.ts`), the run lifecycle (`agent-runs.ts`)
 * and the link to a checkpointer (`checkpoint-session.ts`).
 * @module
 */
import { defer, EMPTY, lastValueFrom, Observable, switchMap } from 'rxjs';
import type { ApprovalAnswer, ApprovalRequest } from '../types/approval.js';
import { composeMiddleware, type MiddlewareDescription } from '../middleware/compose-middleware.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { ForkResult } from '../checkpoint/checkpointer.js';
import { AgentBusyError, ConfigurationError, InvalidInputError, InvalidStateError } from '../types/errors.js';
import type { InferOutput, OutputSpec } from '../types/output.js';
import type { AnyAgentTool } from '../types/tool.js';
import { isRecordOnly, type Message } from '../types/messages.js';
import { isPromiseLike } from '../types/is-promise-like.js';
import { stateFromStored } from '../types/apply-patch.js';
import {
  initialMessages,
  pickHooks,
  validateAgentOptions,
  type AgentOptions,
  type InputOptions,
  type RunOptions,
} from './agent-options.js';
import { busy, AgentRuns, type RunInput } from './agent-runs.js';
import { Approvals } from './approvals.js';
import { AgentStateStore, type AgentState } from './agent-state.js';
import { CheckpointSession } from './checkpoint-session.js';
import { AwaitedListener } from './awaited-listener.js';
import { EventHub } from './event-hub.js';
import { toMessage, toMessages, type InputLimits } from './input.js';
import { MessageQueues } from './message-queues.js';
import { resolveModel } from './resolve-model.js';
import { registerProfile } from '../loop/agent-profile.js';
import { forkThreadId, retryPrompts, type AgentForkOptions, type RetryFromOptions } from './retry-from.js';
import { spendBoundOf } from '../loop/run-ledger.js';
import { checkIdempotencyKey } from './input-keys.js';
import { randomRunId } from '../loop/run-agent-loop.js';
import { validateTools } from '../loop/run-settings.js';
import { finalToolClash, outputPlanOf, strictCheck } from '../loop/output-plan.js';

/**
 * A listener for {@link Agent.subscribe}; a returned Promise is not awaited (its rejection is reported), unless the
 * listener is subscribed with `{ await: true }`.
 */
export type AgentListener = (event: AgentEvent) => void | PromiseLike<void>;

/** Options of {@link Agent.subscribe}. */
export interface SubscribeOptions {
  /**
   * Await the listener's Promise: events in order, each after the previous call settled, from a queue of its own; a
   * run's Promise settles only after the listener handled the run's events (default `false`: called synchronously,
   * not awaited).
   */
  readonly await?: boolean | undefined;
}

/**
 * A stateful agent: a provider, a model, tools and hooks, a transcript, and at most one run at a time.
 *
 * - `prompt(input)` starts a run and resolves with the messages it added (it resolves, not rejects, when the model
 *   call fails or the run is cancelled: the last message says why); `prompt$(input)` is the same run as a cold
 *   Observable of its events, cancelled by unsubscribing.
 * - `events$` is **hot**: every event of every run, for as long as the agent lives. `subscribe(listener)` is
 *   `events$.subscribe` with listener errors caught and reported.
 * - `steer(msg)` injects a message before the next model call of the active run; `followUp(msg)` runs when the run
 *   would otherwise end.
 * - With a checkpointer, `fork()` branches the thread and `retryFrom(seq, input?)` edits and resends from a message;
 *   both move the agent to the new thread (`threadId`), leaving the old one as it was.
 * - `abort()`, unsubscribing from `prompt$`, a run's `signal` or deadline all cancel the same way: the provider request
 *   is aborted, running tools see their signal fire, unanswered tool calls get `aborted` results, an assistant message
 *   with `stopReason: 'aborted'` closes the transcript and `agent_end` reaches `events$`.
 *
 * @example
 * const agent = new Agent({ provider: new FauxProvider({ responses: [fauxMessage('Hi!')] }), model: 'faux' });
 * agent.subscribe((event) => console.log(event.type));
 * const added = await agent.prompt('Hello');
 */
export class Agent {
  /** The `name` option: how handoffs and events name this agent (docs/handoffs.md). */
  readonly name: string | undefined;
  /** Every event of every run (hot). */
  readonly events$: Observable<AgentEvent>;
  /** The current state, then every change (BehaviorSubject semantics). */
  readonly state$: Observable<AgentState>;

  private readonly events = new EventHub<AgentEvent>();
  /** The listeners subscribed with `{ await: true }`. */
  private readonly awaited = new Set<AwaitedListener>();
  private readonly store: AgentStateStore;
  private readonly queues: MessageQueues;
  private readonly runs: AgentRuns;
  /** The thread, when the agent has a checkpointer. */
  private readonly session: CheckpointSession | undefined;
  private readonly describedMiddleware: MiddlewareDescription;
  private readonly approvals: Approvals;
  private readonly reportListenerError: (error: unknown, event: AgentEvent) => void;
  /** What a prompt, steering or follow-up message may hold (`maxFileBytes`). */
  private readonly limits: InputLimits;
  /** What `dispose()` closes, in registration order (closed in reverse). */
  private readonly closers: (() => void | PromiseLike<void>)[] = [];
  private disposing: Promise<void> | undefined;

  constructor(options: AgentOptions) {
    validateAgentOptions(options);
    this.limits = { maxFileBytes: options.maxFileBytes };
    const model = resolveModel(options.model, options.provider);
    if (options.output !== undefined) {
      // A schema the model's strict native mode cannot express is a configuration mistake: said now, with its path.
      const plan = outputPlanOf(options.output);
      const problem = strictCheck(plan, model) ?? finalToolClash(plan, options.tools);
      if (problem !== undefined) throw new ConfigurationError(`Agent: \`output\`: ${problem}`);
    }
    this.store = new AgentStateStore({
      systemPrompt: options.systemPrompt ?? '',
      model,
      tools: [...(options.tools ?? [])],
      messages: initialMessages(options),
      state: stateFromStored(options.extra ?? {}, undefined),
    });
    const middleware = composeMiddleware(options.middleware ?? [], pickHooks(options));
    this.name = options.name;
    registerProfile(this, () => ({
      name: options.name,
      provider: options.provider,
      model: this.store.model,
      systemPrompt: this.store.systemPrompt,
      getTools: () => this.store.tools,
      middleware,
    }));
    this.describedMiddleware = middleware.description;
    this.queues = new MessageQueues(options);
    this.session =
      options.checkpointer === undefined
        ? undefined
        : new CheckpointSession(options.checkpointer, options.threadId!, this.store);
    this.runs = new AgentRuns({
      provider: options.provider,
      options,
      middleware,
      store: this.store,
      queues: this.queues,
      events: this.events,
      session: this.session,
      budget: spendBoundOf(options.middleware ?? []),
      awaited: this.awaited,
      owner: this,
    });
    this.approvals = new Approvals({
      store: this.store,
      session: this.session,
      isBusy: () => this.runs.busy,
      restore: () => this.restore(),
    });
    this.reportListenerError =
      options.onListenerError ??
      ((error, event) => console.error(`cubepi: a listener threw on a ${event.type} event (the run goes on):`, error));
    this.events$ = this.events.observable;
    this.state$ = new Observable<AgentState>((subscriber) => {
      subscriber.next(this.state);
      return this.store.changes.add({ next: () => subscriber.next(this.state) });
    });
  }

  /**
   * The thread the agent works on: the `threadId` option until {@link fork} or {@link retryFrom} moves the agent to a
   * fork. `undefined` without a checkpointer.
   */
  get threadId(): string | undefined {
    return this.session?.threadId;
  }

  /** The current state (a snapshot; cheap to read repeatedly). */
  get state(): AgentState {
    return this.store.state;
  }

  /**
   * Starts a run with `input` (a string, a message, or messages) and resolves with the messages it added when it
   * ends. Rejects with {@link AgentBusyError} while a run is active, {@link InvalidInputError} for bad input, and with
   * a `HookError` when a hook failed.
   *
   * With `options.output` (a schema), it resolves to the run's answer as a value of the schema, typed (see
   * docs/output.md), and rejects with an `OutputError` when the run ended without one.
   */
  prompt<S extends OutputSpec>(
    input: string | Message | readonly Message[],
    options: RunOptions & { readonly output: S },
  ): Promise<InferOutput<S>>;
  prompt(input: string | Message | readonly Message[], options?: RunOptions): Promise<Message[]>;
  prompt(input: string | Message | readonly Message[], options?: RunOptions): Promise<unknown> {
    return this.runs.toPromise<unknown>(() => {
      const prompts = toMessages(input, 'prompt', this.limits);
      return this.runs.start(() => this.runInput(prompts, 'prompt'), options, undefined);
    });
  }

  /** The run of {@link prompt} as a cold Observable: subscribing starts it, unsubscribing cancels it. */
  prompt$(input: string | Message | readonly Message[], options?: RunOptions): Observable<AgentEvent> {
    return this.runs.toObservable(() => {
      const prompts = toMessages(input, 'prompt$', this.limits);
      return () => this.runInput(prompts, 'prompt$');
    }, options);
  }

  /**
   * Continues from the current history without a new prompt: valid when the last message is a user or tool result
   * message, or when it is an assistant message and a steering or follow-up message is queued (steering first).
   * Record-only answers at the end (failed, cancelled, blocked, or closed as lost by `cubepi/server`: see
   * `isRecordOnly`) do not count, since the model never sees them: after one, resuming asks for that answer again
   * (they stay stored). Rejects with {@link InvalidStateError} otherwise (and on an empty history), calling no model.
   *
   * With `options.output`, it resolves to the typed answer and rejects with an `OutputError`, as `prompt()` does.
   */
  resume<S extends OutputSpec>(options: RunOptions & { readonly output: S }): Promise<InferOutput<S>>;
  resume(options?: RunOptions): Promise<Message[]>;
  resume(options?: RunOptions): Promise<unknown> {
    return this.runs.toPromise<unknown>(() => this.runs.start(() => this.resumeInput(), options, undefined));
  }

  /** The run of {@link resume} as a cold Observable. */
  resume$(options?: RunOptions): Observable<AgentEvent> {
    return this.runs.toObservable(() => () => this.resumeInput(), options);
  }

  /**
   * Forks the agent's thread (see `Checkpointer.fork`) at `atSeq` (default: its whole history) into `newThreadId`
   * (default: a random UUID), then **moves the agent to the fork**: its history becomes the fork's (loaded from the
   * store: messages `[0, atSeq)`, and the run state and approvals in the parent's `extra`, approvals only if their
   * batch is still open at the cut-off), and its next runs write the fork. The parent thread stays as it was; to go on
   * with it, use another `Agent` with its `threadId`. Queued steering and follow-up messages stay queued.
   *
   * Resolves with the fork's `{ threadId, seq }` once the agent holds the fork. Rejects with {@link AgentBusyError}
   * during a run, {@link InvalidStateError} without a checkpointer or when it has no `fork`, and the checkpointer's
   * typed errors (`InvalidInputError` for an `atSeq` past the end, `ThreadConflictError` for a taken `newThreadId`):
   * then the agent stays on its thread. If the fork was made but loading it failed, the agent is on the fork and its
   * next run loads it again.
   *
   * @example
   * const { threadId } = await agent.fork({ atSeq: 4 });   // a branch from message 4 on
   * await agent.prompt('Try the other approach instead');   // written to the branch
   */
  async fork(options: AgentForkOptions = {}): Promise<ForkResult> {
    const session = this.forkingSession('fork');
    const newThreadId = forkThreadId(options.newThreadId);
    if (options.atSeq !== undefined && (!Number.isSafeInteger(options.atSeq) || options.atSeq < 0)) {
      throw new InvalidInputError(`fork(): atSeq must be a non-negative integer, got ${String(options.atSeq)}`);
    }
    if (this.runs.busy) throw busy('fork');
    this.runs.forking = true;
    try {
      await lastValueFrom(session.restore$(), { defaultValue: undefined });
      const result = await session.fork(options.atSeq ?? session.storedSeq, newThreadId);
      await lastValueFrom(session.restore$(), { defaultValue: undefined });
      return result;
    } finally {
      this.runs.forking = false;
    }
  }

  /**
   * "Edit and resend": forks the thread just before message `seq` (it keeps `[0, seq)`), moves the agent to the fork
   * (as {@link fork} does) and runs from there, resolving like `prompt()`. When message `seq` is a user message, the
   * run sends `input` in its place, or the same message again when `input` is omitted. When it is an assistant
   * message, the run asks the model again for that answer (`input` is refused). The original thread is unchanged.
   *
   * Rejects with {@link InvalidInputError} for a `seq` that names no message or names a tool result, with
   * {@link InvalidStateError} without a checkpointer that has `fork`, with {@link AgentBusyError} during a run, and
   * like `prompt()` otherwise. Nothing is forked when the retry is refused. With `options.output`, it resolves to the
   * typed answer, as `prompt()` does.
   */
  retryFrom<S extends OutputSpec>(
    seq: number,
    input: string | Message | readonly Message[] | undefined,
    options: RunOptions & RetryFromOptions & { readonly output: S },
  ): Promise<InferOutput<S>>;
  retryFrom(
    seq: number,
    input?: string | Message | readonly Message[],
    options?: RunOptions & RetryFromOptions,
  ): Promise<Message[]>;
  retryFrom(
    seq: number,
    input?: string | Message | readonly Message[],
    options?: RunOptions & RetryFromOptions,
  ): Promise<unknown> {
    return this.runs.toPromise<unknown>(() => {
      const retry = this.retry(seq, input, options);
      return this.runs.start(retry.input, options, undefined, retry.before);
    });
  }

  /**
   * {@link retryFrom} as a cold Observable of the run's events: subscribing forks and starts the run, unsubscribing
   * cancels it. Unsubscribing while the fork is being written does not undo it: the agent is then on the fork, and the
   * run ends as cancelled.
   */
  retryFrom$(
    seq: number,
    input?: string | Message | readonly Message[],
    options?: RunOptions & RetryFromOptions,
  ): Observable<AgentEvent> {
    return defer(() => {
      const retry = this.retry(seq, input, options);
      return this.runs.toObservable(() => retry.input, options, retry.before);
    });
  }

  /**
   * The approval requests a suspended run waits for (a `pause` decision, e.g. a `ToolGuard` asking), unanswered. Also
   * after a restart: `restore()` (or the first run) loads them from the checkpointer.
   */
  get pending(): readonly ApprovalRequest[] {
    return this.store.pending;
  }

  /**
   * Answers an approval request: `{ approve: true }`, `{ deny: reason }` (the model is told the reason; the call's
   * outcome is `denied`), or `{ edit: args }` (run with these arguments, validated against the tool's schema first).
   * The answer is stored (with a checkpointer, before anything runs). When it is the last open request of the batch,
   * the run resumes: approved calls run, denied ones get their denial, calls that already finished are not run again,
   * and the loop goes on; the Promise resolves like `prompt()`'s, with the messages the resumed run added. Otherwise it
   * resolves with `[]`.
   *
   * Rejects with {@link StaleApprovalError} for an unknown or already answered request, {@link InvalidInputError} for
   * a malformed answer or edited arguments that fail validation (the request stays open), {@link AgentBusyError}
   * during a run, and the checkpointer's typed error when the answer cannot be stored (nothing runs).
   *
   * The resumed run takes `options.output`, else the agent's `output` (the output a suspended run was given for
   * itself is not kept with it). With `options.output`, the resumed run resolves to the typed answer, as `prompt()`
   * does; an answer that does not complete the batch then resolves `undefined`.
   *
   * With `options.idempotencyKey`, the key is stored with the answer (in the same write), with the id of the run it
   * resumes when it completes the batch: an answer given again with the key — here or by another Agent on the thread —
   * is refused with `DuplicateInputError` carrying that run's id, before the request is looked at.
   */
  respond<S extends OutputSpec>(
    requestId: string,
    answer: ApprovalAnswer,
    options: RunOptions & { readonly output: S },
  ): Promise<InferOutput<S> | undefined>;
  respond(requestId: string, answer: ApprovalAnswer, options?: RunOptions): Promise<Message[]>;
  async respond(requestId: string, answer: ApprovalAnswer, options?: RunOptions): Promise<unknown> {
    const keyed = this.keyedAnswer(options);
    const complete = await this.approvals.answer(requestId, answer, keyed?.record);
    if (!complete) return options?.output !== undefined ? undefined : [];
    return this.runs.toPromise<unknown>(() =>
      this.runs.start(
        () => this.resumeInput(),
        keyed?.options ?? options,
        undefined,
        undefined,
        keyed?.record.idempotencyKey,
      ),
    );
  }

  /**
   * {@link respond} as a cold Observable: subscribing records the answer; when it completes the batch, the resumed
   * run's events follow (unsubscribing cancels that run); otherwise it completes with no event.
   */
  respond$(requestId: string, answer: ApprovalAnswer, options?: RunOptions): Observable<AgentEvent> {
    return defer(() => {
      const keyed = this.keyedAnswer(options);
      return defer(() => this.approvals.answer(requestId, answer, keyed?.record)).pipe(
        switchMap((complete) =>
          complete
            ? this.runs.toObservable(
                () => () => this.resumeInput(),
                keyed?.options ?? options,
                undefined,
                keyed?.record.idempotencyKey,
              )
            : EMPTY,
        ),
      );
    });
  }

  /**
   * For an answer with an idempotency key: the key with the id of the run the answer resumes (known now, so it is
   * stored with the answer), and that run's options (the key is the answer's, so the run does not take it again).
   */
  private keyedAnswer(
    options: RunOptions | undefined,
  ): { record: { idempotencyKey: string; runId: string }; options: RunOptions } | undefined {
    const key = options?.idempotencyKey;
    if (key === undefined) return undefined;
    checkIdempotencyKey(key, 'respond()');
    const runId = options!.runId ?? randomRunId();
    return { record: { idempotencyKey: key, runId }, options: { ...options, idempotencyKey: undefined, runId } };
  }

  /**
   * Ends a suspended run without its approvals: every call of the batch still without a result gets an `aborted`
   * result, a closing assistant message (`stopReason: 'aborted'`, `errorMessage` with `reason`) ends the transcript,
   * and the run's outcome is `cancelled`. Rejects with {@link InvalidStateError} when no run is suspended.
   */
  async abortPending(reason = 'the pending approvals were aborted', options?: RunOptions): Promise<Message[]> {
    await this.approvals.ready();
    return this.runs.toPromise(() =>
      this.runs.start(() => ({ prompts: [], resume: this.approvals.batch(reason) }), options, undefined),
    );
  }

  /**
   * Queues a message for the active run, injected after the current tool batch and before the next model call (or
   * before the first model call of the next run when idle). Returns an id for {@link cancelSteer}.
   *
   * With `options.idempotencyKey`, a key the agent has taken is refused with `DuplicateInputError` (nothing is
   * queued); the message carries the key in its metadata (`cubepi:input`, with the id of the run that takes it), and
   * that run emits `input_committed` once it is stored. Keys stored by another process are known once the thread is
   * restored (`restore()`, or a run).
   */
  steer(message: string | Message, options?: InputOptions): string {
    const checked = toMessage(message, 'steer', this.limits);
    const key = options?.idempotencyKey;
    if (key === undefined) return this.queues.steer(checked);
    this.holdKey(key, 'steer()');
    return this.queues.steer(checked, key);
  }

  /**
   * Restores the thread from the checkpointer now (the first run does it anyway): its messages, `extra` and `seq`.
   * A tool batch the process did not finish (a crash) is closed first: each unanswered call gets an `interrupted`
   * error result, appended to the thread. Resolves at once without a checkpointer or when already restored. A restore
   * in flight is joined, not repeated: a run started before it settles waits for the same load. Rejects with the
   * checkpointer's typed error; with {@link AgentBusyError} during a run.
   */
  restore(): Promise<void> {
    if (this.runs.busy) return Promise.reject(busy('restore'));
    const session = this.session;
    return session === undefined ? Promise.resolve() : lastValueFrom(session.restore$(), { defaultValue: undefined });
  }

  /**
   * How each hook is composed: per hook, its rule, the middlewares that run in order, and those that implement it
   * but do not run (earlier `convertToLlm`s; every middleware's version of a hook given directly in the options).
   *
   * @example
   * agent.describeMiddleware().beforeToolCall.runs // ['RateLimiter', 'SafetyFilter', 'AuditLogger']
   */
  describeMiddleware(): MiddlewareDescription {
    return this.describedMiddleware;
  }

  /**
   * Replaces the agent's tools (validated as the `tools` option is: {@link InvalidInputError} otherwise). Allowed
   * during a run: the run reads its tools at the start of each turn, so the change takes effect at its next model call,
   * and a tool batch already started keeps the tools it started with. (`syncMcpTools` in `cubepi/mcp` calls it when an
   * MCP server's tool list changes.)
   *
   * @example
   * agent.setTools([...agent.state.tools, weather]);
   */
  setTools(tools: readonly AnyAgentTool[]): void {
    validateTools(tools, (what) => {
      throw new InvalidInputError(`setTools(): ${what}`);
    });
    this.store.tools = [...tools];
    this.store.changed();
  }

  /**
   * Registers `close` to run when the agent is disposed ({@link dispose}): for what the agent owns and must release — an
   * MCP server's connection, a database pool. Closers run in reverse order of registration. Returns a function that
   * unregisters it. Throws {@link InvalidStateError} once the agent is disposed.
   */
  onDispose(close: () => void | PromiseLike<void>): () => void {
    if (this.disposing !== undefined) throw new InvalidStateError('onDispose(): the agent is disposed');
    this.closers.push(close);
    return () => {
      const index = this.closers.indexOf(close);
      if (index >= 0) this.closers.splice(index, 1);
    };
  }

  /**
   * Disposes the agent: the active run is cancelled (reason `the agent was disposed`) and awaited, then every closer
   * registered with {@link onDispose} runs (in reverse order; each runs even when an earlier one fails), and no run
   * starts any more (`prompt()` rejects with {@link InvalidStateError}). Idempotent: later calls return the same
   * Promise. Rejects with the first closer's failure (an `AggregateError` when several failed), after all have run.
   * Where the runtime has `Symbol.asyncDispose` (Node.js 20+), `agent[Symbol.asyncDispose]()` is the same, so `await
   * using agent = …` disposes it at the end of the block.
   */
  dispose(): Promise<void> {
    this.disposing ??= this.disposeNow();
    return this.disposing;
  }

  private async disposeNow(): Promise<void> {
    this.runs.disposed = true;
    this.runs.abort('the agent was disposed');
    await this.runs.waitForIdle();
    const failures: unknown[] = [];
    for (const close of this.closers.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, 'dispose(): several closers failed');
  }

  /** Removes a queued steering message; returns whether it was still queued. */
  cancelSteer(id: string): boolean {
    const removed = this.queues.cancelSteer(id);
    if (removed?.key !== undefined) this.store.inputs.release(removed.key);
    return removed !== undefined;
  }

  /**
   * Queues a message to continue the run when it would otherwise end (after steering is empty). With
   * `options.idempotencyKey`, as {@link steer}.
   */
  followUp(message: string | Message, options?: InputOptions): void {
    const checked = toMessage(message, 'followUp', this.limits);
    const key = options?.idempotencyKey;
    if (key === undefined) return this.queues.followUp(checked);
    this.holdKey(key, 'followUp()');
    this.queues.followUp(checked, key);
  }

  /** Takes `key` for a queued message: refused when taken already. */
  private holdKey(key: string, where: string): void {
    checkIdempotencyKey(key, where);
    this.store.inputs.check(key);
    this.store.inputs.hold(key, undefined);
  }

  /** Cancels the active run (no-op when idle). `reason` is added to the closing message's `errorMessage`. */
  abort(reason?: string): void {
    this.runs.abort(reason);
  }

  /** Resolves when no run is active. */
  waitForIdle(): Promise<void> {
    return this.runs.waitForIdle();
  }

  /**
   * Clears the transcript, `errorMessage`, streaming state, pending tool calls, both queues and the approvals of a
   * suspended run (with a checkpointer, the next run restores the thread, approvals included); keeps the
   * configuration and the run state. Throws {@link AgentBusyError} while a run is active.
   */
  reset(): void {
    if (this.runs.busy) throw new AgentBusyError('reset(): a run is active; abort() it and waitForIdle() first');
    this.store.reset();
    this.queues.clear();
    // The thread is still stored: with a checkpointer, the next run restores it again (memory and store agree).
    this.session?.invalidate();
    this.store.changed();
  }

  /**
   * Calls `listener` with every event of every run, synchronously, in subscription order. An error it throws (or a
   * rejection of the Promise it returns) goes to `onListenerError` and never ends the run. Returns the unsubscribe
   * function.
   *
   * With `{ await: true }` the listener's Promise is awaited (seed 004: "Subscriber … 可以是同步或异步函数"): it gets
   * the events in order, each after the previous call's Promise settled, from a queue of its own (the run, `events$`
   * and the other listeners never wait for it; its first call of a burst runs in a microtask, not inside the
   * delivery). The Promise of a run started while it is subscribed (`prompt()`, `resume()`, `respond()`,
   * `retryFrom()`, `abortPending()`) settles — as the run did — only once it handled every event of the run, the
   * run's `agent_end` included; `prompt$()` and `events$` are unchanged. A throw or a rejection goes to
   * `onListenerError` with its event, and the queue goes on with the next event. Unsubscribing drops the events still
   * queued (a call in flight finishes on its own) and releases the run Promises waiting for it.
   *
   * Throws {@link InvalidInputError} when `options.await` is not a boolean, or is `true` for a `listener` that is not a
   * function.
   *
   * @example
   * agent.subscribe(async (event) => { await auditLog.write(event); }, { await: true });
   * await agent.prompt('hi'); // the audit log holds every event of the run, agent_end last
   */
  subscribe(listener: AgentListener, options?: SubscribeOptions): () => void {
    const wait = options?.await;
    if (wait !== undefined && typeof wait !== 'boolean') {
      throw new InvalidInputError('subscribe(): options.await must be a boolean');
    }
    if (wait === true) {
      if (typeof listener !== 'function') throw new InvalidInputError('subscribe(): the listener must be a function');
      const awaited = new AwaitedListener(listener, this.reportListenerError);
      this.awaited.add(awaited);
      const remove = this.events.add(awaited);
      return () => {
        remove();
        this.awaited.delete(awaited);
        awaited.close();
      };
    }
    return this.events.add({
      next: (event) => {
        try {
          const returned = listener(event);
          if (isPromiseLike(returned))
            returned.then(undefined, (error: unknown) => this.reportListenerError(error, event));
        } catch (error) {
          this.reportListenerError(error, event);
        }
      },
    });
  }

  /** The session of an agent that can fork, or a typed refusal. */
  private forkingSession(method: string): CheckpointSession {
    const session = this.session;
    if (session === undefined) throw new InvalidStateError(`${method}(): the agent has no checkpointer to fork`);
    if (!session.canFork) {
      throw new InvalidStateError(`${method}(): the checkpointer does not implement fork()`);
    }
    return session;
  }

  /**
   * A retry from message `seq`: the fork (run first, the run already active) and the run's input. Arguments are
   * checked now; `seq` against the restored history, before anything is forked.
   */
  private retry(
    seq: number,
    input: string | Message | readonly Message[] | undefined,
    options: RetryFromOptions | undefined,
  ): { before: () => Promise<void>; input: () => RunInput } {
    const session = this.forkingSession('retryFrom');
    const edited = input === undefined ? undefined : toMessages(input, 'retryFrom', this.limits);
    const newThreadId = forkThreadId(options?.newThreadId);
    let prompts: Message[] = [];
    return {
      before: async () => {
        await lastValueFrom(session.restore$(), { defaultValue: undefined });
        prompts = retryPrompts(this.store.messages, seq, edited);
        await session.fork(seq, newThreadId);
      },
      input: () => this.runInput(prompts, 'retryFrom'),
    };
  }

  /** The input of a run opened by prompts: the suspended batch first, if its answers are all in. */
  private runInput(prompts: Message[], method: string): RunInput {
    if (this.store.approvals === undefined) return { prompts };
    this.approvals.checkComplete(method);
    return { prompts, resume: this.approvals.batch() };
  }

  /** The input of `resume()`: the suspended batch if its answers are all in, else the history's next step. */
  private resumeInput(): RunInput {
    if (this.store.approvals !== undefined) return this.runInput([], 'resume');
    return { prompts: this.resumePrompts() };
  }

  private resumePrompts(): Message[] {
    const messages = this.store.messages;
    if (messages.length === 0) throw new InvalidStateError('resume(): the history is empty; use prompt()');
    // A failed, cancelled, blocked or lost answer is record-only (the model never sees it): what the model sees ends
    // before it, so resuming asks for that answer again.
    const last = messages.findLast((message) => message.role !== 'assistant' || !isRecordOnly(message));
    if (last === undefined)
      throw new InvalidStateError('resume(): the history holds only failed answers; use prompt()');
    if (last.role !== 'assistant') return [];
    if (this.queues.hasSteering) return []; // the loop drains steering before its first model call
    const followUps = this.queues.takeFollowUps();
    if (followUps.length > 0) return followUps;
    throw new InvalidStateError(
      'resume(): the last message is an assistant message and no steering or follow-up message is queued',
    );
  }
}

// `await using agent = new Agent(…)` where the runtime has the symbol (declared here rather than in the class so that
// the published types do not need the `esnext.disposable` lib).
const asyncDispose = (Symbol as { asyncDispose?: symbol }).asyncDispose;
if (asyncDispose !== undefined) {
  Object.defineProperty(Agent.prototype, asyncDispose, {
    value(this: Agent) {
      return this.dispose();
    },
    writable: true,
    configurable: true,
  });
}
