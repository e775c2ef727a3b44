/**
 * Compat profiles: what an OpenAI-compatible server does differently from OpenAI's Chat Completions, declared as data.
 * @module
 */

/**
 * How one OpenAI-compatible server differs from OpenAI's Chat Completions API. A profile is data: the request builder
 * and the wire mapper read its fields; neither has a branch per server. Pass one to `OpenAIProvider({ compat })` (a
 * built-in's name, a built-in, or your own: spread a built-in and change what differs), or let the provider pick one
 * from its `baseURL` ({@link detectOpenAICompat}).
 *
 * Every profile also gets, whatever it says: tool calls keyed by `index`, or, without one, by `id` or as the
 * continuation of the open call (servers that stream calls whole, or without indices); a stable made-up id for a
 * call that arrives without one; a stream without a usage chunk ending with `usage.unreported: true`; and no
 * `strict` on tool schemas (cubepi never sends it: a zod schema is not always strict-mode-valid, and some servers reject
 * the field).
 *
 * @example
 * new OpenAIProvider({ baseURL: 'http://gpu-box:8000/v1', compat: 'vllm', apiKey: 'none' });
 * new OpenAIProvider({ baseURL, compat: { ...OPENAI_COMPAT.vllm, name: 'my-vllm', streamOptions: false } });
 */
export interface OpenAICompat {
  /** The profile's name (`openai`, `deepseek`, …); also the provider id when the options give none. */
  readonly name: string;
  /** The request field that carries `StreamOptions.maxTokens`. */
  readonly maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** Whether to send `stream_options: { include_usage: true }` (some servers reject the field). */
  readonly streamOptions: boolean;
  /** Whether to send `StreamOptions.reasoningEffort` as `reasoning_effort` (servers without it may reject it). */
  readonly reasoningEffort: boolean;
  /** The delta fields that carry reasoning text, read as thinking, first non-empty one wins. */
  readonly reasoningFields: readonly string[];
  /**
   * Other places the server reports usage, as paths into a chunk, tried when the chunk has no `usage` (Groq's
   * `x_groq.usage` on its last chunk).
   */
  readonly usagePaths?: readonly (readonly string[])[] | undefined;
  /**
   * Whether tool calls and text carry Gemini's `extra_content.google.thought_signature`: read into
   * `ToolCall.signature` / `TextContent.signature` and sent back the same way (Gemini 3 rejects a replayed call
   * without it).
   */
  readonly thoughtSignatures?: boolean | undefined;
  /**
   * Whether the server streams OpenRouter's `reasoning_details` (reasoning text, summaries, encrypted reasoning) and
   * wants them back: kept in the thinking block's `signature` and sent back as the assistant message's
   * `reasoning_details`, so reasoning survives tool-call turns.
   */
  readonly reasoningDetails?: boolean | undefined;
  /**
   * What selects this profile in {@link detectOpenAICompat}: host names (`api.deepseek.com`, matching it and its
   * subdomains) and ports (`:11434`, matching a URL on that port exactly).
   */
  readonly hosts?: readonly string[] | undefined;
  /**
   * Which file parts the server takes in user messages (Chat Completions): `pdf` (a `file` part with `file_data`, PDF
   * only, as OpenAI documents), `fileId` (a `file` part naming an uploaded file, PDF only) and `audio` (`input_audio`,
   * wav or mp3). Absent: none of them. Whatever it says, a text file (`text/*`, JSON, XML, YAML…) is sent as a text part
   * and an image file as `image_url`; a file the profile does not take ends the call with a `model_incapable` error
   * before the request is sent.
   */
  readonly files?: { readonly pdf?: boolean; readonly fileId?: boolean; readonly audio?: boolean } | undefined;
  /**
   * The `response_format` the server takes for native structured output (`StreamRequest.output`): `json_schema` (the
   * default when absent) or `json_object` / `false` (no schema: a request with `output` ends with a `model_incapable`
   * error before it is sent — such a server's models must not claim `structuredOutput: 'json_schema'`).
   */
  readonly responseFormat?: 'json_schema' | 'json_object' | false | undefined;
}

const COMPAT_REASONING: readonly string[] = ['reasoning_content', 'reasoning'];

