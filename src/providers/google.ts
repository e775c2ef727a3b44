/**
 * `cubepi/providers/google`: Gemini through the Gemini API or Vertex AI and the official `@google/genai` SDK.
 * @module
 */
import { ApiError, GoogleGenAI, type GenerateContentResponse, type GoogleGenAIOptions } from '@google/genai';
import { defer, of, type Observable } from 'rxjs';
import { ConfigurationError, errorMessageOf } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { fromSdkStream, stallTimeouts } from './from-sdk-stream.js';
import { GoogleApiError, toGoogleApiError } from './google-error.js';
import { GoogleRequestRefusal } from './google-refusal.js';
import { buildGoogleRequest } from './google-request.js';
import { googleWireMapper } from './google-wire-mapper.js';
import { MessageAssembler } from './message-assembler.js';
import { findModel } from './model-table.js';

export { GoogleApiError } from './google-error.js';
export { GEMINI_FILES_URI } from './google-files.js';
export { GEMINI_DUMMY_SIGNATURE, GEMINI_MADE_ID_PREFIX } from './google-request.js';
export type { GeminiThinkingLevel } from './google-thinking.js';

/** Options of {@link GoogleProvider}. */
export interface GoogleProviderOptions {
  /**
   * The Gemini API key (or a Vertex AI express-mode key). Defaults to `GEMINI_API_KEY`, then `GOOGLE_API_KEY`, read
   * at the first call: without one, a Gemini API call ends with an `auth` error event.
   */
  readonly apiKey?: string | undefined;
  /** `true` for Vertex AI (`GOOGLE_GENAI_USE_VERTEXAI=true` also selects it, as the SDK reads it). */
  readonly vertexai?: boolean | undefined;
  /** Vertex AI: the Google Cloud project (default `GOOGLE_CLOUD_PROJECT`). */
  readonly project?: string | undefined;
  /** Vertex AI: the region (`us-central1`, `global`; default `GOOGLE_CLOUD_LOCATION`, else `global`). */
  readonly location?: string | undefined;
  /**
   * Vertex AI: how to authenticate when no `apiKey` is given, passed to google-auth-library (`credentials`,
   * `keyFilename`, `authClient`, `scopes`). Absent: Application Default Credentials. A missing credential ends the
   * call with an `auth` error event.
   */
  readonly googleAuthOptions?: GoogleGenAIOptions['googleAuthOptions'];
  /** Another endpoint (a proxy, a local test server): the SDK's `httpOptions.baseUrl`. */
  readonly baseURL?: string | undefined;
  /** The API version (`v1beta` by default for the Gemini API, `v1beta1` for Vertex AI). */
  readonly apiVersion?: string | undefined;
  /** Extra headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** A client you configured yourself; the connection options above are then unused. */
  readonly client?: GoogleGenAI | undefined;
  /**
   * Vertex AI: stream function-call arguments as they are generated (`streamFunctionCallArguments`); the call's
   * arguments are assembled from the pieces. Off by default.
   */
  readonly streamFunctionCallArguments?: boolean | undefined;
  /** The provider id stamped on messages; `google` by default. */
  readonly id?: string | undefined;
}

