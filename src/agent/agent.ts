/**
 * The Agent facade: state, queues and runs around {@link runAgentLoop}.
 * @module
 */
import { defer, lastValueFrom, Observable, of, switchMap, type Observer, type Subscriber } from 'rxjs';
import { appendToCheckpoint } from '../../operators/append-to-checkpoint.js';
import type { Checkpointer } from '../checkpoint/checkpointer.js';
import { threadIdProblem } from '../checkpoint/check-arguments.js';
import {
  composeMiddleware,
  EXPLICIT_HOOKS_NAME,
  type ComposedMiddleware,
  type MiddlewareDescription,
} from '../middleware/compose-middleware.js';
import { HOOK_NAMES, type AgentHooks, type Middleware } from '../middleware/types.js';
import type { AgentEvent } from '../types/agent-events.js';
import {
  AgentBusyError,
  CheckpointError,
  ConfigurationError,
  errorMessageOf,
  InvalidInputError,
  InvalidStateError,
  RunAbortedError,
  ThreadConflictError,
} from '../types/errors.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { AnyAgentTool } from '../types/tool.js';
import { findModel } from '../providers/model-table.js';
import { isPromiseLike } from './drive.js';
import { checkMessage, toMessage, toMessages } from './input.js';
import { EventHub } from './event-hub.js';
import { interruptedToolResults } from './interrupted-tool-results.js';
import { runAgentLoopOn, startAgentLoop, type RunAgentLoopOptions } from './run-agent-loop.js';
import { validateRunSettings, type RunSettings } from './run-settings.js';

/** How a queue hands messages to the loop: one per model call, or all at once. */
export type QueueMode = 'one-at-a-time' | 'all';

/** Options of the {@link Agent} constructor; the seven hooks may be given directly. */
export interface AgentOptions extends AgentHooks, RunSettings {
  readonly provider: Provider;
  /**
   * Middlewares, composed hook by hook, each hook by its rule (docs/middleware.md). A hook given directly in these
   * options replaces every middleware's version of it.
   */
  readonly middleware?: readonly Middleware[];
  /** A model, or a model id served by `provider`. */
  readonly model: Model | string;
  /** The transcript to start from. */
  readonly messages?: readonly Message[];
  /** How queued steering messages go in (default `one-at-a-time`). */
  readonly steeringMode?: QueueMode;
  /** How queued follow-ups go in (default `one-at-a-time`). */
  readonly followUpMode?: QueueMode;
  /** Where errors thrown by `subscribe()` listeners go (default: `console.error`). They never end a run. */
  readonly onListenerError?: (error: unknown, event: AgentEvent) => void;
  /**
   * Makes the conversation durable (with `threadId`): the thread is restored before the first run, and every message
   * is appended before its `message_end` reaches anyone (see docs/checkpointing.md).
   */
  readonly checkpointer?: Checkpointer;
}

/** Per-run options of `prompt`, `prompt$`, `resume` and `resume$`. */
export interface RunOptions {
  /** Aborting it cancels the run like `abort()` does (reason `signal`). */
  readonly signal?: AbortSignal;
  /** Cancels the run this many milliseconds after it starts (overrides the agent's `deadlineMs`). */
  readonly deadlineMs?: number;
}

/** A snapshot of the agent. Arrays and sets are frozen copies: keep them, they never change. */
export interface AgentState {
  readonly systemPrompt: string;
  readonly model: Model;
  readonly tools: readonly AnyAgentTool[];
  readonly messages: readonly Message[];
  /** A run is active. */
  readonly isStreaming: boolean;
  /** The assistant message being streamed, if any. */
  readonly streamingMessage?: AssistantMessage;
  /** Ids of the tool calls being handled. */
  readonly pendingToolCalls: ReadonlySet<string>;
  /** Why the last run failed or was cancelled (cleared when a run starts). */
  readonly errorMessage?: string;
  readonly extra: Readonly<Record<string, unknown>>;
}

