/**
 * `cubepi/providers/bedrock`: Claude, Llama, Mistral, Nova and the other Converse models through Amazon Bedrock's
 * ConverseStream API and the official AWS SDK.
 * @module
 */
import {
  BedrockRuntimeClient,
  BedrockRuntimeServiceException,
  ConverseStreamCommand,
  type BedrockRuntimeClientConfig,
  type ConverseStreamOutput,
  type ConverseStreamRequest,
  type GuardrailStreamConfiguration,
} from '@aws-sdk/client-bedrock-runtime';
import { defer, type Observable } from 'rxjs';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import type { CacheRetention } from './anthropic-request.js';
import { buildBedrockRequest } from './bedrock-request.js';
import {
  bedrockWireMapper,
  STREAM_EXCEPTIONS,
  type BedrockMetrics,
  type BedrockWireEvent,
} from './bedrock-wire-mapper.js';
import { fromSdkStream, stallTimeouts } from './from-sdk-stream.js';
import { classifyError } from './classify-error.js';
import { findModel } from './model-table.js';
import { RequestRefusal, refusedStream } from './request-refusal.js';

export type { CacheRetention } from './anthropic-request.js';
export type { BedrockMetrics, BedrockWireEvent } from './bedrock-wire-mapper.js';

/** Options of {@link BedrockProvider}. */
export interface BedrockProviderOptions {
  /** The AWS region (`us-east-1`); defaults to the SDK's (`AWS_REGION`, then the profile's). */
  readonly region?: string | undefined;
  /**
   * Explicit credentials (or a credential provider function). Default: the SDK's default chain (environment,
   * `~/.aws` profiles, SSO, the instance or container role), resolved lazily, so a missing credential is an `auth`
   * error event at the first call, not a construction error.
   */
  readonly credentials?: BedrockRuntimeClientConfig['credentials'];
  /** The shared-config profile to read credentials and the region from (the SDK's `profile`). */
  readonly profile?: string | undefined;
  /** Another endpoint (a VPC endpoint, a local test server); defaults to the region's Bedrock Runtime endpoint. */
  readonly endpoint?: string | undefined;
  /** A client you configured yourself (proxy, request handler); `region`, `credentials`, `profile`, `endpoint` and `maxAttempts` are then unused. */
  readonly client?: BedrockRuntimeClient | undefined;
  /**
   * How many times the SDK itself sends a request before giving up; 1 by default (no SDK retries), so throttling or
   * an outage reaches you at once as a classified `error` event, and retrying stays a decision of the run (`retry()`).
   */
  readonly maxAttempts?: number | undefined;
  /**
   * Prompt-cache points (after the system prompt, the tools and the last message): `short` (5 min), `long` (1 h),
   * `none`. Default: `short` on the model families that take cache points (Anthropic Claude, Amazon Nova), `none`
   * on the others, which answer a cache point with a ValidationException.
   */
  readonly cacheRetention?: CacheRetention | undefined;
  /** A guardrail applied to every request (`guardrailIdentifier`, `guardrailVersion`, `trace`, `streamProcessingMode`). */
  readonly guardrail?: GuardrailStreamConfiguration | undefined;
  /** Model-specific request fields sent as `additionalModelRequestFields` on every request (`{ top_k: 50 }`). */
  readonly additionalModelRequestFields?: Readonly<Record<string, unknown>> | undefined;
  /** Called once per response with what its `metadata` event said: latency, raw token usage, guardrail trace, request id. */
  readonly onMetrics?: ((metrics: BedrockMetrics) => void) | undefined;
  /** The provider id stamped on messages; `bedrock` by default. */
  readonly id?: string | undefined;
}

/**
 * An error Bedrock answered before the stream started (an HTTP 4xx/5xx with AWS's exception name and message), in
 * the shape the provider kit's `classifyError` reads: `status`, `headers`, and `error` (`{ code, message }`, `code`
 * being the AWS exception name). The SDK's exception is its `cause`.
 */
export class BedrockError extends Error {
  readonly error: { readonly code: string; readonly message: string };

  constructor(
    readonly status: number | undefined,
    code: string,
    message: string,
    options?: { cause?: unknown; headers?: Readonly<Record<string, string>> | undefined },
  ) {
    super(`${code}: ${message}`, options);
    this.name = 'BedrockError';
    this.error = { code, message };
    this.headers = options?.headers ?? {};
  }