/**
 * Gemini as a cubepi {@link Provider}, on the Gemini API or Vertex AI (`vertexai: true`): streamed text, thought
 * summaries, `thoughtSignature`s kept where Gemini put them (text, thinking, `ToolCall.signature`) and sent back byte
 * for byte on every later request, function calls (parallel, without arguments, nested; Vertex's streamed arguments
 * assembled; ids made when Gemini sends none), images in user messages and tool results, usage with cached, thinking
 * and tool-use-prompt tokens, safety and prompt blocks as `stopReason: 'blocked'` with the block reason.
 *
 * - **Files**: `data` → `inlineData` (PDF, image, audio, video, text documents), `url` → `fileData` (`gs://`,
 *   `http(s)://`; a base64 `data:` URL inline), `fileId` → `fileData` with the Files API URI (Gemini API only). In
 *   tool results, Gemini 3 takes inline images, PDFs and plain text inside the `functionResponse`; other files, and
 *   all files before Gemini 3, go as parts right after it in the same user turn (as Gemini documents for media a
 *   function response cannot hold).
 * - **Native structured output** (`request.output`): `responseMimeType: 'application/json'` and `responseJsonSchema`,
 *   the schema made into Gemini's subset (unsupported value constraints dropped, `const`/`definitions`/tuple `items`
 *   rewritten); with function declarations only on Gemini 3 and later.
 * - **Reasoning** (`request.reasoning`): `thinkingLevel` on Gemini 3, `thinkingBudget` on Gemini 2.5; the options
 *   `thinkingBudget` / `thinkingLevel` win when given.
 * - **Refused before sending**, as the terminal `error` event with nothing sent: a file Gemini cannot take, a URL of
 *   another scheme, a `fileId` on Vertex AI, an unresolved blob `ref` (`model_incapable`, naming the block); native
 *   output with tools before Gemini 3 (`model_incapable`); a schema keyword Gemini cannot express (`bad_request`,
 *   naming its JSON path).
 *
 * `stream()` is cold: subscribing sends one request, unsubscribing aborts it (the socket closes). Every failure is the
 * terminal `error` event, classified like the other providers (429 `rate_limited` with `retryAfterMs` from
 * `google.rpc.RetryInfo`, 400 `bad_request` or `context_overflow`, 401/403 `auth`, 404 `bad_request`, 5xx and
 * overloaded `unavailable`). The SDK's own retries and automatic continuation are off: retrying is the run's call.
 *
 * Per-request options (`StreamOptions`): `signal`, `maxTokens`, `temperature`, `thinkingBudget` (tokens, `-1`:
 * dynamic), `thinkingLevel` (`'minimal' | 'low' | 'medium' | 'high'`, Gemini 3) — either wins over
 * `request.reasoning` —, `includeThoughts` (thought summaries; on by default for a reasoning model, off when thinking
 * is off), and the stall limits. See `docs/providers.md`.
 *
 * @example
 * const gemini = new GoogleProvider();                                        // GEMINI_API_KEY
 * const vertex = new GoogleProvider({ vertexai: true, project: 'my-project', location: 'us-central1' });
 * const agent = new Agent({ provider: gemini, model: { id: 'gemini-3-pro-preview', provider: 'google' } });
 */
export class GoogleProvider implements Provider {
  readonly id: string;
  private client: GoogleGenAI | undefined;
  private readonly vertex: boolean;

  /** Throws {@link ConfigurationError} for invalid options (a project or location without `vertexai`). */
  constructor(private readonly options: GoogleProviderOptions = {}) {
    this.id = options.id ?? 'google';
    this.client = options.client;
    const envVertex = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env
      ?.GOOGLE_GENAI_USE_VERTEXAI;
    const vertex = options.vertexai ?? /^(1|true)$/i.test(envVertex ?? '');
    this.vertex = vertex;
    if (!vertex && (options.project !== undefined || options.location !== undefined)) {
      throw new ConfigurationError('GoogleProvider: project and location are Vertex AI options: pass vertexai: true');
    }
  }