/** A listener for {@link Agent.subscribe}; a returned Promise is not awaited (its rejection is reported). */
export type AgentListener = (event: AgentEvent) => void | PromiseLike<void>;

interface ActiveRun {
  readonly controller: AbortController;
  subscriber: Subscriber<AgentEvent> | undefined;
  ended: boolean;
  readonly done: Promise<void>;
  settle(): void;
}

interface QueuedSteer {
  readonly id: string;
  readonly message: Message;
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
  /** Every event of every run (hot). */
  readonly events$: Observable<AgentEvent>;
  /** The current state, then every change (BehaviorSubject semantics). */
  readonly state$: Observable<AgentState>;

  private readonly provider: Provider;
  private readonly middleware: ComposedMiddleware;
  private readonly options: AgentOptions;
  private readonly events = new EventHub<AgentEvent>();
  /** Tells `state$` subscribers that the state changed (a hub, not a Subject: it is told on every event). */
  private readonly stateChanges = new EventHub<void>();
  private readonly reportListenerError: (error: unknown, event: AgentEvent) => void;

  private systemPrompt: string;
  private model: Model;
  private tools: readonly AnyAgentTool[];
  private messages: Message[];
  private extra: Record<string, unknown>;
  private streamingMessage: AssistantMessage | undefined;
  /** The ids of the tool calls started and not yet ended (an array: usually one or a few, added and removed often). */
  private pendingToolCalls: string[] = [];
  private errorMessage: string | undefined;
  private run: ActiveRun | undefined;
  private steering: QueuedSteer[] = [];
  private followUps: Message[] = [];
  private steerCounter = 0;
  private snapshot: AgentState | undefined;
  private messagesSnapshot: readonly Message[] | undefined;
  private readonly checkpointer: Checkpointer | undefined;
  /** The thread's `seq` as last loaded or written (the `expectedSeq` of the next append). */
  private seq = 0;
  /**
   * The `extra` record the store holds, as last loaded or saved (`undefined`: not known): a turn end with the same
   * record writes nothing.
   */
  private storedExtra: Readonly<Record<string, unknown>> | undefined = {};
  /** Whether the in-memory transcript is the thread's (restored, or no checkpointer). */
  private restored: boolean;
  /** The restore in flight, shared by everyone who needs it until it settles (one load at a time). */
  private restoring: Promise<void> | undefined;

  constructor(options: AgentOptions) {
    validateAgentOptions(options);
    this.options = options;
    this.provider = options.provider;
    this.model = resolveModel(options.model, options.provider);
    this.systemPrompt = options.systemPrompt ?? '';
    this.tools = [...(options.tools ?? [])];
    this.messages = (options.messages ?? []).map((message, index) => {
      try {
        return checkMessage(message, `AgentOptions.messages[${index}]`);
      } catch (error) {
        throw new ConfigurationError(`Agent: ${(error as Error).message}`);
      }
    });
    this.extra = { ...(options.extra ?? {}) };
    this.middleware = composeMiddleware(options.middleware ?? [], pickHooks(options));
    this.checkpointer = options.checkpointer;
    this.restored = options.checkpointer === undefined;
    this.reportListenerError =
      options.onListenerError ??
      ((error, event) => console.error(`cubepi: a listener threw on a ${event.type} event (the run goes on):`, error));
    this.events$ = this.events.observable;
    this.state$ = new Observable<AgentState>((subscriber) => {
      subscriber.next(this.state);
      return this.stateChanges.add({ next: () => subscriber.next(this.state) });
    });
  }

  /** The current state (a snapshot; cheap to read repeatedly). */
  get state(): AgentState {
    return (this.snapshot ??= this.buildSnapshot());
  }

  /**
   * Starts a run with `input` (a string, a message, or messages) and resolves with the messages it added when it
   * ends. Rejects with {@link AgentBusyError} while a run is active, {@link InvalidInputError} for bad input, and with
   * a `HookError` when a hook failed.
   */
  prompt(input: string | Message | readonly Message[], options?: RunOptions): Promise<Message[]> {
    return this.runToPromise(() => {
      const prompts = toMessages(input, 'prompt');
      return this.startRun(() => prompts, options, undefined);
    });
  }