  /** The response headers (lower-case names); a `retry-after` there becomes the error's `retryAfterMs`. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Amazon Bedrock's ConverseStream API as a cubepi {@link Provider}: one wire for every Converse model (Claude, Llama,
 * Mistral, Nova, DeepSeek, Kimi, …): text, tool use (`toolConfig`; arguments streamed as JSON, several calls per
 * message), reasoning with its signature (replayed), redacted reasoning (replayed as the bytes received), images and
 * documents in user messages and tool results, prompt-cache points with cache read/write usage, guardrails, native
 * structured output, files (documents, images, audio, video).
 *
 * `stream()` is cold: subscribing sends one request, unsubscribing aborts it (the SDK's `abortSignal`: the HTTP/2
 * stream is reset). Every failure is the terminal `error` event, classified: HTTP errors before the stream by status
 * and AWS exception name (`HTTP 429 ThrottlingException: …`), exceptions inside the event stream by their kind
 * (`throttlingException` → `rate_limited`; `modelStreamErrorException`, `serviceUnavailableException`,
 * `internalServerException` → `unavailable`; `validationException` → `bad_request` or `context_overflow`), a frame
 * whose checksum fails → `unknown` with the SDK's words, no credential found → `auth`. A guardrail intervention or a
 * content filter ends the message with `stopReason: 'blocked'` and `blockReason` in Bedrock's words.
 *
 * Per-request options (`StreamOptions`): `signal`, `maxTokens` (default: the model's largest output when the `Model` or
 * the table knows it, at most 32 000; else Bedrock's default), `temperature`, `thinkingBudget` (tokens > 0 turn on
 * Claude's extended thinking, `maxTokens` growing by the budget), `cacheRetention`, `additionalModelRequestFields`
 * (merged over the provider's).
 *
 * - **Reasoning** (`request.reasoning`, the run's `reasoning` resolved for the model): Claude's `thinking`
 *   (`disabled`, `enabled` with `budget_tokens`, `adaptive`) in `additionalModelRequestFields` and its effort as
 *   `outputConfig.effort`; Nova 2's `reasoningConfig` (`maxReasoningEffort` `low`/`medium`/`high`); gpt-oss's
 *   `reasoning_effort`; nothing for the other families. `thinkingBudget`, or a `thinking`, `reasoningConfig`,
 *   `reasoning_effort` or `output_config` field in `additionalModelRequestFields`, wins: the setting is then not read.
 * - **Structured output** (`request.output`) → `outputConfig.textFormat` (`json_schema`): the final text is the JSON.
 *   For Claude the schema is rewritten as Anthropic structured outputs take it, and one Claude cannot express (an
 *   open record, a value of any type, a recursive `$ref`) is a `bad_request` error event naming the path, unsent.
 * - **Files**: PDF, CSV, Word, Excel, HTML, Markdown and text as `document` blocks (named after the file, sanitized
 *   to Converse's rules and unique), images, audio and video as their blocks; by bytes (`data`) or an `s3://` `url`
 *   (`s3Location`). In tool results the same, except audio, which Converse's tool results cannot hold: it follows the
 *   `toolResult` in the same user turn. A `fileId` (Bedrock has no file API), another URL, another MIME type or an
 *   unresolved `ref` is a `model_incapable` error event naming the block, before anything is sent.
 *
 * @example
 * const provider = new BedrockProvider({ region: 'us-east-1' });      // the SDK's default credential chain
 * const agent = new Agent({ provider, model: { id: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', provider: 'bedrock' } });
 */
export class BedrockProvider implements Provider {
  readonly id: string;
  private readonly client: BedrockRuntimeClient;
  private readonly options: BedrockProviderOptions;

