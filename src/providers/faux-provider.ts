/**
 * A deterministic, scripted provider for tests, examples and benchmarks. No network.
 * @module
 */
import { asapScheduler, asyncScheduler, Observable, type SchedulerLike, type Subscription } from 'rxjs';
import type { AssistantContent } from '../types/content.js';
import { errorMessageOf } from '../types/errors.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest, ToolDefinition } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { computeUsage } from '../types/usage.js';
import { MessageAssembler } from './message-assembler.js';

/** What a response factory learns about the call, as the model received it (after every hook). */
export interface FauxCallContext {
  readonly systemPrompt: string | undefined;
  readonly tools: readonly ToolDefinition[];
  /** 0 for the provider's first call. */
  readonly callIndex: number;
}

/** A scripted response: a message, or a function that builds one from what the model receives. */
export type FauxResponse =
  AssistantMessage | ((messages: readonly Message[], model: Model, context: FauxCallContext) => AssistantMessage);

/** Options of {@link FauxProvider}. */
export interface FauxProviderOptions {
  /** The initial queue. */
  readonly responses?: readonly FauxResponse[] | undefined;
  /** The provider id stamped on messages; `faux` by default. */
  readonly id?: string | undefined;
  /** Characters per delta (text, thinking, argument JSON); 4 by default. */
  readonly chunkSize?: number | undefined;
  /**
   * Milliseconds between chunks. By default a response streams in one synchronous burst right after the request
   * "arrives" (one `asapScheduler` hop after subscription); with a delay, each chunk is a separate task on
   * `scheduler`, so the stream can be steered, aborted or observed mid-way.
   */
  readonly delayMs?: number | undefined;
  /**
   * The scheduler for pacing (default `asyncScheduler`). Inside `TestScheduler.run()` both the start and the pacing
   * run in virtual time.
   */
  readonly scheduler?: SchedulerLike | undefined;
}

/**
 * A provider that streams scripted responses from a FIFO queue, in realistic small chunks: `start`, then per block
 * `*_start`, deltas (text, thinking, tool-call arguments as JSON fragments) and `*_end`, then `done` (or `error` for a
 * scripted error message). Usage is estimated (4 characters a token) unless the scripted message carries its own.
 *
 * An empty queue is a provider failure like any other: an `error` event "No more faux responses queued". Each
 * subscription takes one response. Unsubscribing stops the stream between chunks; aborting `options.signal` ends it
 * with an `aborted` error event.
 *
 * @example
 * const faux = new FauxProvider({ responses: [fauxMessage('Hello!')] });
 * const agent = new Agent({ provider: faux, model: 'faux' });
 * await agent.prompt('Hi'); // [user, assistant "Hello!"]
 */
export class FauxProvider implements Provider {
  readonly id: string;
  private queue: FauxResponse[];
  private calls = 0;
  private readonly chunkSize: number;
  private readonly delayMs: number;
  private readonly scheduler: SchedulerLike;

  constructor(options: FauxProviderOptions = {}) {
    this.id = options.id ?? 'faux';
    this.queue = [...(options.responses ?? [])];
    this.chunkSize = Math.max(1, Math.floor(options.chunkSize ?? 4));
    this.delayMs = Math.max(0, options.delayMs ?? 0);
    this.scheduler = options.scheduler ?? asyncScheduler;
  }

  /** How many requests were sent (subscriptions to `stream()`). */
  get callCount(): number {
    return this.calls;
  }

  /** How many scripted responses are still queued. */
  get pendingResponseCount(): number {
    return this.queue.length;
  }

  /** Replaces the queue. */
  setResponses(responses: readonly FauxResponse[]): void {
    this.queue = [...responses];
  }

