/**
 * One model call: the provider stream consumed once, each event passed on synchronously.
 * @module
 */
import type { Observable } from 'rxjs';
import { errorMessageOf } from '../types/errors.js';
import type { AssistantMessage, Message, ProviderErrorKind } from '../types/messages.js';
import type { StreamEvent } from '../types/stream-events.js';
import { EMPTY_USAGE } from '../types/usage.js';
import { suspend, type Op } from './drive.js';
import type { RunState, TurnState } from './run-state.js';

/**
 * Streams the model's answer to `messages`. Emits `message_start` at the first event, `message_update` for every
 * block event (synchronously, in the provider's `next`), and returns the final message. A failed call returns its
 * error message after emitting its `message_end`; a successful one is returned without `message_end`, which comes
 * once `afterModelResponse` has settled.
 *
 * A provider whose Observable errors, throws in `stream()`, or completes without a terminal event broke its contract;
 * the call still ends as an error message (kind `unknown`) so the transcript stays consistent.
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

  let source: Observable<StreamEvent> | undefined;
  try {
    source = run.provider.stream(run.model, messages, {
      systemPrompt,
      tools: run.tools,
      ...(run.toolChoice !== undefined ? { toolChoice: run.toolChoice } : {}),
      options: run.streamOptions === undefined ? { signal: run.signal } : { ...run.streamOptions, signal: run.signal },
    });
  } catch (error) {
    terminal = failure(run, turn, `Provider ${run.provider.id} threw in stream(): ${errorMessageOf(error)}`);
  }
  if (source !== undefined) {
    try {
      yield* suspend(source, undefined, onEvent);
    } catch (error) {
      // Cancellation is closed by the loop, from the last snapshot.
      if (run.signal.aborted) throw run.signal.reason;
      terminal = failure(run, turn, `Provider ${run.provider.id} stream failed: ${errorMessageOf(error)}`);
    }
    terminal ??= failure(run, turn, `Provider ${run.provider.id} stream completed without a terminal event`);
  }
  const message = terminal!;
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

/** An error message for a provider that broke its contract, keeping what it streamed. */
function failure(
  run: RunState,
  turn: TurnState,
  errorMessage: string,
  kind: ProviderErrorKind = 'unknown',
): AssistantMessage {
  const base = turn.streaming;
  return {
    role: 'assistant',
    content: base?.content ?? [],
    stopReason: 'error',
    errorMessage,
    errorKind: kind,
    usage: base?.usage ?? EMPTY_USAGE,
    provider: run.provider.id,
    model: run.model.id,
    timestamp: base?.timestamp ?? Date.now(),
  };
}
