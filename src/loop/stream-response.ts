/**
 * One model call: the provider stream consumed once, each event passed on synchronously.
 * @module
 */
import { defer, isObservable, tap, type Observable } from 'rxjs';
import type { ModelCallNext, ModelRequest } from '../middleware/wrapper-types.js';
import { WrapperDecision } from '../middleware/compose-wrappers.js';
import { errorMessageOf, HookError, isAbortError, RunAbortedError } from '../types/errors.js';
import { isRecordOnly, type AssistantMessage, type Message, type ProviderErrorKind } from '../types/messages.js';
import type { ModelAttemptEvent, PreviousAttempt } from '../types/agent-events.js';
import type { ErrorEvent, StreamEvent } from '../types/stream-events.js';
import type { Model, ModelIncapability } from '../types/model.js';
import { modelIncapabilityWith } from '../middleware/model-incapability.js';
import type { Provider, StreamOptions, StreamRequest, ToolChoice } from '../types/provider.js';
import { attemptExtras, NO_EXTRAS, type AttemptExtras } from './attempt-extras.js';
import { ABORTED, wait, type Op } from './drive.js';
import { closingMessage, RunStopped, turnContext, type RunState, type TurnState } from './run-state.js';
import { failureMessage, guardStream, noTerminal, storable, streamFailed, StreamGuard } from './stream-guard.js';

/**
 * Streams the model's answer to `messages`. Emits `message_start` at the first event, `message_update` for every
 * block event (synchronously, in the provider's `next`), and returns the final message. A failed call returns its
 * error message after emitting its `message_end`; a successful one is returned without `message_end`, which comes
 * once `afterModelResponse` has settled.
 *
 * Every value the provider emits passes the {@link StreamGuard} first (a few field reads per event; the final
 * message in full, once). A provider that breaks its contract — a value that is not a valid event, a malformed final
 * message, anything after the terminal event, an Observable error, a throw in `stream()`, something else than an
 * Observable, a completion without a terminal event — ends the call as an error message (kind `unknown`, the
 * `errorMessage` naming the broken rule, the well-formed part of what streamed kept), and nothing it sent malformed
 * reaches an event or the transcript. A run cancelled while the call is in flight ends it as an `aborted` message (the
 * stream is unsubscribed at once).
 */
