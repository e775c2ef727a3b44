// The worked example of docs/provider-kit.md, verbatim below this comment (test/providers/provider-kit.test.ts checks
// that the two match, and runs this provider against a local HTTP server).
import type { Observable } from 'rxjs';
import {
  computeUsage,
  findModel,
  modelPricing,
  textOf,
  toolCallsOf,
  type Message,
  type Model,
  type Provider,
  type StreamEvent,
  type StreamRequest,
} from 'cubepi';
import {
  classifyErrorCode,
  fromSdkStream,
  stallTimeouts,
  type MessageAssembler,
  type WireMapper,
} from 'cubepi/providers/kit';

/** One event of the Acme wire: a JSON object per SSE `data:` line (`ping` stands for a keep-alive comment). */
export type AcmeEvent =
  | { readonly type: 'response.start'; readonly id: string; readonly model: string }
  | { readonly type: 'text.delta'; readonly text: string }
  | { readonly type: 'tool_call.start'; readonly id: string; readonly name: string }
  | { readonly type: 'tool_call.delta'; readonly arguments: string }
  | { readonly type: 'tool_call.end' }
  | {
      readonly type: 'response.end';
      readonly stop_reason: 'end' | 'max_tokens' | 'tool_use';
      readonly usage: { readonly input: number; readonly output: number; readonly cached?: number };
    }
  | { readonly type: 'error'; readonly error: { readonly code: string; readonly message: string } }
  | { readonly type: 'ping' };

/**
 * A non-2xx answer of the Acme API. `classifyError` reads its `status`, its `headers` (`retry-after`) and its
 * `error` (the body, `{ error: { code, message } }`) to classify it.
 */
export class AcmeError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Headers,
    readonly error: unknown,
  ) {
    super(`Acme answered HTTP ${status}`);
    this.name = 'AcmeError';
  }
}

/** Options of {@link AcmeProvider}. */
export interface AcmeProviderOptions {
  readonly apiKey: string;
  /** Default `https://api.acme.example`. */
  readonly baseURL?: string;
  /** The provider id stamped on messages; `acme` by default. */
  readonly id?: string;
}

/**
 * The Acme Chat API as a cubepi provider: text and tool calls, streamed. Cold, cancellable, failures as classified
 * `error` events, stall limits from `StreamOptions`: all from `fromSdkStream`.
 */
export class AcmeProvider implements Provider {
  readonly id: string;
  private readonly baseURL: string;

