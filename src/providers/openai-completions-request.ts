/**
 * cubepi messages → an OpenAI Chat Completions request (also what OpenAI-compatible servers accept).
 * @module
 */
import type OpenAI from 'openai';
import type { ImageContent, UserContent } from '../types/content.js';
import { canonicalJson, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamRequest, ToolChoice } from '../types/provider.js';
import { findModel } from './model-table.js';
import { normalizeToolCallId } from './normalize-tool-call-id.js';
import type { OpenAICompat } from './openai-compat.js';
import { chatFilePart } from './openai-completions-files.js';
import type { BlockPlace } from './openai-file-blocks.js';
import { OpenAIRequestRefusal } from './openai-request-refusal.js';
import { assertStrictSchema } from './openai-strict-schema.js';
import { transformMessages } from './transform-messages.js';

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
 * - Files in user messages become content parts ({@link chatFilePart}: PDFs as `file` parts, wav/mp3 as
 *   `input_audio`, text files as text, images as `image_url`); a file the API or the profile cannot take throws an
 *   {@link OpenAIRequestRefusal} naming the block (the provider ends the call `model_incapable`, unsent).
 * - Tool results go in `tool` messages (text only, as the API requires; a text file a tool returned is part of that
 *   text); images and other files a tool returned follow in one user message after the results, so the model still
 *   sees them.
 * - Tool-call ids are cut to OpenAI's 40 characters (`normalizeToolCallId`).
 * - `request.output` (native structured output) becomes `response_format: { type: 'json_schema', json_schema: { name,
 *   description, schema, strict } }`; on a profile without `json_schema` ({@link OpenAICompat.responseFormat}) it
 *   throws an {@link OpenAIRequestRefusal} (`model_incapable`), as does a strict schema OpenAI would reject
 *   (`bad_request`, naming the path: `strictSchemaProblem`).
 * - `reasoning_effort`, where the profile takes it: `options.reasoningEffort` when given, else `request.reasoning`
 *   for a model that reasons (`off` → `none`, an effort level as is; a budget alone has no Chat Completions field and
 *   is not sent); `options.maxTokens` the field named by the settings.
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
  const effort = reasoningEffort(model, request, settings.compat);
  if (effort !== undefined) params.reasoning_effort = effort;
  if (request.output !== undefined) params.response_format = responseFormat(request, settings.compat);
  return params;
}

/** The `reasoning_effort` sent: the provider-specific option wins over the run's resolved setting. */
function reasoningEffort(model: Model, request: StreamRequest, compat: OpenAICompat): Params['reasoning_effort'] {
  if (!compat.reasoningEffort) return undefined;
  const option = request.options?.reasoningEffort;
  if (typeof option === 'string') return option as NonNullable<Params['reasoning_effort']>;
  const reasoning = request.reasoning;
  // A model known not to reason rejects the field (OpenAI: "Unsupported parameter"), even as `none`.
  if (reasoning === undefined || (model.reasoning ?? findModel(model.id)?.reasoning) === false) return undefined;
  if (reasoning.off === true) return 'none';
  return reasoning.effort;
}

function responseFormat(request: StreamRequest, compat: OpenAICompat): NonNullable<Params['response_format']> {
  const output = request.output!;
  const format = compat.responseFormat ?? 'json_schema';
  if (format !== 'json_schema') {
    throw new OpenAIRequestRefusal(
      'model_incapable',
      `OpenAI Chat Completions on the ${compat.name} profile takes no json_schema response_format` +
        `${format === 'json_object' ? ' (json_object only)' : ''}: ask for the output in tool or prompt mode`,
    );
  }
  assertStrictSchema('OpenAI Chat Completions', output);
  return {
    type: 'json_schema',
    json_schema: {
      name: output.name,
      ...(output.description !== undefined ? { description: output.description } : {}),
      schema: { ...output.schema },
      strict: output.strict,
    },
  };
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
  let pendingImages: UserPart[] = []; // images and files from the current run of tool results
  const flushImages = () => {
    if (pendingImages.length === 0) return;
    const images = pendingImages.every((part) => part.type === 'image_url');
    out.push({
      role: 'user',
      content: [
        { type: 'text', text: images ? 'Images returned by the tools above:' : 'Files returned by the tools above:' },
        ...pendingImages,
      ],
    });
    pendingImages = [];
  };
  transcript.forEach((message, index) => {
    if (message.role === 'toolResult') {
      const { text, attachments } = toolResult(message, index, settings.compat);
      out.push({ role: 'tool', tool_call_id: message.toolCallId, content: text });
      pendingImages.push(...attachments);
      return;
    }
    flushImages();
    if (message.role === 'user') {
      if (typeof message.content === 'string') out.push({ role: 'user', content: message.content });
      else if (message.content.length > 0)
        out.push({
          role: 'user',
          content: message.content.map((block, b) =>
            userPart(block, { message: index, role: 'user', block: b }, settings.compat),
          ),
        });
      return;
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
    if (text === '' && toolCalls.length === 0) return;
    out.push({
      role: 'assistant',
      content: text === '' ? null : text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      // A field OpenRouter reads and the SDK does not type.
      ...(details.length > 0 ? ({ reasoning_details: details } as object) : {}),
    });
  });
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

function userPart(block: UserContent, at: BlockPlace, compat: OpenAICompat): UserPart {
  if (block.type === 'text') return { type: 'text', text: block.text };
  return block.type === 'image' ? imagePart(block) : chatFilePart(block, at, compat);
}

function imagePart(block: ImageContent): OpenAI.Chat.Completions.ChatCompletionContentPartImage {
  return { type: 'image_url', image_url: { url: `data:${block.mimeType};base64,${block.data}` } };
}

/** A tool result as the `tool` message's text (its text blocks and text files) and the parts that follow it. */
function toolResult(
  message: ToolResultMessage,
  index: number,
  compat: OpenAICompat,
): { text: string; attachments: UserPart[] } {
  const texts: string[] = [];
  const attachments: UserPart[] = [];
  message.content.forEach((block, b) => {
    if (block.type === 'text') texts.push(block.text);
    else if (block.type === 'image') attachments.push(imagePart(block));
    else {
      const part = chatFilePart(block, { message: index, role: 'toolResult', block: b }, compat);
      if (part.type === 'text') texts.push(part.text);
      else attachments.push(part);
    }
  });
  if (texts.length > 0) return { text: texts.join('\n'), attachments };
  if (attachments.length === 0) return { text: '', attachments };
  const images = attachments.every((part) => part.type === 'image_url');
  return { text: images ? '(see the attached image)' : '(see the attached file)', attachments };
}

function toolChoice(choice: ToolChoice): OpenAI.Chat.Completions.ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.name } };
}