  /** Adds responses to the end of the queue. */
  appendResponses(responses: readonly FauxResponse[]): void {
    this.queue.push(...responses);
  }

  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    return new Observable<StreamEvent>((subscriber) => {
      const callIndex = this.calls++;
      const response = this.queue.shift();
      const signal = request.options?.signal;
      const asm = new MessageAssembler({ provider: this.id, model: model.id });
      let script: Iterator<() => StreamEvent> | undefined;
      let pending: Subscription | undefined;
      let finished = false;

      const finish = (event: StreamEvent) => {
        finished = true;
        signal?.removeEventListener('abort', onAbort);
        subscriber.next(event);
        subscriber.complete();
      };
      function onAbort() {
        if (finished) return;
        pending?.unsubscribe();
        finish(asm.error('aborted', 'Request aborted'));
      }

      // Emits chunks until the script ends, the subscriber leaves, or (with pacing) the next chunk is due later.
      // A failure inside the script (a message it cannot read) is the call's error event, as for a real provider: an
      // exception thrown from a scheduled callback would reach nobody and leave the call hanging.
      const pump = (): void => {
        pending = undefined;
        try {
          while (!finished && !subscriber.closed) {
            const step = script!.next();
            if (step.done) return;
            const event = step.value();
            if (event.type === 'done' || event.type === 'error') return finish(event);
            subscriber.next(event);
            if (this.delayMs > 0 && event.type !== 'start') {
              pending = this.scheduler.schedule(pump, this.delayMs);
              return;
            }
          }
        } catch (error) {
          if (!finished && !subscriber.closed)
            finish(asm.error('unknown', `Faux provider failed: ${errorMessageOf(error)}`));
        }
      };

      const begin = (): void => {
        if (signal?.aborted) return onAbort();
        let scripted: AssistantMessage;
        if (response === undefined) {
          return finish(asm.error('unknown', 'No more faux responses queued'));
        }
        try {
          scripted =
            typeof response === 'function'
              ? response(messages, model, { systemPrompt: request.systemPrompt, tools: request.tools ?? [], callIndex })
              : response;
        } catch (error) {
          return finish(
            asm.error('unknown', `Faux response factory threw: ${(error as Error)?.message ?? String(error)}`),
          );
        }
        if (scripted.responseId !== undefined) asm.setResponseId(scripted.responseId);
        script = this.steps(asm, scripted, messages, model, request);
        pump();
      };

      signal?.addEventListener('abort', onAbort);
      // The request "arrives" asynchronously, like a real one: a subscriber can still unsubscribe synchronously.
      pending = asapScheduler.schedule(begin);
      return () => {
        finished = true;
        signal?.removeEventListener('abort', onAbort);
        pending?.unsubscribe();
      };
    });
  }

  /** The scripted message as a sequence of event builders, one per chunk. */
  private *steps(
    asm: MessageAssembler,
    scripted: AssistantMessage,
    messages: readonly Message[],
    model: Model,
    request: StreamRequest,
  ): Generator<() => StreamEvent> {
    yield () => asm.start();
    for (const block of scripted.content) yield* this.blockSteps(asm, block);
    const usage =
      scripted.usage.totalTokens > 0
        ? scripted.usage
        : computeUsage(
            { input: estimateInputTokens(messages, request), output: estimateOutputTokens(scripted.content) },
            model,
          );
    asm.setUsage(usage);
    if (scripted.stopReason === 'error' || scripted.stopReason === 'aborted') {
      const kind = scripted.stopReason === 'aborted' ? 'aborted' : (scripted.errorKind ?? 'unknown');
      yield () => asm.error(kind, scripted.errorMessage ?? 'Faux error', scripted.retryAfterMs);
    } else if (scripted.stopReason === 'blocked') {
      yield () => asm.blocked(scripted.blockReason ?? 'Faux block');
    } else {
      yield () => asm.done(scripted.stopReason as 'stop' | 'length' | 'toolUse');
    }
  }

  private *blockSteps(asm: MessageAssembler, block: AssistantContent): Generator<() => StreamEvent> {
    const index = asm.blockCount;
    switch (block.type) {
      case 'text':
        yield () => asm.startText();
        for (const chunk of chunks(block.text, this.chunkSize)) yield () => asm.textDelta(index, chunk);
        yield () => asm.endText(index);
        return;
      case 'thinking':
        if (block.redacted) {
          yield () => asm.startThinking({ redacted: true, thinking: block.thinking });
        } else {
          yield () => asm.startThinking();
          for (const chunk of chunks(block.thinking, this.chunkSize)) yield () => asm.thinkingDelta(index, chunk);
        }
        if (block.signature !== undefined) asm.appendSignature(index, block.signature);
        yield () => asm.endThinking(index);
        return;
      case 'toolCall': {
        yield () => asm.startToolCall(block.id, block.name);
        const json = block.invalidArguments ?? JSON.stringify(block.arguments);
        for (const chunk of chunks(json, this.chunkSize)) yield () => asm.toolCallDelta(index, chunk);
        yield () => asm.endToolCall(index);
        return;
      }
    }
  }
}

function* chunks(text: string, size: number): Generator<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

// Running character totals of transcripts already seen, keyed by message: { index in its transcript, total up to and
// including it }. Transcripts only grow, so a call whose messages continue an earlier call's (same message at the
// same index) counts only the new tail: the estimate stays O(new messages), not O(history).
const runningTotals = new WeakMap<Message, { readonly index: number; readonly total: number }>();

function estimateInputTokens(messages: readonly Message[], request: StreamRequest): number {
  let chars = request.systemPrompt?.length ?? 0;
  for (const tool of request.tools ?? []) chars += tool.name.length + tool.description.length;
  let start = 0;
  let counted = 0;
  for (let i = messages.length - 1; i >= 0 && i >= messages.length - 64; i--) {
    const known = runningTotals.get(messages[i]!);
    if (known !== undefined && known.index === i) {
      start = i + 1;
      counted = known.total;
      break;
    }
  }
  for (let i = start; i < messages.length; i++) {
    const message = messages[i]!;
    if (typeof message.content === 'string') counted += message.content.length;
    else for (const block of message.content) counted += blockLength(block);
    runningTotals.set(message, { index: i, total: counted });
  }
  return Math.ceil((chars + counted) / 4);
}

function estimateOutputTokens(content: readonly AssistantContent[]): number {
  let chars = 0;
  for (const block of content) chars += blockLength(block);
  return Math.ceil(chars / 4);
}

function blockLength(block: Message['content'][number]): number {
  if (typeof block === 'string') return block.length;
  switch (block.type) {
    case 'text':
      return block.text.length;
    case 'thinking':
      return block.thinking.length;
    case 'toolCall':
      return block.name.length + JSON.stringify(block.arguments).length;
    case 'image':
      return 1000;
    case 'file':
      return block.size ?? (block.data !== undefined ? Math.ceil((block.data.length * 3) / 4) : 1000);
  }
}