  /** Streams the model's answer to `messages` (see the class comment for the contract). */
  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    return defer(() => {
      // Built at subscription, before anything is sent: a request Gemini would refuse ends as a typed error event.
      let params: ReturnType<typeof buildGoogleRequest>;
      try {
        params = buildGoogleRequest(model, messages, request, {
          provider: this.id,
          streamFunctionCallArguments: this.options.streamFunctionCallArguments,
          vertex: this.vertex,
        });
      } catch (error) {
        if (!(error instanceof GoogleRequestRefusal)) throw error;
        return of(new MessageAssembler({ provider: this.id, model: model.id }).error(error.kind, error.message));
      }
      return this.send(model, params, request);
    });
  }

  private send(
    model: Model,
    built: ReturnType<typeof buildGoogleRequest>,
    request: StreamRequest,
  ): Observable<StreamEvent> {
    return fromSdkStream<GenerateContentResponse>({
      provider: this.id,
      model: model.id,
      api: this.vertex ? 'Vertex AI Gemini' : 'Gemini',
      timeouts: stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning),
      ...(request.options?.signal !== undefined ? { signal: request.options.signal } : {}),
      open: async (signal) => {
        const params = { ...built, config: { ...built.config, abortSignal: signal } };
        // The SDK's error keeps the body but not the headers: a fetch of our own sees them (`retry-after`).
        const seen: { headers?: Headers } = {};
        if (this.options.client === undefined) params.config.httpOptions = { fetch: headerSeeingFetch(seen) };
        try {
          const stream = await this.getClient().models.generateContentStream(params);
          return readable(stream, seen);
        } catch (error) {
          throw toGoogleApiError(error, ApiError, seen.headers);
        }
      },
      mapper: (asm) => googleWireMapper(asm, model),
      errors: { APIError: GoogleApiError },
    });
  }

  /** The SDK client, made at the first call, so a missing key is an `auth` error event of that call. */
  private getClient(): GoogleGenAI {
    if (this.client !== undefined) return this.client;
    const { apiKey, vertexai, project, location, googleAuthOptions, baseURL, apiVersion, headers } = this.options;
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
    const key = apiKey ?? (env.GEMINI_API_KEY || env.GOOGLE_API_KEY || undefined);
    const useVertex = vertexai ?? /^(1|true)$/i.test(env.GOOGLE_GENAI_USE_VERTEXAI ?? '');
    if (!useVertex && key === undefined) {
      throw new Error('No Gemini API key: pass { apiKey } or set GEMINI_API_KEY (or GOOGLE_API_KEY)');
    }
    const httpOptions = {
      ...(baseURL !== undefined ? { baseUrl: baseURL } : {}),
      ...(headers !== undefined ? { headers: { ...headers } } : {}),
    };
    try {
      this.client = new GoogleGenAI({
        vertexai: useVertex,
        ...(key !== undefined && (!useVertex || apiKey !== undefined) ? { apiKey: key } : {}),
        ...(project !== undefined ? { project } : {}),
        ...(location !== undefined ? { location } : {}),
        ...(googleAuthOptions !== undefined ? { googleAuthOptions } : {}),
        ...(apiVersion !== undefined ? { apiVersion } : {}),
        ...(Object.keys(httpOptions).length > 0 ? { httpOptions } : {}),
      });
    } catch (error) {
      throw new ConfigurationError(`GoogleProvider: ${errorMessageOf(error)}`, { cause: error });
    }
    return this.client;
  }
}

/** The SDK's stream with its errors made classifiable; stopping early still runs the SDK's own cleanup. */
async function* readable(
  stream: AsyncIterable<GenerateContentResponse>,
  seen: { headers?: Headers },
): AsyncGenerator<GenerateContentResponse> {
  try {
    for await (const chunk of stream) yield chunk;
  } catch (error) {
    throw toGoogleApiError(error, ApiError, seen.headers);
  }
}

// Node's fetch (undici) cuts a response after 300 s without headers or body bytes; the SDK turns those limits off
// with this dispatcher when it uses its own fetch, and so does ours: the kit's stall limits are the ones that apply.
const UNDICI_GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
type Dispatch = (options: Record<string, unknown>, handler: unknown) => unknown;
const noTimeoutDispatcher = {
  dispatch(options: Record<string, unknown>, handler: unknown): unknown {
    if ((globalThis as Record<symbol, unknown>)[UNDICI_GLOBAL_DISPATCHER] === undefined) new Headers(); // undici loads lazily
    const global = (globalThis as Record<symbol, { dispatch?: Dispatch } | undefined>)[UNDICI_GLOBAL_DISPATCHER];
    if (typeof global?.dispatch !== 'function') throw new Error('The undici global dispatcher is not available');
    return global.dispatch({ ...options, headersTimeout: 0, bodyTimeout: 0 }, handler);
  },
};

/** `fetch`, remembering the headers of a response that is not ok (the SDK's `ApiError` drops them). */
function headerSeeingFetch(seen: { headers?: Headers }): typeof fetch {
  const isNode =
    typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
  return async (input, init) => {
    const response = await fetch(
      input,
      isNode ? ({ ...init, dispatcher: noTimeoutDispatcher } as unknown as RequestInit) : init,
    );
    if (!response.ok) seen.headers = response.headers;
    return response;
  };
}
