/**
 * cubepi messages → an OpenAI Chat Completions request (also what OpenAI-compatible servers accept).
 * @module
 */
import type OpenAI from 'openai';
import type { ImageContent, TextContent } from '../types/content.js';
import { canonicalJson, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamRequest, ToolChoice } from '../types/provider.js';
import { normalizeToolCallId } from './normalize-tool-call-id.js';
import type { OpenAICompat } from './openai-compat.js';
import { noFile, transformMessages } from './transform-messages.js';

type Params = OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming;
type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type UserPart = OpenAI.Chat.Completions.ChatCompletionContentPart;

/** Provider-level settings the request builder needs. */
export interface CompletionsRequestSettings {
  /** The provider's id (see `transformMessages`). */
  readonly provider: string;
  /** Which field carries `maxTokens`: OpenAI's `max_completion_tokens`, or `max_tokens` for older compatible servers. */
  readonly maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** The server's profile: which optional fields it takes, whether calls carry thought signatures. */
  readonly compat: OpenAICompat;
}

/**
 * Builds the streaming Chat Completions request body, deterministic for the same transcript (tool-call arguments are
 * re-serialised with sorted keys, so OpenAI's automatic prompt cache stays warm across resumes).
 *
 * - `stream_options.include_usage` is on (the last chunk carries the usage) unless the profile says the server
 *   rejects it; `reasoning_effort` likewise. Tool schemas never carry `strict`.
 * - With `compat.thoughtSignatures` (Gemini), a tool call's `signature` goes back as
 *   `extra_content.google.thought_signature`, byte for byte; with `compat.reasoningDetails` (OpenRouter), the
 *   receiving model's thinking goes back as the assistant message's `reasoning_details`.
 * - Thinking cannot be replayed through Chat Completions: the receiving model's own thinking is left out; another
 *   provider's becomes plain text ({@link transformMessages}).
 * - Tool results go in `tool` messages (text only, as the API requires); images a tool returned follow in one user
 *   message after the results, so vision models still see them.
 * - Tool-call ids are cut to OpenAI's 40 characters (`normalizeToolCallId`).
 * - `options.reasoningEffort` becomes `reasoning_effort`; `options.maxTokens` the field named by the settings.
 */
export function buildCompletionsRequest(
  model: Model,
  messages: readonly Message[],
  request: StreamRequest,
  settings: CompletionsRequestSettings,
): Params {
  const options = request.options ?? {};
  const params: Params = {
    model: model.id,
    messages: convertMessages(model, messages, request.systemPrompt, settings),
    stream: true,
  };
  if (settings.compat.streamOptions) params.stream_options = { include_usage: true };
  const tools = request.tools ?? [];
  if (tools.length > 0) {
    params.tools = tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: { ...tool.inputSchema } },
    }));
    if (request.toolChoice !== undefined) params.tool_choice = toolChoice(request.toolChoice);
  }
  if (typeof options.maxTokens === 'number') params[settings.maxTokensField] = options.maxTokens;
  if (typeof options.temperature === 'number') params.temperature = options.temperature;
  if (typeof options.reasoningEffort === 'string' && settings.compat.reasoningEffort) {
    params.reasoning_effort = options.reasoningEffort as NonNullable<Params['reasoning_effort']>;
  }
  return params;
}

function convertMessages(
  model: Model,
  messages: readonly Message[],
  systemPrompt: string | undefined,
  settings: CompletionsRequestSettings,
): ChatMessage[] {
  const signatures = settings.compat.thoughtSignatures === true;
  const transcript = transformMessages(messages, {
    provider: settings.provider,
    model: model.id,
    // OpenAI caps ids at 40 characters; a Responses id `call_id|item_id` only needs its call part.
    normalizeToolCallId: (id) => normalizeToolCallId(id.split('|')[0]!, 40),
  });
  const out: ChatMessage[] = [];
  if (systemPrompt) out.push({ role: 'system', content: systemPrompt });
  let pendingImages: UserPart[] = []; // images from the current run of tool results
  const flushImages = () => {
    if (pendingImages.length === 0) return;
    out.push({
      role: 'user',
      content: [{ type: 'text', text: 'Images returned by the tools above:' }, ...pendingImages],
    });
    pendingImages = [];
  };
  for (const message of transcript) {
    if (message.role === 'toolResult') {
      out.push({ role: 'tool', tool_call_id: message.toolCallId, content: toolResultText(message) });
      for (const block of message.content) if (block.type === 'image') pendingImages.push(imagePart(block));
      continue;
    }
    flushImages();
    if (message.role === 'user') {
      if (typeof message.content === 'string') out.push({ role: 'user', content: message.content });
      else if (message.content.length > 0)
        out.push({ role: 'user', content: message.content.map((block) => userPart(noFile(block))) });
      continue;
    }
    let text = '';
    const details: unknown[] = []; // OpenRouter's reasoning_details, from this provider's own thinking blocks
    const toolCalls: OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[] = [];
    for (const block of message.content) {
      if (block.type === 'text') text += block.text;
      else if (block.type === 'toolCall') {
        toolCalls.push({
          id: block.id,
          type: 'function',
          function: { name: block.name, arguments: canonicalJson(block.arguments) },
          // Gemini's OpenAI endpoint: the call's thought signature, where it sent it (a field the SDK does not type).
          ...(signatures && block.signature !== undefined
            ? { extra_content: { google: { thought_signature: block.signature } } }
            : {}),
        });
      } else if (block.type === 'thinking' && settings.compat.reasoningDetails && block.signature !== undefined) {
        details.push(...parseDetails(block.signature));
      }
      // Otherwise the receiving model's thinking has no field in Chat Completions; it is not replayed.
    }
    if (text === '' && toolCalls.length === 0) continue;
    out.push({
      role: 'assistant',
      content: text === '' ? null : text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      // A field OpenRouter reads and the SDK does not type.
      ...(details.length > 0 ? ({ reasoning_details: details } as object) : {}),
    });
  }
  flushImages();
  return out;
}

/** The `reasoning_details` a thinking block's signature holds (JSON written by the mapper); none if it is not that. */
function parseDetails(signature: string): unknown[] {
  try {
    const parsed: unknown = JSON.parse(signature);
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}

function userPart(block: TextContent | ImageContent): UserPart {
  return block.type === 'text' ? { type: 'text', text: block.text } : imagePart(block);
}

function imagePart(block: ImageContent): OpenAI.Chat.Completions.ChatCompletionContentPartImage {
  return { type: 'image_url', image_url: { url: `data:${block.mimeType};base64,${block.data}` } };
}

function toolResultText(message: ToolResultMessage): string {
  const texts = message.content.filter((b): b is TextContent => b.type === 'text').map((b) => b.text);
  if (texts.length > 0) return texts.join('\n');
  return message.content.length > 0 ? '(see the attached image)' : '';
}

function toolChoice(choice: ToolChoice): OpenAI.Chat.Completions.ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.name } };
}
