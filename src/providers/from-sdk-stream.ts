/**
 * The one skeleton every SDK-backed provider shares: a request as a cold, cancellable Observable of stream events.
 * Part of the provider kit (`cubepi/providers/kit`): it loads no SDK and no `node:` module.
 * @module
 */
import { Observable } from 'rxjs';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { StreamOptions } from '../types/provider.js';
import type { StreamEvent, TerminalStreamEvent } from '../types/stream-events.js';
import { classifyError, type SdkErrorClasses } from './classify-error.js';
import { MessageAssembler } from './message-assembler.js';

/**
 * Maps one API's wire events onto {@link MessageAssembler} calls: the only part of a provider that knows its wire.
 * A fresh mapper serves each request (built by {@link SdkStreamSpec.mapper} with that request's assembler); the
 * skeleton ({@link fromSdkStream}) does the rest: the request, cancellation, stall limits, classification.
 *
 * Its methods are called synchronously, one wire event at a time, in order. A method that throws (a wire event it
 * cannot place, an assembler call for a block that does not exist) ends the stream with an `error` event of kind
 * `unknown` ("Unexpected <api> stream event: …") keeping the content so far; the caller's run goes on.
 *
 * @example
 * const mapper = (asm: MessageAssembler): WireMapper<WireEvent> => ({
 *   map(event, emit) {
 *     if (event.type === 'text') emit(asm.textDelta(0, event.text));
 *     return event.type === 'end' ? asm.done('stop') : undefined;
 *   },
 *   end: () => asm.error('unavailable', 'The stream ended before its end event (truncated response)'),
 * });
 */
export interface WireMapper<TEvent> {
  /** Reads ids from the first wire event (response id, precise model), just before `start` is emitted. */
  identify?(event: TEvent): void;
  /**
   * Maps one wire event, passing the stream events it produces to `emit` (built with the assembler: `asm.startText()`,
   * `asm.textDelta(i, d)`, …). Returns the terminal event (`asm.done(…)` or `asm.error(…)`) when the wire says the
   * response is over: then the stream ends, the rest of the wire is not read and the connection is released.
   * Ignore event types you do not know (return `undefined`): APIs add them.
   */
  map(event: TEvent, emit: (event: StreamEvent) => void): TerminalStreamEvent | undefined;
  /**
   * The wire ended cleanly without `map` returning a terminal event: the terminal event to emit. Usually an `error`
   * of kind `unavailable` (a truncated response), unless the API has no end event of its own.
   */
  end(): TerminalStreamEvent;
}

/** What {@link fromSdkStream} needs to know about one request. */
export interface SdkStreamSpec<TEvent> {
  /** The provider id stamped on the message. */
  readonly provider: string;
  /** The model id stamped on the message (until the wire reports a more precise one). */
  readonly model: string;
  /** The API's name, for error messages (`Anthropic`, `OpenAI Chat Completions`). */
  readonly api: string;
  /** The caller's `StreamOptions.signal`. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Sends the request with `signal` (pass it to the SDK or to `fetch`: it aborts on unsubscribe, on the caller's
   * signal and on a stall); resolves once the response headers arrived, to the wire events. Called once, at
   * subscription. A rejection, or an error thrown by the iterator, is classified with `errors` and ends the stream
   * with an `error` event. Once `signal` aborted, how the iterator ends (quietly or by throwing) does not matter: the
   * skeleton checks the signal itself. The iterator's `return()` is called when the stream stops reading early.
   */
  readonly open: (signal: AbortSignal) => PromiseLike<AsyncIterable<TEvent>>;
  /** A mapper for this request, writing into `asm` (the assembler of this request). */
  readonly mapper: (asm: MessageAssembler) => WireMapper<TEvent>;
  /** The SDK's error classes (or your own), to classify what `open` and the iterator throw ({@link classifyError}). */
  readonly errors: SdkErrorClasses;
  /**
   * Stall limits in milliseconds ({@link stallTimeouts} resolves them from the request's `StreamOptions` and the
   * model): the first wire event must come within `firstEventMs` of subscribing, and each next one within `idleMs` of
   * the previous one. `Infinity` (or absent) turns a limit off.
   */
  readonly timeouts?: StallTimeouts | undefined;
}

