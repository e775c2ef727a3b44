// Hand-kept facts for scripts/generate-models.mjs: what the pinned snapshot (snapshot.json) lacks or gets wrong.
// The snapshot says, per model: name, context window, largest output, text/image input, reasoning with its effort
// levels, whether it can be turned off, and prices. It says nothing of PDF/audio/file input, parallel tool calls,
// native structured output, prompt-caching style or thinking-budget ranges: those come from the family rules below,
// each from the vendor's documentation (read November 2026). A rule or patch says why it is here.

/** Which snapshot providers feed which cubepi provider id, and which of their rows are chat models we can serve. */
export const PROVIDERS = {
  anthropic: { from: 'anthropic', keep: () => true },
  // Image, speech, embedding and realtime models are not chat models (the snapshot marks most with `kind`).
  openai: { from: 'openai', keep: (m) => m.kind === undefined && !/realtime|deep-research|transcribe|tts/.test(m.id) },
  // Gemma, Live (audio sessions), robotics and computer-use previews are not served by the Gemini provider's chat path.
  google: {
    from: 'google',
    keep: (m) => m.kind === undefined && !/gemma|live|robotics|deep-research|computer-use/.test(m.id),
  },
  bedrock: { from: 'amazon-bedrock', keep: () => true },
};

/**
 * Family rules, first match wins per field: `match(provider, id)` and the facts it sets. Fields: `input` (kinds added
 * to the snapshot's), `tools`, `parallelTools`, `structuredOutput`, `promptCaching`, `budget` (thinking-token range,
 * for models the snapshot says are driven by a budget).
 */
export const RULES = [
  // Anthropic: PDFs and plain-text documents as `document` blocks on every current Claude; parallel tool use;
  // structured outputs (`output_config.format` json_schema) on Opus 4.1 and from the 4.5 generation on, a forced
  // tool before; explicit cache breakpoints; `budget_tokens` at least 1,024 and below `max_tokens`.
  {
    match: (p, id) => p === 'anthropic' && /claude-3/.test(id),
    structuredOutput: false,
  },
  {
    match: (p, id) => p === 'anthropic' && /claude-(opus|sonnet)-4(-0|-2025|$)/.test(id),
    structuredOutput: false,
  },
  {
    match: (p) => p === 'anthropic',
    input: ['pdf', 'file'],
    tools: true,
    parallelTools: true,
    structuredOutput: 'json_schema',
    promptCaching: 'explicit',
    budget: (m) => ({ min: 1_024, max: m.maxTokens - 1 }),
  },
  // OpenAI: PDF and text-file inputs on every model that takes images (the Responses API's
  // input_file; Chat Completions sends their text); parallel tool calls; strict json_schema (Structured Outputs) from
  // gpt-4o-2024-08-06 and gpt-4o-mini on, with JSON mode only before it (gpt-4-turbo, gpt-4o-2024-05-13) and neither
  // on the original gpt-4; automatic prompt caching. Reasoning is by effort only.
  { match: (p, id) => p === 'openai' && id === 'gpt-4', structuredOutput: false },
  {
    match: (p, id) => p === 'openai' && (id === 'gpt-4-turbo' || id === 'gpt-4o-2024-05-13'),
    structuredOutput: 'json_mode',
  },
  {
    match: (p) => p === 'openai',
    input: (m) => (m.input.includes('image') ? ['pdf', 'file'] : []),
    tools: true,
    parallelTools: true,
    structuredOutput: 'json_schema',
    promptCaching: 'automatic',
  },
  // Gemini: images, PDFs, audio, video and text files inline on every Gemini ≥ 2.0; parallel function calls;
  // `responseJsonSchema`; implicit caching. Thinking budgets: 2.5 Pro 128–32,768 (cannot be off), 2.5 Flash
  // 0–24,576, 2.5 Flash-Lite 512–24,576 (both can be off).
  // Gemini 1.5 was retired (September 2025) before `responseJsonSchema` reached "all actively supported models"
  // (November 2025): it took only JSON mode and the OpenAPI `responseSchema`, which the provider does not send.
  { match: (p, id) => p === 'google' && /gemini-1\.5/.test(id), structuredOutput: 'json_mode' },
  {
    match: (p, id) => p === 'google' && /2\.5-pro/.test(id),
    budget: () => ({ min: 128, max: 32_768 }),
  },
  {
    match: (p, id) => p === 'google' && /2\.5-flash-lite/.test(id),
    budget: () => ({ min: 512, max: 24_576 }),
  },
  {
    match: (p) => p === 'google',
    input: ['pdf', 'audio', 'video', 'file'],
    tools: true,
    parallelTools: true,
    structuredOutput: 'json_schema',
    promptCaching: 'automatic',
    budget: () => ({ min: 0, max: 24_576 }),
  },
  // Bedrock Converse: document blocks (PDF, CSV, DOC, TXT, MD, HTML…) for Claude and Nova; cache points for Claude
  // and Nova; Claude's tool use and structured output as on Anthropic (4.5 on); DeepSeek R1 takes no tools on
  // Converse. Other families: tools as Converse's tool-use table says, one call per answer assumed (parallel calls are
  // documented for Claude and Nova only), no native schema, and no thinking control the table can state (their
  // reasoning switches are model-specific request fields).
  {
    match: (p, id) => p === 'bedrock' && /anthropic\.claude-3/.test(id),
    structuredOutput: false,
  },
  {
    match: (p, id) => p === 'bedrock' && /anthropic\.claude-(opus|sonnet)-4-(1-)?2025/.test(id),
    structuredOutput: false,
  },
  {
    match: (p, id) => p === 'bedrock' && /anthropic\./.test(id),
    input: ['pdf', 'file'],
    tools: true,
    parallelTools: true,
    structuredOutput: 'json_schema',
    promptCaching: 'explicit',
    budget: (m) => ({ min: 1_024, max: m.maxTokens - 1 }),
  },
  {
    match: (p, id) => p === 'bedrock' && /amazon\.nova/.test(id),
    input: ['pdf', 'file'],
    tools: true,
    parallelTools: true,
    structuredOutput: false,
    promptCaching: 'explicit',
  },
  { match: (p, id) => p === 'bedrock' && /deepseek\.r1/.test(id), tools: false },
  {
    match: (p) => p === 'bedrock',
    tools: true,
    parallelTools: false,
    structuredOutput: false,
    promptCaching: false,
  },
];

