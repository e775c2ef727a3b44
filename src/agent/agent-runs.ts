/**
 * The run lifecycle of an Agent: starting a run (one at a time), delivering its events, cancelling it, settling it.
 * @module
 */
import { defer, Observable, switchMap, tap, type Observer, type Subscriber } from 'rxjs';
import { EXPLICIT_HOOKS_NAME, type ComposedMiddleware } from '../middleware/compose-middleware.js';
import type { AgentEndEvent, AgentEvent, EventPlace, InputCommittedEvent } from '../types/agent-events.js';
import {
  AgentBusyError,
  errorMessageOf,
  InvalidInputError,
  InvalidStateError,
  OutputError,
  RunAbortedError,
} from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Provider } from '../types/provider.js';
import type { AnyAgentTool } from '../types/tool.js';
import type { AgentOptions, RunOptions } from './agent-options.js';
import type { AgentStateStore } from './agent-state.js';
import { isCheckpointFailure, type CheckpointSession } from './checkpoint-session.js';
import type { EventHub } from './event-hub.js';
import type { MessageQueues } from './message-queues.js';
import type { ResumeBatch } from '../loop/resume-batch.js';
import { StoreBarrier } from './store-barrier.js';
import { issuesText } from '../loop/output-answer.js';
import { finalToolClash, outputPlanOf, strictCheck } from '../loop/output-plan.js';
import { outputSettingsProblem, validateTools } from '../loop/run-settings.js';
import { randomRunId, runAgentLoopOn, startAgentLoop, type RunAgentLoopOptions } from '../loop/run-agent-loop.js';
import { checkIdempotencyKey, inputRecordOf, withInputRecord } from './input-keys.js';
import { settled } from './execution-result.js';
import { handoffSetup } from '../loop/handoff-host.js';
import { usageOf } from '../types/usage-of.js';
import type { AwaitedListener } from './awaited-listener.js';
import type { SpendBound } from '../types/usage.js';

/** What opens a run: its prompts, and a suspended batch to finish first. */
export interface RunInput {
  readonly prompts: Message[];
  readonly resume?: ResumeBatch | undefined;
}

/** The active run of an Agent. */
export interface ActiveRun {
  readonly controller: AbortController;
  subscriber: Subscriber<AgentEvent> | undefined;
  ended: boolean;
  readonly done: Promise<void>;
  settle(): void;
}

/** What an {@link AgentRuns} works with: the parts of its Agent. */
export interface AgentRunsInit {
  readonly provider: Provider;
  readonly options: AgentOptions;
  readonly middleware: ComposedMiddleware;
  readonly store: AgentStateStore;
  readonly queues: MessageQueues;
  /** Every event of every run goes here (the Agent's `events$`). */
  readonly events: EventHub<AgentEvent>;
  /** The thread the runs restore and store, when the Agent has a checkpointer. */
  readonly session: CheckpointSession | undefined;
  /** The tightest spending bound the middlewares declare. */
  readonly budget: SpendBound | undefined;
  /** The listeners subscribed with `{ await: true }`: a run's Promise settles once they handled its events. */
  readonly awaited: ReadonlySet<AwaitedListener>;
  /** The Agent itself: the root its thread's handoffs are reached from. */
  readonly owner: object;
}

/**
 * An Agent's runs, at most one at a time. A run is started by {@link start} (through {@link toPromise} for `prompt()`
 * or {@link toObservable} for `prompt$()`); each of its events is applied to the state, then delivered to `events$`,
 * then to the `prompt$` subscriber. The run ends by its controller (`abort()`, a signal, a deadline, a `prompt$`
 * subscriber leaving), then closes itself and stores what closes it.
 */
export class AgentRuns {
  /** The active run, if any. */
  current: ActiveRun | undefined;
  /** Set by `dispose()`: no run starts any more. */
  disposed = false;
  /** Set while `agent.fork()` moves the agent to another thread: no run may start meanwhile. */
  forking = false;

  /** The loop reads the agent's tools at each turn: `setTools` during a run takes effect at its next turn. */
  private readonly getTools: () => readonly AnyAgentTool[];

  constructor(private readonly agent: AgentRunsInit) {
    this.getTools = () => agent.store.tools;
  }