export function* streamResponse(
  run: RunState,
  turn: TurnState,
  messages: readonly Message[],
  systemPrompt: string,
): Op<AssistantMessage> {
  const { runId, emit } = run;
  let terminal: AssistantMessage | undefined;
  // Without wrappers, the provider's own stream; with them, what the wrappers emit (each attempt guarded inside).
  const guard = new StreamGuard(
    run.wrapModelCall === undefined ? `Provider ${run.provider.id}` : 'The wrapped model call',
    run.provider.id,
    run.model.id,
  );
  const onEvent = (value: unknown): void => {
    const problem = guard.check(value);
    // Rare: thrown into the wait, which ends (the stream is unsubscribed) and the call with it.
    if (problem !== undefined) throw new StreamBreach(guard.breach(problem).message);
    const event = value as StreamEvent;
    switch (event.type) {
      case 'done':
      case 'error':
        return; // held by the guard: the call ends when the stream completes
      case 'start':
        if (turn.streaming === undefined) {
          turn.streaming = event.partial;
          emit({ type: 'message_start', runId, message: event.partial, seq: 0 });
        }
        return;
      default:
        if (turn.streaming === undefined) emit({ type: 'message_start', runId, message: event.partial, seq: 0 });
        turn.streaming = event.partial;
        emit({ type: 'message_update', runId, message: event.partial, streamEvent: event, seq: 0 });
    }
  };

  const invocationId = `${runId}.${turn.index}`;
  // Cancelled while the call was in flight (a cancellation resumes the wait with ABORTED: no exception on the way out).
  let aborted = false;
  if (run.wrapModelCall === undefined) {
    // No wrappers: one attempt, the provider's stream consumed directly, with no operator between it and the loop
    // (the per-delta path).
    const { provider, model } = run;
    const extras = attemptExtras(run, model);
    if (extras !== NO_EXTRAS) turn.attemptOutput = extras.output;
    const incapable =
      outputRefusal(extras) ??
      modelIncapabilityWith(model, { messages, systemPrompt, tools: run.tools, options: run.streamOptions }, run.scan);
    emitAttempt(run, turn, invocationId, 1, provider.id, model.id, undefined, incapable, extras);
    const stream =
      incapable === undefined
        ? openStream(run, provider, model, messages, systemPrompt, run.toolChoice, run.streamOptions, extras)
        : refusal(provider.id, model.id, incapable);
    if (!isObservable(stream)) {
      terminal = stream.message;
    } else {
      try {
        aborted = (yield wait(stream, undefined, onEvent, true)) === ABORTED;
      } catch (error) {
        aborted = run.signal.aborted;
        if (!aborted)
          terminal = error instanceof StreamBreach ? error.ending : guard.failure(streamFailed(provider.id, error));
      }
    }
  } else {
    const request: ModelRequest = {
      provider: run.provider,
      model: run.model,
      messages,
      systemPrompt,
      tools: run.tools,
      ...(run.toolChoice !== undefined ? { toolChoice: run.toolChoice } : {}),
      ...(run.streamOptions !== undefined ? { options: run.streamOptions } : {}),
    };
    let attempt = 0;
    let previous: AttemptRecord | undefined;
    // The call itself, the innermost layer of the onion: every subscription is an attempt (announced, and a move to
    // another model announced before it).
    const send: ModelCallNext = (req) =>
      defer(() => {
        attempt++;
        const to = { provider: req.provider.id, model: req.model.id };
        if (previous !== undefined && (previous.provider !== to.provider || previous.model !== to.model)) {
          const from = { provider: previous.provider, model: previous.model };
          const reason = previous.error;
          emit({
            type: 'model_fallback',
            runId,
            turnIndex: turn.index,
            invocationId,
            from,
            to,
            ...(reason ? { reason } : {}),
          });
        }
        // Its own record (not `to`, which the model_fallback event carries): a failure is noted on it below.
        const current: AttemptRecord = { provider: to.provider, model: to.model, attempt };
        const before = previous;
        previous = current;
        // A request the model cannot take is not sent: the attempt says why and ends as an error at once.
        const extras = attemptExtras(run, req.model);
        // The last attempt's mode is the one the answer comes in (an earlier one failed, or the answer is its own).
        if (extras !== NO_EXTRAS) turn.attemptOutput = extras.output;
        const incapable = outputRefusal(extras) ?? modelIncapabilityWith(req.model, req, run.scan);
        emitAttempt(run, turn, invocationId, attempt, to.provider, to.model, before, incapable, extras);
        const stream =
          incapable === undefined
            ? openStream(
                run,
                req.provider,
                req.model,
                req.messages,
                req.systemPrompt,
                req.toolChoice,
                req.options,
                extras,
              )
            : refusal(req.provider.id, req.model.id, incapable);
        if (!isObservable(stream)) {
          current.error = stream.message.errorMessage ?? stream.errorKind;
          current.errorKind = stream.errorKind;
          return [stream];
        }
        // The provider boundary, per attempt: the wrappers see only valid events, one terminal, then completion.
        return guardStream(stream, req.provider.id, req.model.id, run.signal).pipe(
          tap((event) => {
            if (event.type === 'error') {
              current.error = event.message.errorMessage ?? event.errorKind;
              current.errorKind = event.errorKind;
            }
          }),
        );
      });
    try {
      const wrapped = run.wrapModelCall(request, { ...turnContext(run, turn), invocationId }, send);
      aborted = (yield wait(wrapped, undefined, onEvent, true)) === ABORTED;
    } catch (error) {
      aborted = run.signal.aborted;
      if (!aborted && error instanceof StreamBreach) terminal = error.ending;
      else if (!aborted) {
        if (error instanceof HookError) throw error; // a wrapper's bug
        if (error instanceof WrapperDecision) {
          // A wrapper's stop (the onion lets no other decision out of a model call).
          const { decision } = error;
          if (decision.kind === 'stop') throw new RunStopped(decision.outcome, decision.reason, decision.by);
        }
        terminal = guard.failure(`Model call failed: ${errorMessageOf(error)}`);
      }
    }
  }
  if (aborted) {
    // What was received so far (the last snapshot) ends as `aborted` with the cancellation's message; the turn and the
    // run then close like after a provider's own `aborted` error, through the same code. A signal aborted by a failure
    // of the run, not a cancellation, is rethrown. Inline, and the common reason (a RunAbortedError) decided without a
    // helper: nothing more to compile on a process's first cancellation, which a cancelled run settles by.
    const reason: unknown = run.signal.reason;
    const common = reason instanceof RunAbortedError;
    if (!common && !isAbortError(reason)) throw reason;
    const base = turn.streaming;
    terminal =
      base === undefined
        ? closingMessage(run, true, reason)
        : // The snapshot passed only the per-event checks: a block it holds may not be well-formed.
          storable(
            {
              ...base,
              stopReason: 'aborted',
              errorMessage: common ? reason.message : errorMessageOf(reason),
              errorKind: 'aborted',
            },
            run.provider.id,
            run.model.id,
          );
  }
  terminal ??= guard.terminal?.message ?? guard.failure(noTerminal(run.provider.id));
  const message = terminal;
  if (turn.streaming === undefined) emit({ type: 'message_start', runId, message, seq: 0 });
  turn.streaming = undefined;
  if (isRecordOnly(message)) {
    run.transcript.push(message);
    run.newMessages.push(message);
    turn.assistant = message;
    emit({ type: 'message_end', runId, message, seq: 0 });
  } else {
    turn.response = message;
  }
  return message;
}

/** What the loop remembers of an attempt of a wrapped call, for the `model_fallback` and `model_attempt` after it. */
interface AttemptRecord {
  readonly provider: string;
  readonly model: string;
  readonly attempt: number;
  error?: string;
  errorKind?: ProviderErrorKind;
}

