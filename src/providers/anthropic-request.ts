/**
 * cubepi messages → an Anthropic Messages API request.
 * @module
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { FileContent, ImageContent, TextContent } from '../types/content.js';
import { canonicalJson, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamRequest, ToolChoice } from '../types/provider.js';
import { anthropicFileBlock } from './anthropic-files.js';
import { anthropicOutputSchema } from './anthropic-output.js';
import { adaptiveOnly, claudeEffort, claudeThinking } from './anthropic-thinking.js';
import { normalizeToolCallId } from './normalize-tool-call-id.js';
import { transformMessages } from './transform-messages.js';

/**
 * How long Anthropic keeps the prompt-cache breakpoints cubepi sets: `none` (no breakpoints), `short` (5 minutes, the
 * API default) or `long` (1 hour; writes cost more, see the model table).
 */
export type CacheRetention = 'none' | 'short' | 'long';

/** Provider-level settings the request builder needs. */
export interface AnthropicRequestSettings {
  /** The provider's id: its own thinking blocks are replayed with their signatures. */
  readonly provider: string;
  readonly cacheRetention: CacheRetention;
  /** `max_tokens` when the request does not set `maxTokens`. */
  readonly defaultMaxTokens: number;
  /** The model's largest output, when known: `max_tokens` never asks for more. */
  readonly modelMaxTokens?: number | undefined;
}

type CacheControl = Anthropic.CacheControlEphemeral;
type Block = Anthropic.ContentBlockParam;

/**
 * Builds the streaming request body. Deterministic: the same transcript gives the same bytes (tool-call arguments are
 * re-serialised with sorted keys), which keeps Anthropic's prompt cache warm across resumes.
 *
 * - Prompt-cache breakpoints on the system prompt, the last tool and the last message (unless `cacheRetention` is
 *   `none`; `long` asks for a 1-hour TTL). `options.cacheRetention` overrides the provider's setting per request.
 * - `options.thinkingBudget > 0` enables extended thinking with that budget (`max_tokens` then makes room for it); on
 *   Claude 5 models, which only think adaptively, it enables adaptive thinking. `options.thinking: 'adaptive' |
 *   'disabled'` sets the mode explicitly.
 * - `request.reasoning` (a {@link ResolvedReasoning}), when neither option is given (they win): `off` →
 *   `thinking: { type: 'disabled' }` (left out for a model known not to reason); a `budgetTokens` →
 *   `{ type: 'enabled', budget_tokens }` (adaptive on Claude 5); an `effort` → `output_config.effort` (`minimal` is
 *   sent as `low`, the lowest the API takes), with `thinking: { type: 'adaptive' }` on a model that takes no budget
 *   (Opus 4.6 on: it thinks adaptively at that effort); Opus 4.5, which takes both, gets the budget and the effort.
 * - `request.output` (native structured output) → `output_config.format: { type: 'json_schema', schema }`, the schema
 *   rewritten for Claude by {@link anthropicOutputSchema}; one it cannot express throws a `RequestRefusal` naming the
 *   path (the provider's `bad_request` error event, before sending). The answer's text is then the JSON.
 * - Consecutive tool results become one user message; images and files ({@link anthropicFileBlock}: PDFs and text
 *   as `document` blocks, by data, URL or Files API id) go in user messages and in tool results, whose content takes
 *   them as they are. A file the API cannot take throws a `RequestRefusal` (`model_incapable`) naming it.
 * - The transcript is first made safe for Anthropic ({@link transformMessages}: foreign thinking as text, ids
 *   normalised, failed turns skipped, missing results synthesised).
 */
export function buildAnthropicRequest(
  model: Model,
  messages: readonly Message[],
  request: StreamRequest,
  settings: AnthropicRequestSettings,
): Anthropic.MessageCreateParamsStreaming {
  const options = request.options ?? {};
  const retention = isCacheRetention(options.cacheRetention) ? options.cacheRetention : settings.cacheRetention;
  const cache: CacheControl | undefined =
    retention === 'none' ? undefined : retention === 'long' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  const optionBudget =
    typeof options.thinkingBudget === 'number' && options.thinkingBudget > 0 ? options.thinkingBudget : 0;
  // The provider-specific options win over the run's reasoning setting: either one given, the setting is not read.
  const explicit = optionBudget > 0 || options.thinking === 'adaptive' || options.thinking === 'disabled';
  const reasoning = explicit ? undefined : request.reasoning;
  const budget = optionBudget > 0 ? optionBudget : !reasoning?.off ? (reasoning?.budgetTokens ?? 0) : 0;
  let maxTokens = options.maxTokens ?? settings.defaultMaxTokens;
  // Manual thinking counts against max_tokens, which must exceed the budget: add the budget on top of the answer's.
  if (budget > 0 && !adaptiveOnly(model.id)) {
    maxTokens = Math.min(maxTokens + budget, settings.modelMaxTokens ?? Number.POSITIVE_INFINITY);
  }

  const params: Anthropic.MessageCreateParamsStreaming = {
    model: model.id,
    max_tokens: maxTokens,
    messages: convertMessages(messages, settings.provider, model.id, cache),
    stream: true,
  };
  if (request.systemPrompt) {
    params.system = [{ type: 'text', text: request.systemPrompt, ...(cache ? { cache_control: cache } : {}) }];
  }
  const tools = request.tools ?? [];
  if (tools.length > 0) {
    params.tools = tools.map((tool, i) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.inputSchema as Anthropic.Tool.InputSchema,
      ...(cache && i === tools.length - 1 ? { cache_control: cache } : {}),
    }));
    if (request.toolChoice !== undefined) params.tool_choice = toolChoice(request.toolChoice);
  }
  const fromSetting = reasoning === undefined ? undefined : claudeThinking(model, reasoning);
  const thinking = reasoning === undefined ? thinkingConfig(model.id, options.thinking, budget) : fromSetting;
  if (thinking !== undefined) params.thinking = thinking;
  const outputConfig: Anthropic.OutputConfig = {};
  if (reasoning !== undefined && !reasoning.off && reasoning.effort !== undefined) {
    outputConfig.effort = claudeEffort(reasoning.effort, fromSetting);
  }
  if (request.output !== undefined) {
    outputConfig.format = {
      type: 'json_schema',
      schema: anthropicOutputSchema(request.output.schema, request.output.description),
    };
  }
  if (Object.keys(outputConfig).length > 0) params.output_config = outputConfig;
  // Newer SDK types dropped `temperature` (Claude 5 models reject sampling parameters); older models still take it.
  if (typeof options.temperature === 'number') Object.assign(params, { temperature: options.temperature });
  return params;
}