  /** Cancels the active run (no-op when idle). `reason` is added to the closing message's `errorMessage`. */
  abort(reason?: string): void {
    const run = this.current;
    if (run === undefined || run.ended) return;
    run.controller.abort(new RunAbortedError('abort', reason === undefined ? 'Run aborted' : `Run aborted: ${reason}`));
  }

  /** Resolves when no run is active. */
  waitForIdle(): Promise<void> {
    const run = this.current;
    return run === undefined ? Promise.resolve() : run.done.then(() => this.waitForIdle());
  }

  /**
   * The run `start` starts, as the Promise of the messages it added, or of its typed answer for a run given `output`
   * (a failure to start is a rejection). `T` is what the caller's overload promises.
   */
  toPromise<T = Message[]>(start: () => ActiveRun & { result: Promise<unknown> }): Promise<T> {
    let result: Promise<unknown>;
    try {
      result = start().result;
    } catch (error) {
      return Promise.reject(error);
    }
    const { awaited } = this.agent;
    // Awaited listeners (decided when the run starts): the Promise settles, as the run did, once each of them handled
    // every event delivered so far, the run's agent_end included. Without any, the run's own Promise as before.
    if (awaited.size === 0) return result as Promise<T>;
    const drained = () => Promise.all(Array.from(awaited, (listener) => listener.handled()));
    return result.then(
      (value) => drained().then(() => value as T),
      (error: unknown) => drained().then(() => Promise.reject(error as Error)),
    );
  }

  /** Whether a run is active or the agent is moving to a fork. */
  get busy(): boolean {
    return this.current !== undefined || this.forking;
  }