/** Announces attempt `attempt` of the model call `invocationId` (and how the attempt before it ended). */
function emitAttempt(
  run: RunState,
  turn: TurnState,
  invocationId: string,
  attempt: number,
  provider: string,
  model: string,
  before?: AttemptRecord,
  incapable?: ModelIncapability,
  extras?: AttemptExtras,
): void {
  const attemptId = `${invocationId}.${attempt}`;
  if (before === undefined && incapable === undefined && (extras === undefined || extras === NO_EXTRAS)) {
    // The plain first attempt (every call's without wrappers, output or reasoning): one literal, with the slot the
    // run's numbering fills (`seq`, in place: no property added to the event after it is built).
    return run.emit({
      type: 'model_attempt',
      runId: run.runId,
      turnIndex: turn.index,
      invocationId,
      attemptId,
      attempt,
      provider,
      model,
      seq: 0,
    });
  }
  let base: ModelAttemptEvent = {
    type: 'model_attempt',
    runId: run.runId,
    turnIndex: turn.index,
    invocationId,
    attemptId,
    attempt,
    provider,
    model,
  };
  if (extras !== undefined && extras !== NO_EXTRAS) {
    if (extras.output !== undefined) base = { ...base, output: extras.output };
    if (extras.reasoning !== undefined) base = { ...base, reasoning: extras.reasoning };
  }
  const event = incapable === undefined ? base : { ...base, incapable };
  // A first attempt with output, reasoning or a refusal: no `previous`.
  if (before === undefined) return run.emit(event);
  const previous: PreviousAttempt = {
    attemptId: `${invocationId}.${before.attempt}`,
    ...(before.errorKind !== undefined ? { errorKind: before.errorKind } : {}),
    ...(before.error !== undefined ? { error: before.error } : {}),
  };
  run.emit({ ...event, previous });
}

/** Calls `provider.stream()`: its stream, or the terminal event of a provider that threw instead of answering. */
function openStream(
  run: RunState,
  provider: Provider,
  model: Model,
  messages: readonly Message[],
  systemPrompt: string,
  toolChoice: ToolChoice | undefined,
  options: Omit<StreamOptions, 'signal'> | undefined,
  extras: AttemptExtras,
): Observable<StreamEvent> | ErrorEvent {
  try {
    const request: StreamRequest = {
      systemPrompt,
      tools: run.tools,
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      options: options === undefined ? { signal: run.signal } : { ...options, signal: run.signal },
    };
    const stream: unknown = provider.stream(
      model,
      messages,
      extras === NO_EXTRAS ? request : withExtras(request, extras),
    );
    if (isObservable(stream)) return stream as Observable<StreamEvent>;
    return contractFailure(
      provider.id,
      model.id,
      `Provider ${provider.id} broke its contract: stream() must return an Observable, got ${kindOf(stream)}`,
    );
  } catch (error) {
    return contractFailure(
      provider.id,
      model.id,
      `Provider ${provider.id} threw in stream(): ${errorMessageOf(error)}`,
    );
  }
}

/**
 * `request` with what an attempt's extras add: the reasoning, the native output, the final tool (and the tool choice
 * that makes the model call a tool, unless the request has one), the instructions.
 */
function withExtras(request: StreamRequest, extras: AttemptExtras): StreamRequest {
  const { reasoning, native, finalTool, instructions, toolChoice } = extras;
  return {
    ...request,
    ...(toolChoice !== undefined && request.toolChoice === undefined ? { toolChoice } : {}),
    ...(instructions !== undefined
      ? { systemPrompt: request.systemPrompt ? `${request.systemPrompt}\n\n${instructions}` : instructions }
      : {}),
    ...(finalTool !== undefined ? { tools: [...(request.tools ?? []), finalTool] } : {}),
    ...(reasoning !== undefined ? { reasoning } : {}),
    ...(native !== undefined ? { output: native } : {}),
  };
}

/** The incapability of an attempt whose model cannot take the run's `output` as configured. */
function outputRefusal(extras: AttemptExtras): ModelIncapability | undefined {
  return extras.refused === undefined ? undefined : { reason: 'output', message: extras.refused };
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function') return 'a Promise';
  return Array.isArray(value) ? 'an array' : typeof value;
}

/**
 * The terminal event of an attempt that was not sent because the model cannot take the request: `context_overflow`
 * for a request over its window (what the vendor would have answered, so `Compaction` and `fallback` react the same),
 * else `model_incapable`; the message says why.
 */
function refusal(provider: string, model: string, incapable: ModelIncapability): ErrorEvent {
  const errorKind = incapable.reason === 'context_window' ? 'context_overflow' : 'model_incapable';
  return {
    type: 'error',
    message: { ...failureMessage(provider, model, undefined, incapable.message), errorKind },
    errorKind,
  };
}

/** The terminal event of an attempt whose provider broke its contract before streaming anything. */
function contractFailure(provider: string, model: string, errorMessage: string): ErrorEvent {
  return { type: 'error', message: failureMessage(provider, model, undefined, errorMessage), errorKind: 'unknown' };
}

/** Thrown by the guard into the wait of an unwrapped call: the stream broke its contract; `message` ends the call. */
class StreamBreach extends Error {
  constructor(readonly ending: AssistantMessage) {
    super(ending.errorMessage);
  }
}
