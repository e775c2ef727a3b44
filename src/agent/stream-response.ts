/**
 * One model call: the provider stream consumed once, each event passed on synchronously.
 * @module
 */
import { catchError, defer, isObservable, tap, throwError, type Observable } from 'rxjs';
import type { ModelCallNext, ModelRequest } from '../middleware/wrapper-types.js';
import { WrapperDecision } from '../middleware/compose-wrappers.js';
import { errorMessageOf, HookError, isAbortError, RunAbortedError } from '../types/errors.js';
import type { AssistantMessage, Message, ProviderErrorKind } from '../types/messages.js';
import type { ModelAttemptEvent, PreviousAttempt } from '../types/agent-events.js';
import type { ErrorEvent, StreamEvent } from '../types/stream-events.js';
import { EMPTY_USAGE } from '../types/usage.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamOptions, ToolChoice } from '../types/provider.js';
import { ABORTED, wait, type Op } from './drive.js';
import { closingMessage, RunStopped, turnContext, type RunState, type TurnState } from './run-state.js';

/**
 * Streams the model's answer to `messages`. Emits `message_start` at the first event, `message_update` for every
 * block event (synchronously, in the provider's `next`), and returns the final message. A failed call returns its
 * error message after emitting its `message_end`; a successful one is returned without `message_end`, which comes
 * once `afterModelResponse` has settled.
 *
 * A provider whose Observable errors, throws in `stream()`, or completes without a terminal event broke its contract;
 * the call still ends as an error message (kind `unknown`) so the transcript stays consistent. A run cancelled while
 * the call is in flight ends it as an `aborted` message (the stream is unsubscribed at once).
 */