  /**
   * A run as a cold Observable of its events: subscribing starts it, unsubscribing cancels it. `before`, if given,
   * runs first, once the run is active (so no other run can start meanwhile) and before the thread is restored.
   */
  toObservable(
    prepare: () => () => RunInput,
    options: RunOptions | undefined,
    before?: () => Promise<void>,
    committedKey?: string,
  ): Observable<AgentEvent> {
    return new Observable<AgentEvent>((subscriber) => {
      let run: ActiveRun;
      try {
        run = this.start(prepare(), options, subscriber, before, committedKey);
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

  /**
   * Starts a run opened by `prompts()` (called once the thread is restored). Throws {@link AgentBusyError} while a run
   * is active and {@link InvalidInputError} for a bad `deadlineMs`. `before` (with a checkpointer only) runs first,
   * the run already active: a failure there fails the run before `agent_start`, as a failed restore does.
   *
   * With `options.idempotencyKey`, a key the agent has taken is refused with `DuplicateInputError` (checked now, and
   * again once the thread is restored, so a key stored by another process counts), the last prompt carries the key,
   * and the run emits `input_committed` after that prompt's `message_end` (for a run without prompts, after
   * `agent_start`). `committedKey` is the key of an input stored before the run (an approval's answer): the run emits
   * `input_committed` for it after `agent_start`.
   */
  start(
    input: () => RunInput,
    options: RunOptions | undefined,
    subscriber: Subscriber<AgentEvent> | undefined,
    before?: () => Promise<void>,
    committedKey?: string,
  ): ActiveRun & { result: Promise<unknown> } {
    if (this.disposed) throw new InvalidStateError('the agent is disposed: it starts no run');
    const key = options?.idempotencyKey;
    if (key !== undefined) {
      checkIdempotencyKey(key, 'prompt');
      this.agent.store.inputs.check(key);
    }
    if (this.current !== undefined || this.forking) throw busy('prompt');
    this.checkOutput(options);
    if (options?.tools !== undefined) {
      validateTools(options.tools, (what) => {
        throw new InvalidInputError(`RunOptions.tools: ${what}`);
      });
      const own = new Set(this.agent.store.tools.map((tool) => tool.name));
      const clash = options.tools.find((tool) => own.has(tool.name));
      if (clash !== undefined) {
        throw new InvalidInputError(`RunOptions.tools: the agent already has a tool named "${clash.name}"`);
      }
    }
    if (options?.deadlineMs !== undefined && !(options.deadlineMs > 0)) {
      throw new InvalidInputError('deadlineMs must be a positive number of milliseconds');
    }
    if (options?.runId !== undefined && (typeof options.runId !== 'string' || options.runId === '')) {
      throw new InvalidInputError('runId must be non-empty text');
    }
    const parent = options?.parent;
    if (
      parent !== undefined &&
      (typeof parent?.runId !== 'string' ||
        (parent.toolCallId !== undefined && typeof parent.toolCallId !== 'string') ||
        !Number.isInteger(parent.depth) ||
        parent.depth < 0)
    ) {
      throw new InvalidInputError('parent must be { runId, toolCallId, depth } with a depth of 0 or more');
    }
    const { store, events, session } = this.agent;
    // Known before the run starts: keyed messages carry it in their metadata.
    const runId = options?.runId ?? randomRunId();
    // A key given with this run and not stored yet, and the key whose input_committed follows agent_start.
    let heldKey: string | undefined;
    let afterStart = committedKey;
    const opened =
      key === undefined
        ? input
        : () => {
            const given = input();
            store.inputs.check(key);
            store.inputs.hold(key, runId);
            heldKey = key;
            const prompts = given.prompts;
            if (prompts.length === 0) {
              afterStart = key;
              return given;
            }
            const last = withInputRecord(prompts[prompts.length - 1]!, { idempotencyKey: key, runId });
            return { ...given, prompts: [...prompts.slice(0, -1), last] };
          };
    const controller = new AbortController();
    const external = options?.signal;
    const onExternalAbort = () => controller.abort(new RunAbortedError('signal'));
    if (external?.aborted) onExternalAbort();
    else external?.addEventListener('abort', onExternalAbort, { once: true });

    let settleDone!: () => void;
    let resolveResult!: (result: unknown) => void;
    let rejectResult!: (error: unknown) => void;
    const result = new Promise<unknown>((resolve, reject) => {
      resolveResult = resolve;
      rejectResult = reject;
    });
    // prompt$ callers see failures on their Observable; only prompt() callers hold this Promise.
    if (subscriber !== undefined) result.catch(() => undefined);
    const run: ActiveRun & { result: Promise<unknown> } = {
      controller,
      subscriber,
      ended: false,
      done: new Promise<void>((resolve) => (settleDone = resolve)),
      settle: () => {
        external?.removeEventListener('abort', onExternalAbort);
        if (this.current === run) this.end();
        settleDone();
      },
      result,
    };
    this.current = run;
    store.isStreaming = true;

    let added: readonly Message[] = [];
    // With `output` given for this run, the Promise is of the typed answer (the overloads of prompt, resume, respond).
    const wantsValue = options?.output !== undefined;
    let end: AgentEndEvent | undefined;
    let started = false;
    // What the checkpoint sink stored of this run (messages pass it before their message_end), for a run it stops.
    const stored: Message[] = [];
    const checkpointed = session !== undefined;
    let closed = false;
    const deliver = (event: AgentEvent) => {
      events.emit(event);
      run.subscriber?.next(event);
    };
    const stateChanges = store.changes;
    // The run's events are numbered here, where they are delivered (the loop leaves them unnumbered for the Agent), so
    // that what this layer adds to the run (input_committed, a closing agent_end) takes its place in the count.
    let seq = 0;
    // The input_committed of a keyed input whose message this event stored (or, after agent_start, stored before).
    const committed = (key: string): InputCommittedEvent & EventPlace => {
      store.inputs.commit(key, runId);
      if (key === heldKey) heldKey = undefined;
      return session === undefined
        ? { type: 'input_committed', runId, idempotencyKey: key, seq: ++seq }
        : {
            type: 'input_committed',
            runId,
            idempotencyKey: key,
            threadSeq: session.storedSeq,
            seq: ++seq,
          };
    };
    const observer: Observer<AgentEvent> = {
      next: (loopEvent) => {
        (loopEvent as { seq?: number }).seq = ++seq;
        let event = loopEvent;
        if (event.type === 'message_update') {
          // The per-delta path: two fields and two deliveries, nothing else (`store.changed()` written out: most of a
          // stream runs before V8 optimises it, where every call costs).
          if (event.message.role === 'assistant') store.streamingMessage = event.message;
          store.snapshot = undefined;
          if (stateChanges.active) stateChanges.emit();
          events.emit(event);
          run.subscriber?.next(event);
          return;
        }
        let commit: (InputCommittedEvent & EventPlace) | undefined;
        if (event.type === 'agent_start') {
          started = true;
          if (afterStart !== undefined) commit = committed(afterStart);
        } else if (event.type === 'message_end') {
          if (checkpointed) stored.push(event.message);
          if (event.message.metadata !== undefined) {
            const record = inputRecordOf(event.message);
            if (record !== undefined && store.inputs.isHeld(record.idempotencyKey))
              commit = committed(record.idempotencyKey);
          }
        } else if (event.type === 'agent_end') {
          event = settled(event, checkpointed ? 'committed' : 'none');
          added = event.messages;
          end = event;
          run.ended = true;
        }
        store.applyRunState(event);
        store.apply(event);
        if (event.type === 'agent_end' && this.current === run) this.end();
        events.emit(event);
        run.subscriber?.next(event);
        if (commit !== undefined) deliver(commit);
      },
      complete: () => {
        closed = true;
        if (heldKey !== undefined) store.inputs.release(heldKey);
        run.settle();
        run.subscriber?.complete();
        if (!wantsValue) resolveResult([...added]);
        else if (end !== undefined && 'output' in end) resolveResult(end.output);
        else rejectResult(outputError(end, added));
      },
      error: (error: unknown) => {
        closed = true;
        if (isCheckpointFailure(error)) {
          // What was stored is what the state shows; the next run reloads the thread (after a conflict, with what the
          // other writer stored) before going on.
          session?.invalidate();
          store.errorMessage = errorMessageOf(error);
        }
        // A key whose input was not stored may be given again (after a lost connection the store may hold it: the
        // next run restores the thread first, and finds it there).
        if (heldKey !== undefined) store.inputs.release(heldKey);
        if (started && !run.ended) {
          // The run's own end never got through (a failed write stopped it): end it here, with what was stored.
          run.ended = true;
          if (this.current === run) this.end();
          const failed: AgentEndEvent & EventPlace = {
            type: 'agent_end',
            runId,
            messages: stored.slice(),
            outcome: 'failed',
            usage: usageOf(stored),
            seq: ++seq,
          };
          deliver(settled(failed, session === undefined ? 'none' : 'failed'));
        }
        run.settle();
        run.subscriber?.error(error);
        rejectResult(error);
      },
    };
    // The agent's own subscription is never unsubscribed: a run ends by its controller (abort, a signal, a deadline, a
    // prompt$ subscriber leaving), then closes itself and stores what closes it through this subscription.
    if (session === undefined) {
      // Nothing to restore or store: the loop delivers to the observer directly (no Subscriber per event), and starts
      // synchronously. A failure to start reaches the observer as it would through an Observable.
      try {
        startAgentLoop(this.loopOptions(this.opened(opened()), options, runId), controller, observer, false);
      } catch (error) {
        // After the run's end, a throw is a bug of ours: let it surface rather than end the run twice.
        if (closed) throw error;
        observer.error(error);
      }
      return run;
    }
    // Restored: the run starts synchronously, with no Promise in its way.
    const loop$ = () => this.loop$(session, this.opened(opened()), options, controller, runId);
    const run$ =
      before !== undefined
        ? defer(before).pipe(
            switchMap(() => session.restore$()),
            switchMap(loop$),
          )
        : session.restored
          ? defer(loop$)
          : session.restore$().pipe(switchMap(loop$));
    // eslint-disable-next-line rxjs-x/no-ignored-subscription
    run$.subscribe(observer);
    return run;
  }

  /**
   * Throws {@link InvalidInputError} for a run's bad `output`, `outputRetries` or `reasoning`, for an output schema
   * the current model would be asked for in strict native mode but cannot express there (see `strictCheck`), and for a
   * tool of the agent named like the final tool (`finalToolClash`).
   */
  private checkOutput(options: RunOptions | undefined): void {
    if (options === undefined) return;
    const problem = outputSettingsProblem(options);
    if (problem !== undefined) throw new InvalidInputError(problem);
    if (options.output !== undefined) {
      const plan = outputPlanOf(options.output);
      const strict = strictCheck(plan, this.agent.store.model) ?? finalToolClash(plan, this.agent.store.tools);
      if (strict !== undefined) throw new InvalidInputError(`\`output\`: ${strict}`);
    }
  }

  /** The run itself: the loop over the current transcript, through the checkpoint sink. */
  private loop$(
    session: CheckpointSession,
    input: RunInput,
    options: RunOptions | undefined,
    controller: AbortController,
    runId: string,
  ): Observable<AgentEvent> {
    const { store } = this.agent;
    // The run's own controller is the loop's: abort() reaches tools, hooks and the provider in one dispatch. The state
    // and approvals are applied before the sink, which stores them at turn and run ends as they are then.
    // Tool calls are stored before they run: the loop waits at each batch until the sink has stored the message.
    const barrier = new StoreBarrier();
    return runAgentLoopOn(
      { ...this.loopOptions(input, options, runId), untilStored: barrier.untilStored },
      controller,
      false,
    ).pipe(
      tap((event) => store.applyRunState(event)),
      session.sink(barrier),
    );
  }

  /** The input of a run about to start, noting whether it resumes the suspended batch. */
  private opened(input: RunInput): RunInput {
    this.agent.store.resuming = input.resume !== undefined;
    return input;
  }

  /** The loop's options for a run over the current transcript. */
  private loopOptions(input: RunInput, options: RunOptions | undefined, runId: string): RunAgentLoopOptions {
    const { provider, options: agentOptions, middleware, store, queues } = this.agent;
    // A thread a handoff left with another agent runs as that agent (an unknown one is an UnknownAgentError here).
    const handoffs = handoffSetup(this.agent.owner, store.hookState, agentOptions.maxHandoffs);
    const active = handoffs?.profile;
    return {
      provider: active?.provider ?? provider,
      model: active?.model ?? store.model,
      history: store.messages,
      prompts: input.prompts,
      resume: input.resume,
      systemPrompt: active?.systemPrompt ?? store.systemPrompt,
      tools: withRunTools(active?.getTools() ?? store.tools, options?.tools),
      getTools:
        options?.tools === undefined
          ? (active?.getTools ?? this.getTools)
          : () => withRunTools((active?.getTools ?? this.getTools)(), options.tools),
      hooks: handoffs?.hooks ?? middleware.hooks,
      wrappers: active?.middleware.wrappers ?? middleware.wrappers,
      handoffs: handoffs?.host,
      hookOwner: EXPLICIT_HOOKS_NAME,
      middlewareChain: active?.middleware.chain ?? middleware.chain,
      toolExecution: agentOptions.toolExecution,
      toolConcurrency: agentOptions.toolConcurrency,
      toolTimeoutMs: agentOptions.toolTimeoutMs,
      streamOptions: agentOptions.streamOptions,
      toolChoice: agentOptions.toolChoice,
      reasoning: options?.reasoning ?? agentOptions.reasoning,
      output: options?.output ?? agentOptions.output,
      outputRetries: options?.outputRetries ?? agentOptions.outputRetries,
      blobs: agentOptions.blobs ?? agentOptions.checkpointer?.blobs,
      threadId: this.agent.session?.threadId ?? agentOptions.threadId,
      deadlineMs: options?.deadlineMs ?? agentOptions.deadlineMs,
      parent: options?.parent,
      limits: options?.limits,
      runId,
      principal: options?.principal,
      budget: this.agent.budget,
      getSteeringMessages: () => queues.takeSteering(runId),
      getFollowUpMessages: () => queues.takeFollowUps(runId),
      state: store.hookState,
    };
  }

  /** The active run ended: no run is active any more. */
  private end(): void {
    this.current = undefined;
    this.agent.store.endRun();
  }
}

/** The error of a call that needs the agent idle while a run is active. */
export function busy(method: string): AgentBusyError {
  return new AgentBusyError(
    `${method}(): a run is already active; use steer() or followUp() to add to it, or await waitForIdle()`,
  );
}

/** The rejection of a run given `output` that ended without a valid answer (see {@link OutputError}). */
function outputError(end: AgentEndEvent | undefined, messages: readonly Message[]): OutputError {
  const failure = end?.outputError ?? { reason: 'missing' as const, issues: [], attempts: 0 };
  const outcome = end?.outcome ?? 'failed';
  const message =
    failure.reason === 'invalid'
      ? `The run's answer is not a value of the output schema after ${failure.attempts} attempts:\n${issuesText(failure.issues)}`
      : `The run ended ${outcome} before the model gave its answer`;
  return new OutputError(message, failure.reason, outcome, failure.issues, failure.attempts, [...messages]);
}

/** The agent's tools and a run's own (`RunOptions.tools`), for that run. */
function withRunTools(
  tools: readonly AnyAgentTool[],
  runTools: readonly AnyAgentTool[] | undefined,
): readonly AnyAgentTool[] {
  return runTools === undefined || runTools.length === 0 ? tools : [...tools, ...runTools];
}