/**
 * The built-in profiles. Each field follows the server's own documentation; docs/providers.md has the table.
 * Native structured output (`response_format` `json_schema`) on every profile but `deepseek` (`json_object` only);
 * PDF and uploaded-file parts on `openai`, `azure` and `openrouter`; `input_audio` on those, `vllm` and `gemini`.
 *
 * - `openai`: the API itself (`max_completion_tokens`, `reasoning_effort`, `stream_options`), and the profile of a
 *   server no other profile names (it reads `reasoning_content` and `reasoning`, which OpenAI never sends).
 * - `deepseek`: `reasoning_content` (deepseek-reasoner), `max_tokens`, no `reasoning_effort`.
 * - `openrouter`: `reasoning` (and `reasoning_content` from some upstreams), `max_tokens`, `reasoning_effort`,
 *   `reasoning_details` kept and sent back.
 * - `vllm`: `reasoning` (vLLM ≥ 0.10) or `reasoning_content` (older), `max_tokens`. No fixed host: pass it.
 * - `llamacpp`: llama.cpp's `llama-server` (port 8080): `reasoning_content`, `max_tokens`, usage not always sent.
 * - `ollama` (port 11434): `reasoning`, `max_tokens`, tool calls streamed whole.
 * - `lmstudio` (port 1234): `reasoning_content` / `reasoning`, `max_tokens`.
 * - `groq`: `reasoning` (with `reasoning_format: parsed`), `max_completion_tokens`, usage also in `x_groq.usage`.
 * - `azure`: Azure OpenAI (as `openai`; used with the `azure` option).
 * - `gemini`: Gemini's OpenAI endpoint: `max_tokens`, `reasoning_effort`, thought signatures in `extra_content`.
 */
export const OPENAI_COMPAT = {
  openai: {
    name: 'openai',
    maxTokensField: 'max_completion_tokens',
    streamOptions: true,
    reasoningEffort: true,
    // OpenAI streams no reasoning text; a server no profile names may, in either field.
    reasoningFields: COMPAT_REASONING,
    hosts: ['api.openai.com'],
    files: { pdf: true, fileId: true, audio: true },
  },
  deepseek: {
    name: 'deepseek',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: false,
    reasoningFields: ['reasoning_content'],
    hosts: ['api.deepseek.com'],
    // DeepSeek's JSON output is `json_object`, without a schema.
    responseFormat: 'json_object',
  },
  openrouter: {
    name: 'openrouter',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: true,
    reasoningFields: ['reasoning', 'reasoning_content'],
    reasoningDetails: true,
    hosts: ['openrouter.ai'],
    files: { pdf: true, audio: true },
  },
  vllm: {
    name: 'vllm',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: false,
    reasoningFields: ['reasoning', 'reasoning_content'],
    files: { audio: true },
  },
  llamacpp: {
    name: 'llamacpp',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: false,
    reasoningFields: COMPAT_REASONING,
    hosts: [':8080'],
  },
  ollama: {
    name: 'ollama',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: true,
    reasoningFields: ['reasoning', 'reasoning_content'],
    hosts: [':11434', 'ollama.com'],
  },
  lmstudio: {
    name: 'lmstudio',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: false,
    reasoningFields: COMPAT_REASONING,
    hosts: [':1234'],
  },
  groq: {
    name: 'groq',
    maxTokensField: 'max_completion_tokens',
    streamOptions: true,
    reasoningEffort: false,
    reasoningFields: ['reasoning'],
    usagePaths: [['x_groq', 'usage']],
    hosts: ['api.groq.com'],
  },
  azure: {
    name: 'azure',
    maxTokensField: 'max_completion_tokens',
    streamOptions: true,
    reasoningEffort: true,
    reasoningFields: [],
    hosts: ['openai.azure.com', 'cognitiveservices.azure.com'],
    files: { pdf: true, fileId: true, audio: true },
  },
  gemini: {
    name: 'gemini',
    maxTokensField: 'max_tokens',
    streamOptions: true,
    reasoningEffort: true,
    reasoningFields: [],
    thoughtSignatures: true,
    hosts: ['generativelanguage.googleapis.com'],
    files: { audio: true },
  },
} as const satisfies Record<string, OpenAICompat>;

/** The name of a built-in profile. */
export type OpenAICompatName = keyof typeof OPENAI_COMPAT;

/**
 * The built-in profile a `baseURL` points at: the first whose `hosts` names its host or its port; `openai`
 * for no URL, OpenAI's own, or a server none of them names (vLLM has no fixed host: name its profile).
 *
 * @example
 * detectOpenAICompat('http://localhost:11434/v1').name                // 'ollama'
 * detectOpenAICompat('https://api.deepseek.com').name                 // 'deepseek'
 */
export function detectOpenAICompat(baseURL: string | undefined): OpenAICompat {
  if (baseURL === undefined) return OPENAI_COMPAT.openai;
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return OPENAI_COMPAT.openai; // the SDK reports a bad URL itself
  }
  const hostname = url.hostname.toLowerCase();
  const port = url.port === '' ? undefined : `:${url.port}`;
  for (const profile of Object.values(OPENAI_COMPAT) as OpenAICompat[]) {
    const hit = profile.hosts?.some((host) =>
      host.startsWith(':') ? host === port : hostname === host || hostname.endsWith(`.${host}`),
    );
    if (hit) return profile;
  }
  return OPENAI_COMPAT.openai;
}
