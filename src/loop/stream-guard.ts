/**
 * The provider boundary: what a provider's stream must be for the loop to pass it on, checked as it arrives.
 * @module
 */
import { Observable } from 'rxjs';
import { assistantMessageProblem, ERROR_KINDS, wellFormedContent } from '../types/check-assistant-message.js';
import { describeValue, usageProblem } from '../types/check-tool-result.js';
import { errorMessageOf } from '../types/errors.js';
import type { AssistantMessage } from '../types/messages.js';
import type { ErrorEvent, StreamEvent, TerminalStreamEvent } from '../types/stream-events.js';
import { EMPTY_USAGE } from '../types/usage.js';

/** A value of a provider stream, as the guard reads it before knowing it is an event. */
interface Loose {
  readonly type?: unknown;
  readonly partial?: unknown;
  readonly contentIndex?: unknown;
  readonly delta?: unknown;
  readonly content?: unknown;
  readonly toolCall?: unknown;
  readonly message?: unknown;
  readonly errorKind?: unknown;
  readonly retryAfterMs?: unknown;
}

/**
 * The stream contract of one model call, checked event by event (DESIGN §3, docs/events.md). Each value must be a
 * stream event of a known type; a non-terminal event must carry `partial`, an assistant snapshot (`role`
 * `assistant`, a `content` array); a block event's `contentIndex` must point at a block of its kind in that snapshot;
 * a delta's `delta`, a `text_end`/`thinking_end`'s `content` must be strings and a `toolcall_end`'s `toolCall` an
 * object; the terminal event's message must be a well-formed assistant message ({@link assistantMessageProblem})
 * whose `stopReason` agrees with it (`done`: `stop`, `length`, `toolUse`, `blocked`; `error`: `error`, `aborted`, with a known
 * `errorKind`); and nothing may follow the terminal event. A missing `start`, or a `start` that comes again, is
 * tolerated (the loop opens its message at the first event either way).
 *
 * A few field reads per event (the per-delta path allocates nothing); the final message is checked in full, once.
 * One guard per attempt of a model call.
 */
export class StreamGuard {
  /** The last snapshot that passed: what is kept of the message when the stream breaks or is cut off. */
  partial: AssistantMessage | undefined = undefined;
  /** The terminal event, once it came (and passed). */
  terminal: TerminalStreamEvent | undefined = undefined;

  /**
   * `source` names who broke the contract in the error message (`Provider openai`); `provider` and `model` are
   * stamped on the error message.
   */
  constructor(
    private readonly source: string,
    private readonly provider: string,
    private readonly model: string,
  ) {}

  /** Checks the next value of the stream: `undefined` when it is a valid event, else the rule it breaks. */
  check(value: unknown): string | undefined {
    if (this.terminal !== undefined) return `emitted ${what(value)} after its terminal event`;
    if (typeof value !== 'object' || value === null) return `emitted ${what(value)}, which is not a stream event`;
    const event = value as Loose;
    const type = event.type;
    // The block type the event points at, and the field it must carry as a string (if any).
    let kind: string;
    let field: 'delta' | 'content' | undefined;
    switch (type) {
      case 'done':
      case 'error':
        return this.checkTerminal(event, type);
      case 'start':
        if (!isSnapshot(event.partial)) return `emitted start whose partial is not an assistant message snapshot`;
        this.partial = event.partial;
        return undefined;
      case 'text_start':
        kind = 'text';
        break;
      case 'thinking_start':
        kind = 'thinking';
        break;
      case 'toolcall_start':
        kind = 'toolCall';
        break;
      case 'text_delta':
        kind = 'text';
        field = 'delta';
        break;
      case 'thinking_delta':
        kind = 'thinking';
        field = 'delta';
        break;
      case 'toolcall_delta':
        kind = 'toolCall';
        field = 'delta';
        break;
      case 'text_end':
        kind = 'text';
        field = 'content';
        break;
      case 'thinking_end':
        kind = 'thinking';
        field = 'content';
        break;
      case 'toolcall_end':
        if (typeof event.toolCall !== 'object' || event.toolCall === null) {
          return `emitted toolcall_end whose toolCall is ${describeValue(event.toolCall)}`;
        }
        kind = 'toolCall';
        break;
      default:
        return `emitted ${what(value)}, which is not a stream event`;
    }
    if (field !== undefined && typeof event[field] !== 'string') {
      return `emitted ${type} whose ${field} is ${describeValue(event[field])}`;
    }
    const partial = event.partial;
    if (!isSnapshot(partial)) return `emitted ${type} whose partial is not an assistant message snapshot`;
    const index = event.contentIndex;
    // An index that is not a whole number within the snapshot reads `undefined` below.
    const block = typeof index === 'number' ? (partial.content as readonly unknown[])[index] : undefined;
    if (typeof block !== 'object' || block === null || (block as { type?: unknown }).type !== kind) {
      return `emitted ${type} at contentIndex ${describeValue(index)}, not a ${kind} block of its partial (${partial.content.length} blocks)`;
    }
    this.partial = partial;
    return undefined;
  }