function convertMessages(
  messages: readonly Message[],
  provider: string,
  model: string,
  cache: CacheControl | undefined,
): Anthropic.MessageParam[] {
  const transcript = transformMessages(messages, {
    provider,
    model,
    // An OpenAI Responses id is `call_id|item_id`: Anthropic only needs (and accepts) the call part.
    normalizeToolCallId: (id) => normalizeToolCallId(id.split('|')[0]!, 64),
  });
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  let resultsMessage: Block[] | undefined; // the user message collecting consecutive tool results
  for (const message of transcript) {
    if (message.role === 'toolResult') {
      // Anthropic wants every tool_result answering one assistant turn in a single user message.
      if (resultsMessage === undefined) out.push({ role: 'user', content: (resultsMessage = []) });
      resultsMessage.push(toolResultBlock(message));
      continue;
    }
    resultsMessage = undefined;
    const content: Block[] = [];
    if (message.role === 'user') {
      if (typeof message.content === 'string') {
        if (message.content !== '') content.push({ type: 'text', text: message.content });
      } else {
        for (const block of message.content) {
          const converted = userBlock(block);
          if (converted) content.push(converted);
        }
      }
    } else {
      for (const block of message.content) {
        if (block.type === 'text') content.push({ type: 'text', text: block.text });
        else if (block.type === 'toolCall') {
          const input = JSON.parse(canonicalJson(block.arguments)) as Record<string, unknown>;
          content.push({ type: 'tool_use', id: block.id, name: block.name, input });
        } else if (block.redacted) content.push({ type: 'redacted_thinking', data: block.thinking });
        else if (block.signature) {
          content.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
        } else if (block.thinking.trim() !== '') {
          // Anthropic rejects thinking without its signature (a stream cut before signature_delta): keep it as text.
          content.push({ type: 'text', text: block.thinking });
        }
      }
    }
    if (content.length > 0) out.push({ role: message.role, content });
  }
  if (cache) markLastBlock(out, cache);
  return out;
}

function userBlock(block: TextContent | ImageContent | FileContent): Block | undefined {
  if (block.type === 'text') return block.text === '' ? undefined : { type: 'text', text: block.text };
  if (block.type === 'file') return anthropicFileBlock(block, 'in a user message');
  return imageBlock(block);
}

function imageBlock(block: ImageContent): Anthropic.ImageBlockParam {
  return {
    type: 'image',
    source: {
      type: 'base64',
      media_type: block.mimeType as Anthropic.Base64ImageSource['media_type'],
      data: block.data,
    },
  };
}

function toolResultBlock(message: ToolResultMessage): Anthropic.ToolResultBlockParam {
  const content: (Anthropic.TextBlockParam | Anthropic.ImageBlockParam | Anthropic.DocumentBlockParam)[] = [];
  for (const block of message.content) {
    if (block.type === 'image') content.push(imageBlock(block));
    else if (block.type === 'file') {
      content.push(anthropicFileBlock(block, `in the result of tool call ${message.toolCallId}`));
    } else if (block.text !== '') content.push({ type: 'text', text: block.text });
  }
  return {
    type: 'tool_result',
    tool_use_id: message.toolCallId,
    ...(content.length > 0 ? { content } : {}),
    ...(message.isError ? { is_error: true } : {}),
  };
}

/** The last message's last block that can carry a breakpoint (thinking blocks cannot). */
function markLastBlock(messages: { content: Block[] }[], cache: CacheControl): void {
  const content = messages[messages.length - 1]?.content;
  if (content === undefined) return;
  for (let i = content.length - 1; i >= 0; i--) {
    const block = content[i]!;
    if (
      block.type === 'text' ||
      block.type === 'image' ||
      block.type === 'document' ||
      block.type === 'tool_use' ||
      block.type === 'tool_result'
    ) {
      content[i] = { ...block, cache_control: cache };
      return;
    }
  }
}

function toolChoice(choice: ToolChoice): Anthropic.ToolChoice {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any' };
  return { type: 'tool', name: choice.name };
}

function isCacheRetention(value: unknown): value is CacheRetention {
  return value === 'none' || value === 'short' || value === 'long';
}

/**
 * `options.thinking` (`'adaptive'` or `'disabled'`) wins; else a budget enables manual extended thinking, or adaptive
 * thinking on models that only think adaptively; else nothing is sent (the model's default).
 */
function thinkingConfig(modelId: string, mode: unknown, budget: number): Anthropic.ThinkingConfigParam | undefined {
  if (mode === 'adaptive') return { type: 'adaptive' };
  if (mode === 'disabled') return { type: 'disabled' };
  if (budget <= 0) return undefined;
  return adaptiveOnly(modelId) ? { type: 'adaptive' } : { type: 'enabled', budget_tokens: budget };
}