/** The stall limits of one request, in milliseconds; `Infinity` turns one off. */
export interface StallTimeouts {
  /** From subscribing (the request sent) to the first wire event. */
  readonly firstEventMs: number;
  /** Between two wire events once the first one came. */
  readonly idleMs: number;
}

/**
 * The default stall limit for a model known not to reason (`model.reasoning === false`): 2 minutes. The longest
 * silence measured in recorded streams of such calls is a few seconds (server-side web search: 8 s).
 */
export const DEFAULT_STALL_TIMEOUT_MS = 120_000;

/**
 * The default stall limit for a model that reasons, or that the runtime knows nothing about: 10 minutes. A reasoning
 * model may think for minutes without sending an event (a recorded gpt-5 call at effort `low`, flex tier: 24 s before
 * its first output item, then 69 s of silence while it reasoned); this is ~9× that, and the SDKs' own request timeout.
 */
export const DEFAULT_REASONING_STALL_TIMEOUT_MS = 600_000;

/**
 * The stall limits of a request: `firstEventTimeoutMs` and `idleTimeoutMs` from its `StreamOptions` when given (a
 * positive number; `Infinity` turns a limit off), else {@link DEFAULT_STALL_TIMEOUT_MS} when `reasoning` is `false`
 * (the model is known not to reason: `Model.reasoning`, or the model table's) and
 * {@link DEFAULT_REASONING_STALL_TIMEOUT_MS} otherwise. Throws `ConfigurationError` for a value that is not a positive
 * number.
 *
 * @example
 * fromSdkStream({ ...spec, timeouts: stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning) });
 */
export function stallTimeouts(
  options: Pick<StreamOptions, 'firstEventTimeoutMs' | 'idleTimeoutMs'> | undefined,
  reasoning: boolean | undefined,
): StallTimeouts {
  const fallback = reasoning === false ? DEFAULT_STALL_TIMEOUT_MS : DEFAULT_REASONING_STALL_TIMEOUT_MS;
  return {
    firstEventMs: limit('firstEventTimeoutMs', options?.firstEventTimeoutMs, fallback),
    idleMs: limit('idleTimeoutMs', options?.idleTimeoutMs, fallback),
  };
}

function limit(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new ConfigurationError(
      `${name} must be a positive number of milliseconds (or Infinity), got ${typeof value === 'number' ? value : (JSON.stringify(value) ?? typeof value)}`,
    );
  }
  return value;
}

// setTimeout takes at most 2^31 - 1 ms; a longer limit (Infinity) is no limit.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A cold Observable of one model call through a vendor SDK. Subscribing sends the request; each wire event is mapped
 * synchronously onto stream events; exactly one terminal `done` or `error` follows, then completion.
 *
 * - **Failures are values.** An HTTP error, a dropped connection, a chunk that is not JSON, a wire event the mapper
 *   cannot place, a stream that ends without its terminal event: each becomes the terminal `error` event, classified
 *   ({@link classifyError}), with the content received so far kept.
 * - **Unsubscribing** aborts the request (the HTTP connection closes, also while waiting for the first byte) and
 *   nothing more is emitted.
 * - **`signal` aborting** while subscribed aborts the request too, and ends the stream at once with an `error` event
 *   whose `stopReason` is `aborted`. An already aborted signal sends no request.
 * - **A stall** (no wire event within `timeouts.firstEventMs` of subscribing, or within `timeouts.idleMs` of the
 *   previous one) aborts the request and ends the stream with an `error` event of kind `timeout`, keeping what was
 *   received: the SDKs' own timeout covers only the wait for the response headers.
 *
 * Used by every built-in SDK provider, and exported (`cubepi/providers/kit`) for yours: over another Stainless-style
 * SDK, or over plain `fetch` and server-sent events. See docs/provider-kit.md for a complete provider.
 *
 * @example
 * stream(model, messages, request = {}) {
 *   return fromSdkStream({
 *     provider: this.id, model: model.id, api: 'Acme',
 *     signal: request.options?.signal,
 *     timeouts: stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning),
 *     open: (signal) => client.chat.create({ ...toAcmeRequest(model, messages, request), stream: true }, { signal }),
 *     mapper: (asm) => acmeWireMapper(asm, model),
 *     errors: { APIError, APIConnectionError, APIUserAbortError },
 *   });
 * }
 */