  /** The run of {@link prompt} as a cold Observable: subscribing starts it, unsubscribing cancels it. */
  prompt$(input: string | Message | readonly Message[], options?: RunOptions): Observable<AgentEvent> {
    return this.runAsObservable(() => {
      const prompts = toMessages(input, 'prompt$');
      return () => prompts;
    }, options);
  }

  /**
   * Continues from the current history without a new prompt: valid when the last message is a user or tool result
   * message, or when it is an assistant message and a steering or follow-up message is queued (steering first).
   * Rejects with {@link InvalidStateError} otherwise (and on an empty history), calling no model.
   */
  resume(options?: RunOptions): Promise<Message[]> {
    return this.runToPromise(() => this.startRun(() => this.resumePrompts(), options, undefined));
  }

  /** The run of {@link resume} as a cold Observable. */
  resume$(options?: RunOptions): Observable<AgentEvent> {
    return this.runAsObservable(() => () => this.resumePrompts(), options);
  }

  /**
   * Queues a message for the active run, injected after the current tool batch and before the next model call (or
   * before the first model call of the next run when idle). Returns an id for {@link cancelSteer}.
   */
  steer(message: string | Message): string {
    const checked = toMessage(message, 'steer');
    const id = `steer_${++this.steerCounter}`;
    this.steering.push({ id, message: checked });
    return id;
  }

  /**
   * Restores the thread from the checkpointer now (the first run does it anyway): its messages, `extra` and `seq`.
   * A tool batch the process did not finish (a crash) is closed first: each unanswered call gets an `interrupted`
   * error result, appended to the thread. Resolves at once without a checkpointer or when already restored. A restore
   * in flight is joined, not repeated: a run started before it settles waits for the same load. Rejects with the
   * checkpointer's typed error; with {@link AgentBusyError} during a run.
   */
  restore(): Promise<void> {
    if (this.run !== undefined) return Promise.reject(busy('restore'));
    return lastValueFrom(this.restore$(), { defaultValue: undefined });
  }

  /**
   * How each hook is composed: per hook, its rule, the middlewares that run in order, and those that implement it
   * but do not run (earlier `convertToLlm`s; every middleware's version of a hook given directly in the options).
   *
   * @example
   * agent.describeMiddleware().beforeToolCall.runs // ['RateLimiter', 'SafetyFilter', 'AuditLogger']
   */
  describeMiddleware(): MiddlewareDescription {
    return this.middleware.description;
  }

  /** Removes a queued steering message; returns whether it was still queued. */
  cancelSteer(id: string): boolean {
    const index = this.steering.findIndex((entry) => entry.id === id);
    if (index < 0) return false;
    this.steering.splice(index, 1);
    return true;
  }

  /** Queues a message to continue the run when it would otherwise end (after steering is empty). */
  followUp(message: string | Message): void {
    this.followUps.push(toMessage(message, 'followUp'));
  }

  /** Cancels the active run (no-op when idle). `reason` is added to the closing message's `errorMessage`. */
  abort(reason?: string): void {
    const run = this.run;
    if (run === undefined || run.ended) return;
    run.controller.abort(new RunAbortedError('abort', reason === undefined ? 'Run aborted' : `Run aborted: ${reason}`));
  }

  /** Resolves when no run is active. */
  waitForIdle(): Promise<void> {
    const run = this.run;
    return run === undefined ? Promise.resolve() : run.done.then(() => this.waitForIdle());
  }

  /**
   * Clears the transcript, `errorMessage`, streaming state, pending tool calls and both queues; keeps the
   * configuration. Throws {@link AgentBusyError} while a run is active.
   */
  reset(): void {
    if (this.run !== undefined)
      throw new AgentBusyError('reset(): a run is active; abort() it and waitForIdle() first');
    this.messages = [];
    this.errorMessage = undefined;
    this.streamingMessage = undefined;
    this.pendingToolCalls = [];
    this.steering = [];
    this.followUps = [];
    this.messagesSnapshot = undefined;
    // The thread is still stored: with a checkpointer, the next run restores it again (memory and store agree).
    this.restored = this.checkpointer === undefined;
    this.changed();
  }