  /** Throws {@link ConfigurationError} for invalid options. */
  constructor(options: BedrockProviderOptions = {}) {
    this.id = options.id ?? 'bedrock';
    this.options = options;
    const retention = options.cacheRetention;
    if (retention !== undefined && retention !== 'short' && retention !== 'long' && retention !== 'none') {
      throw new ConfigurationError(`BedrockProvider: cacheRetention must be "short", "long" or "none"`);
    }
    if (options.client !== undefined) {
      this.client = options.client;
      return;
    }
    try {
      this.client = new BedrockRuntimeClient({
        maxAttempts: options.maxAttempts ?? 1,
        ...(options.region !== undefined ? { region: options.region } : {}),
        ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
        ...(options.profile !== undefined ? { profile: options.profile } : {}),
        ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
      });
    } catch (error) {
      throw new ConfigurationError(`BedrockProvider: ${errorMessageOf(error)}`, { cause: error });
    }
  }

  /** Streams the model's answer to `messages` (see the class comment for the contract). */
  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    const modelMaxTokens = model.maxTokens ?? findModel(model.id)?.maxTokens;
    // Per subscription: the request id `open` reads from the response, for this request's mapper.
    const timeouts = stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning);
    const signal = request.options?.signal;
    return defer(() => {
      let requestId: string | undefined;
      let params: ConverseStreamRequest | undefined;
      // Built at subscription, before anything is sent: a file or a schema Converse cannot take is the terminal error
      // event (`model_incapable`, `bad_request`) without a request. An aborted signal is left to the skeleton.
      if (signal?.aborted !== true) {
        try {
          params = buildBedrockRequest(model, messages, request, {
            provider: this.id,
            cacheRetention: this.options.cacheRetention,
            guardrail: this.options.guardrail,
            additionalModelRequestFields: this.options.additionalModelRequestFields,
            defaultMaxTokens: modelMaxTokens === undefined ? undefined : Math.min(modelMaxTokens, 32_000),
          });
        } catch (error) {
          if (error instanceof RequestRefusal) return refusedStream(this.id, model.id, error);
          return refusedStream(this.id, model.id, classifyError(error, { APIError: BedrockError }));
        }
      }
      const body = params;
      return fromSdkStream<BedrockWireEvent>({
        provider: this.id,
        model: model.id,
        api: 'Bedrock ConverseStream',
        timeouts,
        ...(signal !== undefined ? { signal } : {}),
        open: async (abort) => {
          let output;
          try {
            output = await this.client.send(new ConverseStreamCommand(body!), { abortSignal: abort });
          } catch (error) {
            throw toBedrockError(error);
          }
          requestId = output.$metadata.requestId;
          if (output.stream === undefined)
            throw new BedrockError(undefined, 'NoStream', 'the response had no event stream');
          return events(output.stream);
        },
        mapper: (asm) => {
          if (requestId !== undefined) asm.setResponseId(requestId);
          return bedrockWireMapper(asm, model, this.options.onMetrics, requestId);
        },
        errors: { APIError: BedrockError },
      });
    });
  }
}

/** An AWS exception answered over HTTP → a {@link BedrockError} with its status; anything else as it is. */
function toBedrockError(error: unknown): unknown {
  if (!(error instanceof BedrockRuntimeServiceException)) return error;
  const status = (error.$metadata as { httpStatusCode?: number } | undefined)?.httpStatusCode;
  // The SDK keeps the raw response on a hidden `$response`; Bedrock sends no retry-after, a proxy in front may.
  const headers = (error as { $response?: { headers?: Record<string, string> } }).$response?.headers;
  return new BedrockError(status, error.name, error.message, { cause: error, headers });
}

/**
 * The SDK's event stream, with the exceptions it throws from inside the stream turned back into the union members
 * the wire sent (`{ throttlingException: { message } }`), so the mapper classifies them and keeps the content so far.
 */
async function* events(stream: AsyncIterable<ConverseStreamOutput>): AsyncGenerator<BedrockWireEvent> {
  const iterator = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      let step: IteratorResult<ConverseStreamOutput>;
      try {
        step = await iterator.next();
      } catch (error) {
        if (
          error instanceof BedrockRuntimeServiceException &&
          (error.$metadata as { httpStatusCode?: number } | undefined)?.httpStatusCode === undefined
        ) {
          const member = error.name.charAt(0).toLowerCase() + error.name.slice(1);
          if (STREAM_EXCEPTIONS.has(member)) {
            yield { [member]: { message: error.message } } as unknown as BedrockWireEvent;
            return;
          }
        }
        throw toBedrockError(error);
      }
      if (step.done) return;
      yield step.value;
    }
  } finally {
    await iterator.return?.();
  }
}