  private checkTerminal(event: Loose, type: 'done' | 'error'): string | undefined {
    const problem = assistantMessageProblem(event.message);
    if (problem !== undefined) return `emitted ${type} whose message is not a valid assistant message: ${problem}`;
    const { stopReason } = event.message as AssistantMessage;
    if (type === 'done') {
      if (stopReason === 'error' || stopReason === 'aborted') {
        return `emitted done with stopReason "${stopReason}" (a failed call ends with an error event)`;
      }
    } else {
      if (stopReason !== 'error' && stopReason !== 'aborted') {
        return `emitted error with stopReason "${stopReason}" (an error event's message has stopReason error or aborted)`;
      }
      if (!ERROR_KINDS.has(event.errorKind)) {
        return `emitted error with errorKind ${describeValue(event.errorKind)}, which is not an error kind`;
      }
      const after = event.retryAfterMs;
      if (after !== undefined && !((after as number) >= 0 && Number.isFinite(after))) {
        return `emitted error whose retryAfterMs is ${describeValue(after)}`;
      }
    }
    this.terminal = event as TerminalStreamEvent;
    return undefined;
  }

  /**
   * The terminal event of a call whose stream broke `rule` (kind `unknown`): what was valid is kept — the content of
   * the terminal message if one passed, else the well-formed blocks of the last snapshot.
   */
  breach(rule: string): ErrorEvent {
    return { type: 'error', message: this.failure(`${this.source} broke its contract: ${rule}`), errorKind: 'unknown' };
  }

  /** An error message (kind `unknown`: nobody classified it) saying `errorMessage`, keeping what was valid. */
  failure(errorMessage: string): AssistantMessage {
    return failureMessage(this.provider, this.model, this.terminal?.message ?? this.partial, errorMessage);
  }
}

/**
 * An error message for a call that broke its contract or failed (kind `unknown`: nobody classified it), keeping the
 * well-formed part of `base`, the last snapshot received: its valid blocks, its usage and timestamp when valid.
 */
export function failureMessage(
  provider: string,
  model: string,
  base: AssistantMessage | undefined,
  errorMessage: string,
): AssistantMessage {
  return kept(base, provider, model, 'error', errorMessage, 'unknown');
}

/**
 * `message` itself when it is well-formed ({@link assistantMessageProblem}), else a well-formed message with its stop
 * reason and error, the valid blocks of its content, and its usage and timestamp when valid: for a message built from
 * a snapshot (a call cut off by cancellation), whose blocks were not all checked as they streamed.
 */
export function storable(message: AssistantMessage, provider: string, model: string): AssistantMessage {
  if (assistantMessageProblem(message) === undefined) return message;
  const { stopReason, errorMessage, errorKind } = message;
  return kept(message, provider, model, stopReason, errorMessage ?? 'the call ended', errorKind);
}

function kept(
  base: AssistantMessage | undefined,
  provider: string,
  model: string,
  stopReason: AssistantMessage['stopReason'],
  errorMessage: string,
  errorKind: AssistantMessage['errorKind'],
): AssistantMessage {
  const usage = base?.usage;
  const timestamp = base?.timestamp;
  return {
    role: 'assistant',
    content: base === undefined ? [] : wellFormedContent(base.content),
    stopReason,
    errorMessage,
    ...(errorKind !== undefined ? { errorKind } : {}),
    usage: usage !== undefined && usageProblem(usage) === undefined ? usage : EMPTY_USAGE,
    provider,
    model,
    timestamp: Number.isFinite(timestamp) ? timestamp! : Date.now(),
  };
}

/**
 * `stream`, guarded: a wrapped call's attempt as the layers around it see it. Valid events pass as they are; the
 * terminal event is held until the provider completes, then passed and the stream completes. A value that breaks the
 * contract ends the attempt with the guard's error event ({@link StreamGuard.breach}) and unsubscribes the provider; an
 * Observable error (unless the run was cancelled: then it goes on) or a completion without a terminal event ends it
 * with an error event saying so.
 */
export function guardStream(
  stream: Observable<unknown>,
  provider: string,
  model: string,
  signal: AbortSignal,
): Observable<StreamEvent> {
  return new Observable<StreamEvent>((subscriber) => {
    const guard = new StreamGuard(`Provider ${provider}`, provider, model);
    const end = (event: ErrorEvent | TerminalStreamEvent) => {
      subscriber.next(event);
      subscriber.complete();
    };
    // A subscriber that completed while the provider's subscribe ran tears this subscription down when it returns.
    return stream.subscribe({
      next: (value) => {
        if (subscriber.closed) return;
        const problem = guard.check(value);
        if (problem !== undefined) end(guard.breach(problem));
        else if (guard.terminal === undefined) subscriber.next(value as StreamEvent);
      },
      error: (error: unknown) => {
        if (signal.aborted) subscriber.error(error);
        else end({ type: 'error', message: guard.failure(streamFailed(provider, error)), errorKind: 'unknown' });
      },
      complete: () =>
        end(guard.terminal ?? { type: 'error', message: guard.failure(noTerminal(provider)), errorKind: 'unknown' }),
    });
  });
}

/** The error message of a call whose Observable errored. */
export function streamFailed(provider: string, error: unknown): string {
  return `Provider ${provider} stream failed: ${errorMessageOf(error)}`;
}

/** The error message of a call whose stream completed without a terminal event. */
export function noTerminal(provider: string): string {
  return `Provider ${provider} stream completed without a terminal event`;
}

function isSnapshot(partial: unknown): partial is AssistantMessage {
  if (typeof partial !== 'object' || partial === null) return false;
  const { role, content } = partial as { role?: unknown; content?: unknown };
  return role === 'assistant' && Array.isArray(content);
}

/** A value of a stream, named for an error message. */
function what(value: unknown): string {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const { type } = value as Loose;
    return typeof type === 'string' ? `an event of type ${describeValue(type)}` : 'an object without a type';
  }
  return describeValue(value);
}