/**
 * Rows the snapshot does not have: models the vendor lists (pricing page, November 2026) that the pinned snapshot
 * predates or misses. Same shape as a snapshot row.
 */
export const EXTRA_ROWS = {
  anthropic: [
    {
      id: 'claude-sonnet-5-5',
      revision: '5.5.0',
      name: 'Claude Sonnet 5.5',
      reasoning: true,
      input: ['text', 'image'],
      cost: { input: 2, output: 10, cacheRead: 0.1, cacheWrite: 2.5 },
      contextWindow: 1_000_000,
      maxTokens: 128_000,
      thinking: { mode: 'anthropic-adaptive', efforts: ['low', 'medium', 'high', 'xhigh', 'max'] },
    },
    {
      id: 'claude-haiku-5-5',
      revision: '5.5.0',
      name: 'Claude Haiku 5.5',
      reasoning: true,
      input: ['text', 'image'],
      cost: { input: 0.1, output: 0.5, cacheRead: 0.01, cacheWrite: 0.125 },
      contextWindow: 1_000_000,
      maxTokens: 128_000,
      thinking: { mode: 'anthropic-adaptive', efforts: ['low', 'medium', 'high', 'max'] },
    },
  ],
};

/**
 * Corrections to snapshot rows, by cubepi provider and id: the fields to replace, with why.
 */
export const PATCHES = {
  anthropic: {
    // The snapshot gives Sonnet 4.5 the 1M window of its long-context beta; without the beta header (which the
    // Anthropic provider does not send) the API takes 200k, so a longer request must not be planned for.
    'claude-sonnet-4-5': { contextWindow: 200_000 },
  },
};
