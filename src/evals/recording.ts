/**
 * Recording a provider's calls for later replay, and replaying them through a `FauxProvider`. Pure (no `node:`).
 * @module
 */
import { Observable, type SchedulerLike } from 'rxjs';
import { FauxProvider } from '../providers/faux-provider.js';
import type { AssistantMessage, Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { RecordingFormatError } from './errors.js';

/**
 * One recorded model call: the case it belongs to, its place in the case's calls, and the message the stream ended
 * with (`done` or `error`), usage included, so a replay reproduces its tokens and cost exactly.
 */
export interface RecordedCall {
  readonly caseId: string;
  /** 0 for the case's first model call. */
  readonly call: number;
  /** The model id the call was made with. */
  readonly model: string;
  /** How many messages the model was sent (a replay does not check it; it tells a reader what changed). */
  readonly messageCount: number;
  readonly message: AssistantMessage;
}

/** Wraps a provider and records every call it streams to its end; see {@link recordProvider}. */
export interface ProviderRecorder {
  /** The wrapped provider, recording calls under the case id `default`. */
  readonly provider: Provider;
  /** The wrapped provider recording under `caseId` (what `evaluate` hands each case in live mode). */
  forCase(caseId: string): Provider;
  /** The calls recorded so far, in the order they ended within each case (cases in the order they started). */
  readonly calls: readonly RecordedCall[];
  /** The recordings as JSONL, one call a line, ending with a newline; what `parseRecordings` reads back. */
  toJSONL(): string;
}

/**
 * Records `provider`'s calls: each stream is passed through unchanged (cold, torn down on unsubscribe like the
 * original), and when it ends with `done` or `error` the final message is recorded. A call unsubscribed before its
 * end is not recorded (its replay would not be what the run saw).
 *
 * @example
 * const recorder = recordProvider(new AnthropicProvider());
 * await evaluate({ mode: 'live', recorder, createAgent: ({ provider, middleware }) => new Agent({ provider: provider!, model, middleware }), … });
 * await writeFile('recordings.jsonl', recorder.toJSONL());
 */
export function recordProvider(provider: Provider): ProviderRecorder {
  const byCase = new Map<string, RecordedCall[]>();
  const counters = new Map<string, number>();
  const wrap = (caseId: string): Provider => ({
    id: provider.id,
    stream(model: Model, messages: readonly Message[], request?: StreamRequest): Observable<StreamEvent> {
      return new Observable<StreamEvent>((subscriber) => {
        const call = counters.get(caseId) ?? 0;
        counters.set(caseId, call + 1);
        if (!byCase.has(caseId)) byCase.set(caseId, []);
        return provider.stream(model, messages, request).subscribe({
          next: (event) => {
            if (event.type === 'done' || event.type === 'error') {
              byCase.get(caseId)!.push({
                caseId,
                call,
                model: model.id,
                messageCount: messages.length,
                message: event.message,
              });
            }
            subscriber.next(event);
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => subscriber.complete(),
        });
      });
    },
  });
  const cache = new Map<string, Provider>();
  const forCase = (caseId: string): Provider => {
    let wrapped = cache.get(caseId);
    if (wrapped === undefined) cache.set(caseId, (wrapped = wrap(caseId)));
    return wrapped;
  };
  return {
    provider: forCase('default'),
    forCase,
    get calls() {
      return [...byCase.values()].flatMap((calls) => [...calls].sort((a, b) => a.call - b.call));
    },
    toJSONL() {
      return this.calls.map((call) => `${JSON.stringify(call)}\n`).join('');
    },
  };
}

/** Reads recordings JSONL (blank lines skipped); a line that is not a recorded call is a {@link RecordingFormatError}. */
export function parseRecordings(text: string): RecordedCall[] {
  const calls: RecordedCall[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new RecordingFormatError(i + 1, `not valid JSON (${(error as Error).message})`);
    }
    const v = value as Partial<RecordedCall> | null;
    if (
      typeof v !== 'object' ||
      v === null ||
      typeof v.caseId !== 'string' ||
      typeof v.call !== 'number' ||
      typeof v.message !== 'object' ||
      v.message === null ||
      v.message.role !== 'assistant' ||
      !Array.isArray(v.message.content)
    ) {
      throw new RecordingFormatError(i + 1, 'a recorded call has caseId, call and an assistant message');
    }
    calls.push(v as RecordedCall);
  });
  return calls;
}

/** Options of {@link replayProvider}. */
export interface ReplayOptions {
  /** Virtual milliseconds between streamed chunks (the replay's latency); 10 by default. */
  readonly chunkDelayMs?: number | undefined;
  /** Characters per chunk; 16 by default. */
  readonly chunkSize?: number | undefined;
  /** The scheduler the chunks are paced on (default `asyncScheduler`: virtual inside `TestScheduler.run()`). */
  readonly scheduler?: SchedulerLike | undefined;
}

/**
 * A `FauxProvider` that answers a case's model calls with its recorded messages, in order (usage as recorded). A
 * call past the recording gets the faux provider's `No more faux responses queued` error; `evaluate` turns that into
 * a `RecordingExhaustedError` on the case.
 */
export function replayProvider(calls: readonly RecordedCall[], options: ReplayOptions = {}): FauxProvider {
  return new FauxProvider({
    responses: [...calls].sort((a, b) => a.call - b.call).map((call) => call.message),
    chunkSize: options.chunkSize ?? 16,
    delayMs: options.chunkDelayMs ?? 10,
    scheduler: options.scheduler,
  });
}
