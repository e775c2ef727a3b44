/**
 * The agent loop as a cold Observable.
 * @module
 */
import { isPrincipal, type Principal } from '../types/principal.js';
import { BlobResolver } from './resolve-blobs.js';
import { TranscriptScan } from './transcript-scan.js';
import { asyncScheduler, Observable, type Subscription } from 'rxjs';
import type { ComposedModelCall, ComposedToolCall } from '../middleware/compose-wrappers.js';
import type { HookSink } from '../middleware/hook-sink.js';
import type { ComposedHooks, RunEndContext } from '../middleware/types.js';
import type { AgentEndEvent, AgentEvent, AgentStartEvent, ParentRun, RunOutcome } from '../types/agent-events.js';
import type { HandoffHost } from './handoff-host.js';
import { stateFromStored } from '../types/apply-patch.js';
import type { ApprovalRequest } from '../types/approval.js';
import { isHookDecision } from '../types/decision.js';
import { ConfigurationError, isAbortError, RunAbortedError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { MiddlewareChain } from '../types/middleware-chain.js';
import type { Model } from '../types/model.js';
import type { Provider } from '../types/provider.js';
import type { HookState } from '../types/state.js';
import type { AnyAgentTool, RunLimits } from '../types/tool.js';
import { usageOf } from '../types/usage-of.js';
import { addUsage, EMPTY_USAGE, type SpendBound, type Usage } from '../types/usage.js';
import { drive, type Op } from './drive.js';
import { resumeBatch, type ResumeBatch } from './resume-batch.js';
import { callHook, hookContext, RunStopped, runSink, type RunState } from './run-state.js';
import { validateRunSettings, type RunSettings } from './run-settings.js';
import { closeRun } from './close-run.js';
import { RunLedger } from './run-ledger.js';
import { turn } from './turn.js';
import { newAnswerState, type AnswerState } from './output-answer.js';
import { finalToolClash, outputPlanOf, strictCheck } from './output-plan.js';

/** Options of {@link runAgentLoop}. */
export interface RunAgentLoopOptions extends RunSettings {
  readonly provider: Provider;
  readonly model: Model;
  /** The transcript before this run. Not modified. */
  readonly history?: readonly Message[] | undefined;
  /** Messages that open the run (a prompt); empty to continue from `history`. */
  readonly prompts?: readonly Message[] | undefined;
  /** The hooks, already composed (one function per hook). */
  readonly hooks?: ComposedHooks | undefined;
  /** The wrapper onions, already composed (see `composeMiddleware`). */
  readonly wrappers?:
    | { readonly wrapModelCall?: ComposedModelCall | undefined; readonly wrapToolCall?: ComposedToolCall | undefined }
    | undefined;
  /**
   * The composed chain `agent_start` tells (`composeMiddleware(...).chain`; the Agent passes its own). Without it,
   * `agent_start` has no `middleware` field.
   */
  readonly middlewareChain?: MiddlewareChain | undefined;
  /** The name a failing hook is reported under in its `HookError`; `loop options` by default. */
  readonly hookOwner?: string | undefined;
  /** Called after the prompt and after every turn: messages to inject before the next model call. */
  readonly getSteeringMessages?: (() => readonly Message[]) | undefined;
  /** Called when the run would end: messages that continue it. */
  readonly getFollowUpMessages?: (() => readonly Message[]) | undefined;
  /** Aborting it cancels the run the way `abort()` does (the run still emits its closing events). */
  readonly signal?: AbortSignal | undefined;
  /** The run's id, carried by each event (default: a fresh one). */
  readonly runId?: string | undefined;
  /** Who the run acts for: `principal` of every hook context, tool context and sub-agent run (`RunOptions`). */
  readonly principal?: Principal | undefined;
  /** The tool call that starts this run, for a nested run (a sub-agent's): named on `agent_start`, sets the depth. */
  readonly parent?: ParentRun | undefined;
  /**
   * The run state before this run (as the last run left it; see `state_patched`). Without it the run starts from
   * `extra` as its values.
   */
  readonly state?: HookState | undefined;
  /**
   * A tool batch suspended for approval to finish first, with the answers (the Agent passes it after `respond()`): the
   * run starts with that batch instead of a model call.
   */
  readonly resume?: ResumeBatch | undefined;
  /**
   * The tools in force, read at the start of each turn (before its hooks and model call): a new array (compared by
   * identity) replaces the run's tools from that turn on, validated as `tools` are. A tool batch already started keeps
   * the tools it started with. Without it, the run keeps `tools`. The Agent passes its current tools (`setTools`).
   */
  readonly getTools?: (() => readonly AnyAgentTool[]) | undefined;
  /**
   * What the run inherits from the tool call that started it (a sub-agent's run; `agentTool` passes them): a deadline
   * (the earlier of it and `deadlineMs` applies), a budget signal that cancels the run (reason `budget`), and where to
   * report what it spends.
   */
  readonly limits?: RunLimits | undefined;
  /**
   * The run's own spending bound (the Agent passes the tightest `budget` its middlewares declare): runs its tools
   * start are cancelled when its total reaches it (see {@link SpendBound}).
   */
  readonly budget?: SpendBound | undefined;
  /**
   * The barrier between asking for a tool call and running it. Called after the `message_end` of an assistant message
   * with tool calls has been emitted, before any of those calls is gated or started; when it returns a Promise, the
   * batch waits for it. A checkpoint sink downstream of the loop (see `appendToCheckpoint`) passes a function that
   * resolves once every message emitted so far is stored, so a tool call is in the store before the tool runs: a
   * process that dies mid-batch leaves a call the next process knows (it gets an `interrupted` result) instead of one
   * the model is asked for again (and a non-idempotent tool runs twice). A rejection fails the run with its error, the
   * calls answered as unexecuted. The Agent passes its checkpointer's; without one there is nothing to wait for.
   */
  readonly untilStored?: (() => PromiseLike<void> | undefined) | undefined;
  /**
   * The run's handoffs (the Agent passes one for a thread that can hand off; see `handoff`): which agent is active,
   * and the switch after a turn that took a handoff. Internal: built by the Agent only.
   */
  readonly handoffs?: HandoffHost | undefined;
}

// Random bytes for run ids, 64 ids at a time, and the hex of each byte.
const RUN_ID_POOL = new Uint8Array(16 * 64);
let poolAt = RUN_ID_POOL.length;
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A run id nobody can guess from another: `run_` and 128 random bits in hex. A server addresses runs by id (watch,
 * cancel), so an id derived from the clock and a counter let one user find another's runs. `getRandomValues`, not
 * `randomUUID`: browsers expose the latter only in secure contexts. Internal (the Agent names a keyed run before it starts).
 */
export function randomRunId(): string {
  // 16 random bytes per id, taken from a pool filled 64 ids at a time: `getRandomValues` costs far more per call than
  // per byte (on Node it was a quarter of a one-turn run's CPU, one call per run). Browser-safe, unlike `randomUUID`
  // (secure contexts only).
  if (poolAt === RUN_ID_POOL.length) {
    globalThis.crypto.getRandomValues(RUN_ID_POOL);
    poolAt = 0;
  }
  let hex = 'run_';
  for (const end = poolAt + 16; poolAt < end; poolAt++) hex += HEX[RUN_ID_POOL[poolAt]!];
  return hex;
}

/**
 * The agent loop without the facade: a **cold** Observable of {@link AgentEvent}s. Subscribing starts the run;
 * unsubscribing tears it down (the provider request is aborted, running tools see their signal fire, nothing more is
 * emitted). Aborting `options.signal` or reaching `deadlineMs` cancels it too, but then the run closes itself:
 * unanswered tool calls get `aborted` error results, an assistant message with `stopReason: 'aborted'` ends the
 * transcript, and `agent_end` is emitted before completion.
 *
 * Each turn: `turn_start` → prompt/steering messages → `transformContext` → `convertToLlm` →
 * `transformSystemPrompt` → the model call (`message_start`, `message_update`×N) → `afterModelResponse` →
 * `message_end` → the tool batch → result messages → injected messages → `turn_end` → `shouldStopAfterTurn`.
 *
 * A provider failure ends the run with the failed message as its last message (the Observable completes). A hook
 * failure ends it with a closing `error` message and `agent_end`, and then errors the Observable with the
 * `HookError`.
 *
 * Throws {@link ConfigurationError} at once for invalid options.
 *
 * @example
 * runAgentLoop({ provider, model, prompts: [userMessage('Hi')], tools: [weather] })
 *   .pipe(textDeltas())
 *   .subscribe((text) => process.stdout.write(text));
 */
export function runAgentLoop(options: RunAgentLoopOptions): Observable<AgentEvent> {
  return runAgentLoopOn(options, undefined);
}

/**
 * {@link runAgentLoop} aborting `shared` instead of a controller of its own, for a caller that already holds one per
 * run (the Agent): one controller and one `abort` dispatch instead of two linked ones. `shared` must be fresh for
 * each subscription; `options.signal` is still honoured. Internal: not exported from the package.
 */
export function runAgentLoopOn(
  options: RunAgentLoopOptions,
  shared: AbortController | undefined,
  numbered = true,
): Observable<AgentEvent> {
  validateLoopOptions(options);
  return new Observable<AgentEvent>((subscriber) =>
    startLoop(options, shared, subscriber, (event) => subscriber.next(event), numbered),
  );
}

/**
 * Where {@link startAgentLoop} delivers a run: the events, then exactly one of `complete` or `error`. `next` is called
 * unbound (it is the loop's `emit` itself, with no closure in between): make it an arrow function.
 */
export interface LoopObserver {
  readonly next: (event: AgentEvent) => void;
  readonly error: (error: unknown) => void;
  readonly complete: () => void;
}

/**
 * Starts a run at once, delivering to `observer` directly: what subscribing to {@link runAgentLoopOn} does, without
 * the Subscriber an Observable puts between the loop and its consumer (two calls per event) — for the Agent, which
 * consumes its run itself and never leaves early. `observer` must not throw. Returns the teardown. Throws
 * {@link ConfigurationError} for invalid options. Internal: not exported from the package.
 */
export function startAgentLoop(
  options: RunAgentLoopOptions,
  shared: AbortController | undefined,
  observer: LoopObserver,
  numbered = true,
): () => void {
  validateLoopOptions(options);
  return startLoop(options, shared, observer, observer.next, numbered);
}

function startLoop(
  options: RunAgentLoopOptions,
  shared: AbortController | undefined,
  subscriber: { error(error: unknown): void; complete(): void },
  deliver: (event: AgentEvent) => void,
  numbered: boolean,
): () => void {
  // Every event is numbered as it leaves the run (`seq`, see EventPlace): stamped on the event the run just built,
  // before anyone sees it, so no copy per event. The Agent numbers them itself where it delivers them (`numbered`
  // false), in the same count as the events it adds to a run (`input_committed`).
  let seq = 0;
  const emit = numbered
    ? (event: AgentEvent): void => {
        (event as { seq?: number }).seq = ++seq;
        deliver(event);
      }
    : deliver;
  const controller = shared ?? new AbortController();
  const { signal } = controller;
  const abort = (reason: unknown) => {
    if (!signal.aborted) controller.abort(reason);
  };
  const onExternalAbort = () => abort(externalReason(options.signal!));
  if (options.signal?.aborted) abort(externalReason(options.signal));
  else options.signal?.addEventListener('abort', onExternalAbort);
  const limits = options.limits;
  const budgetSignal = limits?.budgetSignal;
  const onBudgetSpent = () => abort(budgetSignal!.reason);
  if (budgetSignal?.aborted) onBudgetSpent();
  else budgetSignal?.addEventListener('abort', onBudgetSpent);
  let deadline: Subscription | undefined;
  let deadlineAt = options.deadlineMs === undefined ? undefined : Date.now() + options.deadlineMs;
  if (limits?.deadlineAt !== undefined && !(deadlineAt !== undefined && deadlineAt <= limits.deadlineAt)) {
    deadlineAt = limits.deadlineAt;
  }
  if (deadlineAt !== undefined) {
    const own = deadlineAt !== limits?.deadlineAt;
    const message = own
      ? `Run aborted: deadline of ${options.deadlineMs} ms exceeded`
      : 'Run aborted: the deadline of the parent run passed';
    // The run's own deadline is `deadlineMs` from now, exactly: reading the clock a second time could shorten it by the
    // milliseconds in between (a loaded machine), which virtual time would see as a different frame.
    deadline = asyncScheduler.schedule(
      () => abort(new RunAbortedError('deadline', message)),
      own ? options.deadlineMs! : Math.max(0, deadlineAt - Date.now()),
    );
  }
  const ledger = options.budget === undefined ? undefined : new RunLedger(options.budget);
  const inherited = limits?.charge;
  const spend: ((usage: Usage) => void) | undefined =
    ledger === undefined
      ? inherited
      : inherited === undefined
        ? (usage) => ledger.charge(usage)
        : (usage) => (ledger.charge(usage), inherited(usage));

  const tools = options.tools ?? [];
  const runId = options.runId ?? randomRunId();
  const run: RunState = {
    runId,
    parent: options.parent,
    info: {
      runId,
      threadId: options.threadId,
      principal: options.principal,
      depth: options.parent === undefined ? 0 : options.parent.depth + 1,
      deadlineAt,
      budgetSignal:
        ledger === undefined
          ? budgetSignal
          : budgetSignal === undefined
            ? ledger.signal
            : AbortSignal.any([ledger.signal, budgetSignal]),
    },
    provider: options.provider,
    model: options.model,
    systemPrompt: options.systemPrompt ?? '',
    tools,
    toolsByName: new Map(tools.map((tool) => [tool.name, tool])),
    hooks: options.hooks ?? {},
    wrapModelCall: options.wrappers?.wrapModelCall,
    wrapToolCall: options.wrappers?.wrapToolCall,
    deadlineAt,
    getTools: options.getTools,
    untilStored: options.untilStored,
    spend,
    hookOwner: options.hookOwner ?? 'loop options',
    middlewareChain: options.middlewareChain,
    toolExecution: options.toolExecution ?? 'parallel',
    hasSequentialTool: tools.some((tool) => tool.executionMode === 'sequential'),
    toolConcurrency: options.toolConcurrency ?? Infinity,
    toolTimeoutMs: options.toolTimeoutMs,
    streamOptions: options.streamOptions,
    toolChoice: options.toolChoice,
    reasoning: options.reasoning,
    output: options.output,
    outputRetries: options.outputRetries ?? 2,
    blobs: undefined as unknown as BlobResolver,
    scan: undefined as unknown as TranscriptScan,
    outputPlan: options.output === undefined ? undefined : outputPlanOf(options.output),
    answer: options.output === undefined ? undefined : newAnswerState(),
    threadId: options.threadId,
    state: options.state ?? stateFromStored(options.extra ?? {}, undefined),
    patchCount: 0,
    hookInvocations: 0,
    sink: undefined as unknown as HookSink,
    outcome: undefined,
    getSteeringMessages: options.getSteeringMessages,
    getFollowUpMessages: options.getFollowUpMessages,
    transcript: [...(options.history ?? [])],
    newMessages: [],
    sideUsage: EMPTY_USAGE,
    chargeHook: undefined,
    signal,
    abort,
    emit,
    turnIndex: 0,
    turn: undefined,
    handoffs: options.handoffs,
  };
  options.handoffs?.attach(run);
  (run as { sink: HookSink }).sink = runSink(run);
  (run as { blobs: BlobResolver }).blobs = new BlobResolver(options.blobs, run.transcript);
  (run as { scan: TranscriptScan }).scan = new TranscriptScan(run.transcript);

  let finished = false;
  // What the run holds outside itself, released when it ends (a consumer that is not an Observable's subscriber
  // never calls the teardown after the end).
  const release = () => {
    options.signal?.removeEventListener('abort', onExternalAbort);
    budgetSignal?.removeEventListener('abort', onBudgetSpent);
    deadline?.unsubscribe();
  };
  const teardownDriver = drive(
    loop(run, options.prompts ?? [], options.resume),
    {
      complete: () => {
        finished = true;
        release();
        subscriber.complete();
      },
      error: (error) => {
        finished = true;
        release();
        subscriber.error(error);
      },
    },
    signal,
  );
  return () => {
    release();
    if (finished) return;
    // Tear the driver down first (no closing events for a subscriber that left), then fire the signal so that
    // running tools and hooks stop.
    teardownDriver();
    abort(new RunAbortedError('unsubscribed'));
  };
}

function externalReason(signal: AbortSignal): unknown {
  return isAbortError(signal.reason) ? signal.reason : new RunAbortedError('signal');
}

/** The run: `onRunStart`, a resumed batch if any, turns until nothing is left to do, `onRunEnd`, then `agent_end`. */
function* loop(run: RunState, prompts: readonly Message[], resume: ResumeBatch | undefined): Op<void> {
  const chain = run.middlewareChain;
  const start: AgentStartEvent =
    run.parent === undefined
      ? chain === undefined
        ? { type: 'agent_start', runId: run.runId }
        : { type: 'agent_start', runId: run.runId, middleware: chain }
      : chain === undefined
        ? { type: 'agent_start', runId: run.runId, parent: run.parent }
        : { type: 'agent_start', runId: run.runId, parent: run.parent, middleware: chain };
  run.emit(run.handoffs === undefined ? start : { ...start, agent: run.handoffs.active });
  let failure: unknown;
  let hasFailure = false;
  let pendingRequests: readonly ApprovalRequest[] | undefined;
  let deferred: readonly Message[] = [];
  try {
    yield* runStart(run);
    let more = false;
    if (resume !== undefined) {
      const batch = yield* resumeBatch(run, resume);
      run.handoffs?.settle();
      if (resume.abort !== undefined) throw new RunAbortedError('abort', `Run aborted: ${resume.abort}`);
      if (batch.held.length > 0) {
        // Suspended again (a wrapper held an approved call): the prompts wait with the deferred messages.
        ({ pendingRequests, deferred } = suspend(run));
        deferred = [...deferred, ...prompts];
      }
      more = !batch.terminate;
      if (batch.terminate) run.outcome = 'stopped';
    }
    let pending: readonly Message[] = [...prompts, ...(run.getSteeringMessages?.() ?? [])];
    if (pendingRequests === undefined && (resume === undefined || more || pending.length > 0)) {
      outer: for (;;) {
        if (resume === undefined) more = true;
        while (more || pending.length > 0) {
          const next = yield* turn(run, pending);
          // A handoff this turn took: the next turn is the target's.
          run.handoffs?.settle();
          pending = [];
          if (next === 'end') break outer;
          if (next === 'suspend') {
            ({ pendingRequests, deferred } = suspend(run));
            break outer;
          }
          more = next === 'more';
          pending = run.getSteeringMessages?.() ?? [];
        }
        pending = run.getFollowUpMessages?.() ?? [];
        if (pending.length === 0) break;
        resume = undefined;
      }
    }
  } catch (error) {
    if (error instanceof RunStopped) {
      // A stop decision: an ordinary end, typed by the decision (the transcript closes as for a failure or a cancel).
      run.outcome = error.outcome;
      if (error.outcome === 'stopped') run.stoppedBy = { by: error.by ?? 'middleware', reason: error.reason };
      run.abort(error);
      closeRun(run, error.outcome === 'cancelled', error);
    } else {
      const aborted = (run.signal.aborted && isAbortError(error)) || error instanceof RunAbortedError;
      run.outcome = aborted ? 'cancelled' : 'failed';
      if (!aborted) {
        hasFailure = true;
        failure = error;
      }
      // Whatever is still running (sibling tools, a hook) must stop: the run is over.
      if (!run.signal.aborted) run.abort(error);
      closeRun(run, aborted, error);
    }
  }
  const outcome = run.outcome ?? 'completed';
  try {
    yield* runEnd(run, outcome);
  } catch (error) {
    // A failing onRunEnd fails a run that had not failed yet; a cancelled run does not wait for it.
    if (!hasFailure && !(run.signal.aborted && isAbortError(error))) {
      hasFailure = true;
      failure = error;
      run.outcome = 'failed';
    }
  }
  const usage =
    run.sideUsage === EMPTY_USAGE ? usageOf(run.newMessages) : addUsage(usageOf(run.newMessages), run.sideUsage);
  run.emit({
    type: 'agent_end',
    runId: run.runId,
    messages: run.newMessages.slice(),
    outcome: run.outcome ?? outcome,
    usage,
    ...(pendingRequests === undefined ? {} : { pending: pendingRequests }),
    ...(deferred.length === 0 ? {} : { deferredMessages: deferred }),
    ...(run.answer === undefined ? {} : answerFields(run.answer)),
    ...(run.stoppedBy === undefined ? {} : { stoppedBy: run.stoppedBy }),
  });
  if (hasFailure) throw failure;
}

/** What `agent_end` says of a run with `output`: the value, or why there is none. */
function answerFields(answer: AnswerState): Pick<AgentEndEvent, 'output' | 'outputError'> {
  if (answer.done) return { output: answer.value };
  return {
    outputError: { reason: answer.spent ? 'invalid' : 'missing', issues: answer.issues, attempts: answer.attempts },
  };
}

/** The run suspends: the held requests and deferred messages of its current turn, which ends here (no turn_end). */
function suspend(run: RunState): { pendingRequests: readonly ApprovalRequest[]; deferred: readonly Message[] } {
  const suspended = { pendingRequests: run.turn?.held ?? [], deferred: run.turn?.deferred ?? [] };
  run.turn = undefined;
  run.outcome = 'suspended';
  return suspended;
}

/** `onRunStart`: every middleware's, in order; a `stop` decision ends the run before its first model call. */
function* runStart(run: RunState): Op<void> {
  const start = run.hooks.onRunStart;
  if (start === undefined) return;
  const ctx = hookContext(run, run.turnIndex);
  const answer = yield* callHook(run, 'onRunStart', undefined, () => start(ctx), undefined);
  if (isHookDecision(answer) && answer.kind === 'stop') throw new RunStopped(answer.outcome, answer.reason, answer.by);
}

/** `onRunEnd`: every middleware's, in order, with the outcome; their patches are applied before `agent_end`. */
function* runEnd(run: RunState, outcome: RunOutcome): Op<void> {
  const end = run.hooks.onRunEnd;
  if (end === undefined) return;
  const ctx = { ...hookContext(run, run.turnIndex), newMessages: run.newMessages.slice() } as RunEndContext;
  yield* callHook(run, 'onRunEnd', { outcome }, () => end(ctx, outcome), undefined);
}

function validateLoopOptions(options: RunAgentLoopOptions): void {
  const fail = (what: string): never => {
    throw new ConfigurationError(`runAgentLoop: ${what}`);
  };
  if (typeof options !== 'object' || options === null) fail('expected an options object');
  validateRunSettings(options, fail);
  if (typeof options.model !== 'object') fail('`model` must be a Model ({ id, provider })');
  if (options.output !== undefined) {
    const plan = outputPlanOf(options.output);
    const problem = strictCheck(plan, options.model) ?? finalToolClash(plan, options.tools);
    if (problem !== undefined) fail(`\`output\`: ${problem}`);
  }
  if (options.getTools !== undefined && typeof options.getTools !== 'function') fail('`getTools` must be a function');
  if (options.untilStored !== undefined && typeof options.untilStored !== 'function')
    fail('`untilStored` must be a function');
  if (options.principal !== undefined && !isPrincipal(options.principal))
    fail('`principal` must be a Principal ({ id: a non-empty string })');
  const { budget, limits } = options;
  if (budget !== undefined) {
    const bounds = [budget.usd, budget.tokens];
    if (bounds.every((bound) => bound === undefined) || bounds.some((bound) => bound !== undefined && !(bound > 0)))
      fail('`budget` must give a positive `usd`, `tokens`, or both');
  }
  if (limits !== undefined) {
    if (typeof limits !== 'object' || limits === null) fail('`limits` must be an object');
    if (limits.deadlineAt !== undefined && typeof limits.deadlineAt !== 'number')
      fail('`limits.deadlineAt` must be a time in milliseconds since the epoch');
    if (limits.charge !== undefined && typeof limits.charge !== 'function') fail('`limits.charge` must be a function');
    if (limits.budgetSignal !== undefined && !(limits.budgetSignal instanceof AbortSignal))
      fail('`limits.budgetSignal` must be an AbortSignal');
  }
}