export function* streamResponse(
  run: RunState,
  turn: TurnState,
  messages: readonly Message[],
  systemPrompt: string,
): Op<AssistantMessage> {
  const { runId, emit } = run;
  let terminal: AssistantMessage | undefined;
  const onEvent = (event: StreamEvent): void => {
    switch (event.type) {
      case 'done':
      case 'error':
        terminal = event.message;
        return;
      case 'start':
        if (turn.streaming === undefined) {
          turn.streaming = event.partial;
          emit({ type: 'message_start', runId, message: event.partial });
        }
        return;
      default:
        if (turn.streaming === undefined) emit({ type: 'message_start', runId, message: event.partial });
        turn.streaming = event.partial;
        emit({ type: 'message_update', runId, message: event.partial, streamEvent: event });
    }
  };

  const invocationId = `${runId}.${turn.index}`;
  // Cancelled while the call was in flight (a cancellation resumes the wait with ABORTED: no exception on the way out).
  let aborted = false;
  if (run.wrapModelCall === undefined) {
    // No wrappers: one attempt, the provider's stream consumed directly, with no operator between it and the loop
    // (the per-delta path).
    const { provider, model } = run;
    emitAttempt(run, turn, invocationId, 1, provider.id, model.id);
    const stream = openStream(run, turn, provider, model, messages, systemPrompt, run.toolChoice, run.streamOptions);
    if (!isObservable(stream)) {
      terminal = stream.message;
    } else {
      try {
        aborted = (yield wait(stream, undefined, onEvent, true)) === ABORTED;
      } catch (error) {
        aborted = run.signal.aborted;
        if (!aborted) terminal = failure(run, turn, `Provider ${provider.id} stream failed: ${errorMessageOf(error)}`);
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
        emitAttempt(run, turn, invocationId, attempt, to.provider, to.model, before);
        const stream = openStream(
          run,
          turn,
          req.provider,
          req.model,
          req.messages,
          req.systemPrompt,
          req.toolChoice,
          req.options,
        );
        if (!isObservable(stream)) return [stream];
        return stream.pipe(
          tap((event) => {
            if (event.type === 'error') {
              current.error = event.message.errorMessage ?? event.errorKind;
              current.errorKind = event.errorKind;
            }
          }),
          // A provider whose Observable errors broke its contract (failures are values): end the call as an error.
          catchError((error: unknown) =>
            run.signal.aborted
              ? throwError(() => error)
              : [
                  contractFailure(
                    req.provider.id,
                    req.model.id,
                    turn,
                    `Provider ${req.provider.id} stream failed: ${errorMessageOf(error)}`,
                  ),
                ],
          ),
        );
      });
    try {
      const wrapped = run.wrapModelCall(request, { ...turnContext(run, turn), invocationId }, send);
      aborted = (yield wait(wrapped, undefined, onEvent, true)) === ABORTED;
    } catch (error) {
      aborted = run.signal.aborted;
      if (!aborted) {
        if (error instanceof HookError) throw error; // a wrapper's bug
        if (error instanceof WrapperDecision) {
          // A wrapper's stop (the onion lets no other decision out of a model call).
          const { decision } = error;
          if (decision.kind === 'stop') throw new RunStopped(decision.outcome, decision.reason);
        }
        terminal = failure(run, turn, `Model call failed: ${errorMessageOf(error)}`);
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
        : {
            ...base,
            stopReason: 'aborted',
            errorMessage: common ? reason.message : errorMessageOf(reason),
            errorKind: 'aborted',
          };
  }
  terminal ??= failure(run, turn, `Provider ${run.provider.id} stream completed without a terminal event`);
  const message = terminal;
  if (turn.streaming === undefined) emit({ type: 'message_start', runId, message });
  turn.streaming = undefined;
  if (message.stopReason === 'error' || message.stopReason === 'aborted') {
    run.transcript.push(message);
    run.newMessages.push(message);
    turn.assistant = message;
    emit({ type: 'message_end', runId, message });
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
): void {
  const event: ModelAttemptEvent = {
    type: 'model_attempt',
    runId: run.runId,
    turnIndex: turn.index,
    invocationId,
    attemptId: `${invocationId}.${attempt}`,
    attempt,
    provider,
    model,
  };
  // The first attempt (every call's, the only one without wrappers) is the plain literal above: nothing more per turn.
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
  turn: TurnState,
  provider: Provider,
  model: Model,
  messages: readonly Message[],
  systemPrompt: string,
  toolChoice: ToolChoice | undefined,
  options: Omit<StreamOptions, 'signal'> | undefined,
): Observable<StreamEvent> | ErrorEvent {
  try {
    const stream: unknown = provider.stream(model, messages, {
      systemPrompt,
      tools: run.tools,
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      options: options === undefined ? { signal: run.signal } : { ...options, signal: run.signal },
    });
    if (isObservable(stream)) return stream as Observable<StreamEvent>;
    return contractFailure(
      provider.id,
      model.id,
      turn,
      `Provider ${provider.id} broke its contract: stream() must return an Observable, got ${kindOf(stream)}`,
    );
  } catch (error) {
    return contractFailure(
      provider.id,
      model.id,
      turn,
      `Provider ${provider.id} threw in stream(): ${errorMessageOf(error)}`,
    );
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function') return 'a Promise';
  return Array.isArray(value) ? 'an array' : typeof value;
}

/** The terminal event of an attempt whose provider broke its contract. */
function contractFailure(provider: string, model: string, turn: TurnState, errorMessage: string): ErrorEvent {
  return { type: 'error', message: failureMessage(provider, model, turn, errorMessage), errorKind: 'unknown' };
}

/** An error message for a model call that broke its contract. */
function failure(run: RunState, turn: TurnState, errorMessage: string): AssistantMessage {
  return failureMessage(run.provider.id, run.model.id, turn, errorMessage);
}

/** An error message keeping what was streamed so far (kind `unknown`: nobody classified it). */
function failureMessage(provider: string, model: string, turn: TurnState, errorMessage: string): AssistantMessage {
  const base = turn.streaming;
  return {
    role: 'assistant',
    content: base?.content ?? [],
    stopReason: 'error',
    errorMessage,
    errorKind: 'unknown',
    usage: base?.usage ?? EMPTY_USAGE,
    provider,
    model,
    timestamp: base?.timestamp ?? Date.now(),
  };
}