  /**
   * Calls `listener` with every event of every run, synchronously, in subscription order. An error it throws (or a
   * rejection of the Promise it returns) goes to `onListenerError` and never ends the run. Returns the unsubscribe
   * function.
   */
  subscribe(listener: AgentListener): () => void {
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

  private resumePrompts(): Message[] {
    const last = this.messages[this.messages.length - 1];
    if (last === undefined) throw new InvalidStateError('resume(): the history is empty; use prompt()');
    if (last.role !== 'assistant') return [];
    if (this.steering.length > 0) return []; // the loop drains steering before its first model call
    const followUps = this.takeFollowUps();
    if (followUps.length > 0) return followUps;
    throw new InvalidStateError(
      'resume(): the last message is an assistant message and no steering or follow-up message is queued',
    );
  }

  private runToPromise(start: () => ActiveRun & { result: Promise<Message[]> }): Promise<Message[]> {
    try {
      return start().result;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private runAsObservable(prepare: () => () => Message[], options: RunOptions | undefined): Observable<AgentEvent> {
    return new Observable<AgentEvent>((subscriber) => {
      let run: ActiveRun;
      try {
        run = this.startRun(prepare(), options, subscriber);
      } catch (error) {
        subscriber.error(error);
        return;
      }
      return () => {
        run.subscriber = undefined;
        if (!run.ended) run.controller.abort(new RunAbortedError('unsubscribed'));
      };
    });
  }

  private startRun(
    prompts: () => Message[],
    options: RunOptions | undefined,
    subscriber: Subscriber<AgentEvent> | undefined,
  ): ActiveRun & { result: Promise<Message[]> } {
    if (this.run !== undefined) throw busy('prompt');
    if (options?.deadlineMs !== undefined && !(options.deadlineMs > 0)) {
      throw new InvalidInputError('deadlineMs must be a positive number of milliseconds');
    }
    const controller = new AbortController();
    const external = options?.signal;
    const onExternalAbort = () => controller.abort(new RunAbortedError('signal'));
    if (external?.aborted) onExternalAbort();
    else external?.addEventListener('abort', onExternalAbort, { once: true });

    let settleDone!: () => void;
    let resolveResult!: (messages: Message[]) => void;
    let rejectResult!: (error: unknown) => void;
    const result = new Promise<Message[]>((resolve, reject) => {
      resolveResult = resolve;
      rejectResult = reject;
    });
    // prompt$ callers see failures on their Observable; only prompt() callers hold this Promise.
    if (subscriber !== undefined) result.catch(() => undefined);
    const run: ActiveRun & { result: Promise<Message[]> } = {
      controller,
      subscriber,
      ended: false,
      done: new Promise<void>((resolve) => (settleDone = resolve)),
      settle: () => {
        external?.removeEventListener('abort', onExternalAbort);
        if (this.run === run) this.endRun();
        settleDone();
      },
      result,
    };
    this.run = run;

    let added: readonly Message[] = [];
    let runId: string | undefined;
    // What the checkpoint sink stored of this run (messages pass it before their message_end), for a run it stops.
    const stored: Message[] = [];
    const checkpointed = this.checkpointer !== undefined;
    let closed = false;
    const deliver = (event: AgentEvent) => {
      this.events.emit(event);
      run.subscriber?.next(event);
    };
    const observer: Observer<AgentEvent> = {
      next: (event) => {
        if (event.type === 'message_update') {
          // The per-delta path: two fields and two deliveries, nothing else (`changed()` written out: most of a
          // stream runs before V8 optimises it, where every call costs).
          if (event.message.role === 'assistant') this.streamingMessage = event.message;
          this.snapshot = undefined;
          if (this.stateChanges.active) this.stateChanges.emit();
          this.events.emit(event);
          run.subscriber?.next(event);
          return;
        }
        if (event.type === 'agent_start') runId = event.runId;
        else if (event.type === 'message_end' && checkpointed) stored.push(event.message);
        else if (event.type === 'agent_end') {
          added = event.messages;
          run.ended = true;
        }
        this.apply(event);
        if (event.type === 'agent_end' && this.run === run) this.endRun();
        this.events.emit(event);
        run.subscriber?.next(event);
      },
      complete: () => {
        closed = true;
        run.settle();
        run.subscriber?.complete();
        resolveResult([...added]);
      },
      error: (error: unknown) => {
        closed = true;
        if (isCheckpointFailure(error)) {
          // What was stored is what the state shows; the next run reloads the thread (after a conflict, with what the
          // other writer stored) before going on.
          this.restored = false;
          this.errorMessage = errorMessageOf(error);
        }
        if (runId !== undefined && !run.ended) {
          // The run's own end never got through (a failed write stopped it): end it here, with what was stored.
          run.ended = true;
          if (this.run === run) this.endRun();
          deliver({ type: 'agent_end', runId, messages: stored.slice() });
        }
        run.settle();
        run.subscriber?.error(error);
        rejectResult(error);
      },
    };
    // The agent's own subscription is never unsubscribed: a run ends by its controller (abort, a signal, a deadline, a
    // prompt$ subscriber leaving), then closes itself and stores what closes it through this subscription.
    if (this.checkpointer === undefined) {
      // Nothing to restore or store: the loop delivers to the observer directly (no Subscriber per event), and starts
      // synchronously. A failure to start reaches the observer as it would through an Observable.
      try {
        startAgentLoop(this.loopOptions(prompts(), options), controller, observer);
      } catch (error) {
        // After the run's end, a throw is a bug of ours: let it surface rather than end the run twice.
        if (closed) throw error;
        observer.error(error);
      }
      return run;
    }
    // Restored: the run starts synchronously, with no Promise in its way.
    const run$ = this.restored
      ? defer(() => this.loop$(prompts(), options, controller))
      : this.restore$().pipe(switchMap(() => this.loop$(prompts(), options, controller)));
    // eslint-disable-next-line rxjs-x/no-ignored-subscription
    run$.subscribe(observer);
    return run;
  }

  /**
   * Restores the thread when it has not been (a cold Observable of one `undefined`, synchronous when there is nothing
   * to restore). Whether to restore is decided at subscription, and a restore in flight is joined, not repeated: a
   * second load finishing late would overwrite what a run has added since.
   */
  private restore$(): Observable<void> {
    const checkpointer = this.checkpointer;
    if (checkpointer === undefined) return of(undefined);
    return defer(() => {
      if (this.restored) return of(undefined);
      return (this.restoring ??= this.load(checkpointer).finally(() => (this.restoring = undefined)));
    });
  }

  /** Loads the thread (closing a tool batch a crash left open) and makes it the agent's transcript, extra and seq. */
  private async load(checkpointer: Checkpointer): Promise<void> {
    const threadId = this.options.threadId!;
    const data = await checkpointer.load(threadId);
    let messages = data?.messages ?? [];
    let seq = data?.seq ?? 0;
    const interrupted = interruptedToolResults(messages);
    if (interrupted.length > 0) {
      ({ seq } = await checkpointer.append(threadId, interrupted, { expectedSeq: seq }));
      messages = [...messages, ...interrupted];
    }
    this.messages = messages;
    this.messagesSnapshot = undefined;
    this.seq = seq;
    if (data !== null) this.extra = { ...data.extra };
    this.storedExtra = data === null ? {} : copyOrUnknown(data.extra);
    this.restored = true;
    this.changed();
  }

  /** The run itself: the loop over the current transcript, through the checkpoint sink when there is one. */
  private loop$(
    prompts: Message[],
    options: RunOptions | undefined,
    controller: AbortController,
  ): Observable<AgentEvent> {
    // The run's own controller is the loop's: abort() reaches tools, hooks and the provider in one dispatch.
    const loop$ = runAgentLoopOn(this.loopOptions(prompts, options), controller);
    const checkpointer = this.checkpointer;
    if (checkpointer === undefined) return loop$;
    return loop$.pipe(
      appendToCheckpoint(checkpointer, this.options.threadId!, {
        seq: this.seq,
        extra: () => this.extra,
        storedExtra: this.storedExtra,
        onAppended: (seq) => (this.seq = seq),
        onExtraSaved: (extra) => (this.storedExtra = extra),
      }),
    );
  }

  /** The loop's options for a run over the current transcript. */
  private loopOptions(prompts: Message[], options: RunOptions | undefined): RunAgentLoopOptions {
    return {
      provider: this.provider,
      model: this.model,
      history: this.messages,
      prompts,
      systemPrompt: this.systemPrompt,
      tools: this.tools,
      hooks: this.middleware.hooks,
      wrappers: this.middleware.wrappers,
      hookOwner: EXPLICIT_HOOKS_NAME,
      toolExecution: this.options.toolExecution,
      toolConcurrency: this.options.toolConcurrency,
      toolTimeoutMs: this.options.toolTimeoutMs,
      streamOptions: this.options.streamOptions,
      toolChoice: this.options.toolChoice,
      threadId: this.options.threadId,
      deadlineMs: options?.deadlineMs ?? this.options.deadlineMs,
      getSteeringMessages: () => this.takeSteering(),
      getFollowUpMessages: () => this.takeFollowUps(),
      extra: this.extra,
    };
  }

  private endRun(): void {
    this.run = undefined;
    this.streamingMessage = undefined;
    this.pendingToolCalls = [];
    this.changed();
  }

  private takeSteering(): Message[] {
    if (this.steering.length === 0) return [];
    const taken = this.options.steeringMode === 'all' ? this.steering.splice(0) : this.steering.splice(0, 1);
    return taken.map((entry) => entry.message);
  }

  private takeFollowUps(): Message[] {
    if (this.followUps.length === 0) return [];
    return this.options.followUpMode === 'all' ? this.followUps.splice(0) : this.followUps.splice(0, 1);
  }

  /** Applies an event to the state. */
  private apply(event: AgentEvent): void {
    switch (event.type) {
      case 'agent_start':
        this.errorMessage = undefined;
        break;
      case 'message_start':
        // (`message_update`, the per-delta event, is applied in the run's observer, which never calls this.)
        if (event.message.role !== 'assistant') return;
        this.streamingMessage = event.message;
        break;
      case 'message_end': {
        const { message } = event;
        this.messages.push(message);
        this.messagesSnapshot = undefined;
        if (message.role === 'assistant') {
          this.streamingMessage = undefined;
          if (message.stopReason === 'error' || message.stopReason === 'aborted')
            this.errorMessage = message.errorMessage;
        }
        break;
      }
      case 'tool_execution_start':
        if (!this.pendingToolCalls.includes(event.toolCallId)) this.pendingToolCalls.push(event.toolCallId);
        break;
      case 'tool_execution_end':
        remove(this.pendingToolCalls, event.toolCallId);
        break;
      default:
        return;
    }
    this.changed();
  }

  private changed(): void {
    this.snapshot = undefined;
    if (this.stateChanges.active) this.stateChanges.emit();
  }

  private buildSnapshot(): AgentState {
    this.messagesSnapshot ??= Object.freeze(this.messages.slice());
    return Object.freeze({
      systemPrompt: this.systemPrompt,
      model: this.model,
      tools: Object.freeze(this.tools.slice()),
      messages: this.messagesSnapshot,
      isStreaming: this.run !== undefined,
      ...(this.streamingMessage !== undefined ? { streamingMessage: this.streamingMessage } : {}),
      pendingToolCalls: new FrozenSet(this.pendingToolCalls),
      ...(this.errorMessage !== undefined ? { errorMessage: this.errorMessage } : {}),
      extra: Object.freeze({ ...this.extra }),
    });
  }
}

/** A Set that refuses changes, for snapshots. */
class FrozenSet<T> extends Set<T> {
  private readonly sealed: boolean;
  constructor(values: Iterable<T>) {
    super(values);
    this.sealed = true;
  }
  override add(value: T): this {
    if (this.sealed) throw new TypeError('AgentState.pendingToolCalls is a snapshot and cannot change');
    return super.add(value);
  }
  override delete(): boolean {
    throw new TypeError('AgentState.pendingToolCalls is a snapshot and cannot change');
  }
  override clear(): void {
    throw new TypeError('AgentState.pendingToolCalls is a snapshot and cannot change');
  }
}

/**
 * A deep copy of a loaded `extra` (the agent's `extra` shares nested objects with it, and hooks may change them), or
 * `undefined` when a store handed back something that cannot be copied: then it is not known, and the next turn end
 * writes `extra` whatever it holds.
 */
function copyOrUnknown(extra: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> | undefined {
  try {
    return structuredClone(extra);
  } catch {
    return undefined;
  }
}

/** Removes `item` from `list` in place (without allocating when it is the last one, the common case). */
function remove<T>(list: T[], item: T): void {
  const index = list.lastIndexOf(item);
  if (index < 0) return;
  if (index === list.length - 1) list.pop();
  else list.splice(index, 1);
}

function busy(method: string): AgentBusyError {
  return new AgentBusyError(
    `${method}(): a run is already active; use steer() or followUp() to add to it, or await waitForIdle()`,
  );
}

function pickHooks(options: AgentOptions): AgentHooks {
  const hooks: Record<string, unknown> = {};
  for (const name of HOOK_NAMES) {
    const hook = options[name];
    if (hook !== undefined) hooks[name] = hook;
  }
  return hooks as AgentHooks;
}

/**
 * A model id becomes a model of `provider`, with the facts of the model table when it knows the id (prices, limits,
 * capabilities: see `findModel`); a `Model` is taken as it is.
 */
export function resolveModel(model: Model | string, provider: Provider): Model {
  if (typeof model !== 'string') return model;
  const known = findModel(model);
  return known === undefined ? { id: model, provider: provider.id } : { ...known, provider: provider.id };
}

function validateAgentOptions(options: AgentOptions): void {
  const fail = (what: string): never => {
    throw new ConfigurationError(`Agent: ${what}`);
  };
  if (typeof options !== 'object' || options === null) fail('expected an options object');
  validateRunSettings(options, fail);
  if (options.messages !== undefined && !Array.isArray(options.messages))
    fail('`messages` must be an array of messages');
  for (const key of ['steeringMode', 'followUpMode'] as const) {
    const value = options[key];
    if (value !== undefined && value !== 'one-at-a-time' && value !== 'all')
      fail(`\`${key}\` must be "one-at-a-time" or "all"`);
  }
  if (options.onListenerError !== undefined && typeof options.onListenerError !== 'function') {
    fail('`onListenerError` must be a function');
  }
  if (options.checkpointer !== undefined) {
    const checkpointer = options.checkpointer as Partial<Checkpointer> | null;
    if (
      typeof checkpointer?.load !== 'function' ||
      typeof checkpointer.append !== 'function' ||
      typeof checkpointer.saveExtra !== 'function'
    ) {
      fail('`checkpointer` must be a Checkpointer (load, append, saveExtra, …)');
    }
    if (options.threadId === undefined) fail('a `checkpointer` needs a `threadId`');
    const problem = threadIdProblem(options.threadId);
    if (problem !== undefined) fail(`\`threadId\`: ${problem}`);
    if (options.messages !== undefined)
      fail('with a `checkpointer`, the history comes from the thread: drop `messages`');
  }
}

/** Whether a run failed because its checkpoint could not be written (or read): the store and memory may differ. */
function isCheckpointFailure(error: unknown): boolean {
  return error instanceof CheckpointError || error instanceof ThreadConflictError;
}