  constructor(private readonly options: AcmeProviderOptions) {
    this.id = options.id ?? 'acme';
    this.baseURL = options.baseURL ?? 'https://api.acme.example';
  }

  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    return fromSdkStream<AcmeEvent>({
      provider: this.id,
      model: model.id,
      api: 'Acme',
      signal: request.options?.signal,
      timeouts: stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning),
      open: async (signal) => {
        // Called at subscription: the body is built from `messages` as they are now.
        const response = await fetch(`${this.baseURL}/v1/chat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(acmeRequest(model, messages, request)),
          signal,
        });
        if (!response.ok) {
          const body: unknown = await response.json().catch(() => undefined);
          throw new AcmeError(response.status, response.headers, body);
        }
        return readEvents(response.body!);
      },
      mapper: (asm) => acmeWireMapper(asm, model),
      errors: { APIError: AcmeError },
    });
  }
}

/** The request body: the transcript as Acme's messages (text and tool calls), the tools, the options. */
function acmeRequest(model: Model, messages: readonly Message[], request: StreamRequest): unknown {
  return {
    model: model.id,
    system: request.systemPrompt,
    messages: messages.map((message) => {
      if (message.role === 'user') return { role: 'user', content: textOf(message) };
      if (message.role === 'toolResult') {
        return { role: 'tool', tool_call_id: message.toolCallId, content: textOf(message) };
      }
      const calls = toolCallsOf(message).map(({ id, name, arguments: args }) => ({
        id,
        name,
        arguments: JSON.stringify(args),
      }));
      return { role: 'assistant', content: textOf(message), tool_calls: calls };
    }),
    tools: request.tools?.map(({ name, description, inputSchema }) => ({ name, description, parameters: inputSchema })),
    max_tokens: request.options?.maxTokens,
    temperature: request.options?.temperature,
    stream: true,
  };
}

/**
 * Acme's wire → assembler calls. Text has no start or end event of its own: a text block opens at its first delta
 * and closes when something else comes. Tool calls stream their arguments as JSON fragments.
 */
export function acmeWireMapper(asm: MessageAssembler, model: Model): WireMapper<AcmeEvent> {
  let text: number | undefined; // the content index of the open text block
  let call: number | undefined; // the content index of the open tool call
  let reportedModel: string | undefined;
  const closeText = (emit: (event: StreamEvent) => void): void => {
    if (text !== undefined) emit(asm.endText(text));
    text = undefined;
  };
  return {
    identify(event) {
      if (event.type !== 'response.start') return;
      asm.setResponseId(event.id);
      reportedModel = event.model;
      asm.setModel(event.model);
    },

    map(event, emit) {
      switch (event.type) {
        case 'text.delta':
          if (text === undefined) {
            text = asm.blockCount;
            emit(asm.startText());
          }
          emit(asm.textDelta(text, event.text));
          return undefined;
        case 'tool_call.start':
          closeText(emit);
          call = asm.blockCount;
          emit(asm.startToolCall(event.id, event.name));
          return undefined;
        case 'tool_call.delta':
          // A wire we cannot place: the throw ends the stream with an `unknown` error event, content kept.
          if (call === undefined) throw new Error('tool_call.delta outside a tool call');
          emit(asm.toolCallDelta(call, event.arguments));
          return undefined;
        case 'tool_call.end':
          if (call === undefined) throw new Error('tool_call.end outside a tool call');
          emit(asm.endToolCall(call)); // the strict parse: arguments that are not a JSON object are never executed
          call = undefined;
          return undefined;
        case 'response.end': {
          closeText(emit);
          const { input, output, cached = 0 } = event.usage;
          // cubepi's `input` excludes cached tokens; Acme counts them in `input`.
          const counts = { input: input - cached, output, cacheRead: cached };
          asm.setUsage(computeUsage(counts, modelPricing(model, reportedModel)));
          const stop = event.stop_reason;
          return asm.done(stop === 'tool_use' ? 'toolUse' : stop === 'max_tokens' ? 'length' : 'stop');
        }
        case 'error':
          // An error inside the stream has no HTTP status: classified by its code, the content so far kept.
          return asm.error(classifyErrorCode(event.error.code, event.error.message), event.error.message);
        default:
          return undefined; // `ping`, and event types Acme adds later
      }
    },

    end: () => asm.error('unavailable', 'The Acme stream ended before response.end (truncated response)'),
  };
}

/**
 * The events of a server-sent event stream: each `data:` payload parsed as JSON, a comment (`: keep-alive`) as a
 * `ping`, so that a slow but live stream does not trip the idle limit. A payload that is not JSON throws a
 * `SyntaxError`, which `fromSdkStream` reports as a malformed chunk. Minimal on purpose (no `event:`, `id:` or
 * `retry:` fields, no lone `\r` line ends); a full SSE parser fits here as well.
 */
async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<AcmeEvent> {
  // A TextDecoder in streaming mode (a character split across chunks waits for its end), rather than
  // `pipeThrough(new TextDecoderStream())`, which the DOM library and @types/node type differently: an app with both
  // could not compile it.
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n/g, '\n');
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const lines = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart());
        if (data.length > 0) yield JSON.parse(data.join('\n')) as AcmeEvent;
        else if (lines.some((line) => line.startsWith(':'))) yield { type: 'ping' };
      }
    }
  } finally {
    // Called too when `fromSdkStream` stops reading early (a terminal event, an abort): let go of the body.
    reader.cancel().catch(() => undefined);
  }
}