export function fromSdkStream<TEvent>(spec: SdkStreamSpec<TEvent>): Observable<StreamEvent> {
  return new Observable<StreamEvent>((subscriber) => {
    const controller = new AbortController();
    const external = spec.signal;
    const asm = new MessageAssembler({ provider: spec.provider, model: spec.model });
    let finished = false;
    let started = false;

    // Stall detection: one timer at a time, never reset per event (the per-delta path only stores a timestamp). When
    // it fires, it re-arms for what is left since the last event, or ends the call.
    const firstEventMs = spec.timeouts?.firstEventMs ?? Infinity;
    const idleMs = spec.timeouts?.idleMs ?? Infinity;
    let lastEventAt = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (ms: number, check: () => void): void => {
      timer = ms > MAX_TIMER_MS ? undefined : setTimeout(check, ms);
    };
    const checkFirst = (): void => {
      timer = undefined;
      // Cleared at the first event: firing means there was none.
      if (!finished) stalled(`no stream event within ${firstEventMs} ms (firstEventTimeoutMs)`);
    };
    function checkIdle(): void {
      timer = undefined;
      if (finished) return;
      const left = lastEventAt + idleMs - Date.now();
      if (left > 0) return arm(left, checkIdle);
      stalled(`no stream event for ${idleMs} ms (idleTimeoutMs)`);
    }
    const stalled = (why: string): void => {
      finish(asm.error('timeout', `${spec.api} stream stalled: ${why}; the request was aborted`));
    };

    const finish = (event: TerminalStreamEvent): void => {
      if (finished) return;
      finished = true;
      if (timer !== undefined) clearTimeout(timer);
      external?.removeEventListener('abort', onExternalAbort);
      if (!started && event.type === 'done') subscriber.next(asm.start());
      subscriber.next(event);
      subscriber.complete();
      // Releases the connection when the terminal event came before the server closed it.
      controller.abort();
    };
    const emit = (event: StreamEvent): void => {
      if (!finished) subscriber.next(event);
    };
    const fail = (error: unknown): void => {
      const { kind, message, retryAfterMs } = classifyError(error, spec.errors);
      finish(asm.error(kind, message, retryAfterMs));
    };
    function onExternalAbort(): void {
      finish(asm.error('aborted', 'Request aborted'));
    }

    const run = async (): Promise<void> => {
      let iterator: AsyncIterator<TEvent>;
      try {
        iterator = (await spec.open(controller.signal))[Symbol.asyncIterator]();
      } catch (error) {
        if (!controller.signal.aborted) fail(error);
        return;
      }
      try {
        const mapper = spec.mapper(asm);
        for (;;) {
          let step: IteratorResult<TEvent>;
          try {
            step = await iterator.next();
          } catch (error) {
            if (!controller.signal.aborted) fail(error);
            return;
          }
          // The SDKs' iterators end quietly when aborted: only the signal tells an abort from a clean end.
          if (controller.signal.aborted) return;
          if (step.done) return finish(mapper.end());
          lastEventAt = Date.now();
          if (!started) {
            started = true;
            if (timer !== undefined) clearTimeout(timer);
            arm(idleMs, checkIdle);
            mapper.identify?.(step.value);
            subscriber.next(asm.start());
          }
          const terminal = mapper.map(step.value, emit);
          if (terminal !== undefined) return finish(terminal);
          if (finished) return;
        }
      } catch (error) {
        // The mapper (or the assembler under it) rejected a wire event: unexpected data from the server, not a bug
        // worth crashing the caller's run for.
        finish(asm.error('unknown', `Unexpected ${spec.api} stream event: ${errorMessageOf(error)}`));
      } finally {
        // Lets the SDK's generator run its own cleanup when we stopped reading before its end.
        iterator.return?.().then(undefined, () => undefined);
      }
    };

    if (external?.aborted) {
      onExternalAbort();
      return;
    }
    external?.addEventListener('abort', onExternalAbort, { once: true });
    arm(firstEventMs, checkFirst);
    void run();
    return () => {
      finished = true;
      if (timer !== undefined) clearTimeout(timer);
      external?.removeEventListener('abort', onExternalAbort);
      controller.abort();
    };
  });
}
