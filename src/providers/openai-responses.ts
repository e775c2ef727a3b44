/**
 * The OpenAI Responses API as a cubepi provider.
 * @module
 */
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type OpenAI from 'openai';
import type { Observable } from 'rxjs';
import type { Message } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { Provider, StreamRequest } from '../types/provider.js';
import type { StreamEvent } from '../types/stream-events.js';
import { createOpenAIClient, type OpenAIClientOptions } from './create-openai-client.js';
import { fromSdkStream, stallTimeouts } from './from-sdk-stream.js';
import { findModel } from './model-table.js';
import { buildResponsesRequest } from './openai-responses-request.js';
import { withRefusal } from './openai-request-refusal.js';
import { responsesWireMapper } from './openai-responses-wire-mapper.js';

/** Options of {@link OpenAIResponsesProvider}. */
export interface OpenAIResponsesProviderOptions extends OpenAIClientOptions {
  /** The provider id stamped on messages; `openai-responses` by default. */
  readonly id?: string | undefined;
}

/**
 * The OpenAI Responses API as a cubepi {@link Provider}: text, function calls, reasoning summaries as thinking, and
 * reasoning carried across turns (each reasoning item's `encrypted_content` is kept in its thinking block's
 * `signature` and replayed), statelessly (`store: false`), so a transcript can be resumed or moved to another
 * provider.
 *
 * `stream()` is cold: subscribing sends one request, unsubscribing aborts it (also while waiting for the first byte).
 * Every failure is the terminal `error` event, classified, with the content received so far; a stream that ends
 * without `response.completed` is an error, never a success.
 *
 * Per-request options (`StreamOptions`): `signal`, `maxTokens` (`max_output_tokens`), `temperature`, and for reasoning
 * models `reasoningEffort` and `reasoningSummary` (`auto` by default, `concise`, `detailed`, or `none`).
 *
 * The run's settings (issue 30):
 * - **Reasoning** (`request.reasoning`, resolved per model by the runner) becomes `reasoning.effort` on a reasoning
 *   model: `off` → `none`, a level as is; `options.reasoningEffort` wins when both are given. A budget alone has no
 *   Responses field and is not sent.
 * - **Native structured output** (`request.output`) becomes `text.format` `json_schema` (name, description, schema,
 *   strict); the answer's text is the JSON.
 * - **Files**: documents (PDF, text, code, spreadsheets, office files) as `input_file` by `file_data` (with
 *   `filename`), `file_url` or `file_id`; image files as `input_image`; in user messages and in tool results alike
 *   (`function_call_output` takes the same parts). The API takes no audio or video input: such a block, or an
 *   unresolved `ref`, ends the call with a `model_incapable` error naming the block, before anything is sent.
 *
 * @example
 * const provider = new OpenAIResponsesProvider();                 // OPENAI_API_KEY
 * const agent = new Agent({ provider, model: findModel('gpt-5.4')! });
 */
export class OpenAIResponsesProvider implements Provider {
  readonly id: string;
  private readonly client: OpenAI;

  /** Throws {@link ConfigurationError} for a missing API key or invalid options. */
  constructor(options: OpenAIResponsesProviderOptions = {}) {
    this.id = options.id ?? 'openai-responses';
    this.client = createOpenAIClient(options, 'OpenAIResponsesProvider');
  }

  /** Streams the model's answer to `messages` (see the class comment for the contract). */
  stream(model: Model, messages: readonly Message[], request: StreamRequest = {}): Observable<StreamEvent> {
    const timeouts = stallTimeouts(request.options, model.reasoning ?? findModel(model.id)?.reasoning);
    return withRefusal(
      this.id,
      model.id,
      () => buildResponsesRequest(model, messages, request, { provider: this.id }),
      (params) =>
        fromSdkStream({
          provider: this.id,
          model: model.id,
          api: 'OpenAI Responses',
          timeouts,
          ...(request.options?.signal !== undefined ? { signal: request.options.signal } : {}),
          open: (signal) => this.client.responses.create(params, { signal }),
          mapper: (asm) => responsesWireMapper(asm, model),
          errors: { APIError, APIConnectionError, APIUserAbortError },
        }),
    );
  }
}
