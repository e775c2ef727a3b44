/**
 * cubepi messages → an Amazon Bedrock ConverseStream request.
 * @module
 */
import type {
  CachePointBlock,
  ContentBlock,
  ConverseStreamRequest,
  GuardrailStreamConfiguration,
  Message as BedrockMessage,
  SystemContentBlock,
  Tool,
  ToolChoice as BedrockToolChoice,
  ToolResultContentBlock,
} from '@aws-sdk/client-bedrock-runtime';
import type { FileContent, ImageContent, TextContent } from '../types/content.js';
import { InvalidInputError } from '../types/errors.js';
import { canonicalJson, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamRequest, ToolChoice } from '../types/provider.js';
import type { CacheRetention } from './anthropic-request.js';
import { anthropicOutputSchema } from './anthropic-output.js';
import {
  bedrockFileBlock,
  DOCUMENT_FORMATS,
  documentName,
  documentNames,
  IMAGE_FORMATS,
  type DocumentNames,
} from './bedrock-files.js';
import { bedrockReasoning, REASONING_FIELDS } from './bedrock-reasoning.js';
import { normalizeToolCallId } from './normalize-tool-call-id.js';
import { RequestRefusal } from './request-refusal.js';
import { transformMessages } from './transform-messages.js';

/** Provider-level settings the request builder needs. */
export interface BedrockRequestSettings {
  /** The provider's id: its own reasoning blocks are replayed with their signatures. */
  readonly provider: string;
  /** The provider's cache setting; `undefined` means "cache points where the model family takes them". */
  readonly cacheRetention: CacheRetention | undefined;
  /** Sent as `guardrailConfig` on every request. */
  readonly guardrail?: GuardrailStreamConfiguration | undefined;
  /** `inferenceConfig.maxTokens` when the request does not set `maxTokens`; absent: Bedrock's default. */
  readonly defaultMaxTokens?: number | undefined;
  /** Merged into `additionalModelRequestFields` (model-specific fields the Converse API passes through). */
  readonly additionalModelRequestFields?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Builds the ConverseStream request. Deterministic: the same transcript gives the same request (tool-call input
 * re-serialised with sorted keys), which keeps Bedrock's prompt cache warm across resumes.
 *
 * - **Cache points** (`{ cachePoint: { type: 'default' } }`) after the system prompt, after the tools (Claude only:
 *   Nova takes them in the system prompt and messages alone) and after the last message, on the model families that
 *   take them (Anthropic Claude, Amazon Nova), unless `cacheRetention` is `none`; `long` asks for a 1-hour TTL.
 *   `options.cacheRetention` overrides the provider's setting per request; asking for `short`/`long` on another model
 *   family sends the cache points anyway (the caller knows the model; Bedrock answers a ValidationException if not).
 * - **Reasoning**: the model's own signed reasoning is replayed as `reasoningContent.reasoningText` with its
 *   signature, redacted reasoning as `reasoningContent.redactedContent` with the bytes received; reasoning without a
 *   signature (a stream cut short, a model that signs nothing) is sent as text, as Claude rejects it unsigned.
 *   `options.thinkingBudget > 0` turns on Claude's extended thinking (`additionalModelRequestFields.thinking`).
 * - **The run's reasoning** (`request.reasoning`), unless `options.thinkingBudget` or a reasoning field in
 *   `additionalModelRequestFields` (`thinking`, `reasoningConfig`, `reasoning_effort`, `output_config`) is given
 *   (those win): per family by {@link bedrockReasoning} (Claude's `thinking` and `outputConfig.effort`, Nova 2's
 *   `reasoningConfig`, gpt-oss's `reasoning_effort`).
 * - **Native structured output** (`request.output`): `outputConfig.textFormat` (`json_schema`, the schema as a JSON
 *   string with its name and description); for Claude the schema is first rewritten as Anthropic structured outputs
 *   take it ({@link anthropicOutputSchema}: one it cannot express throws a `RequestRefusal` naming the path).
 * - **Images and documents**: an `image` block whose `mimeType` is an image type becomes an `image` block; a PDF,
 *   CSV, Word, Excel, HTML, Markdown or plain-text `mimeType` becomes a `document` block (named `document-<n>`, as
 *   Converse requires a name). Another `mimeType` throws {@link InvalidInputError} naming it.
 * - **Files** ({@link bedrockFileBlock}): documents (named after the file, sanitized), images, audio and video, by
 *   bytes or `s3://` location, in user messages and tool results. A tool result takes no audio: an audio file there is
 *   sent right after the `toolResult` block, in the same user turn. What Converse cannot take throws a
 *   `RequestRefusal` (`model_incapable`) naming the block; a message holding a document but no text (which Converse
 *   answers with a 400) throws one of kind `bad_request`.
 * - A transcript with tool calls but no `tools` in the request gets a `toolConfig` naming the tools it used, described
 *   as no longer available (Converse refuses tool blocks without one).
 * - Consecutive tool results and a user message after them become one user message (Converse wants roles to
 *   alternate); empty text is left out (Converse rejects blank text blocks).
 * - The transcript is first made safe for Bedrock ({@link transformMessages}: foreign thinking as text, tool-call ids
 *   normalised to `[a-zA-Z0-9_-]{1,64}`, failed turns skipped, missing results synthesised).
 */
export function buildBedrockRequest(
  model: Model,
  messages: readonly Message[],
  request: StreamRequest,
  settings: BedrockRequestSettings,
): ConverseStreamRequest {
  const options = request.options ?? {};
  const family = modelFamily(model.id);
  const retention = isCacheRetention(options.cacheRetention)
    ? options.cacheRetention
    : (settings.cacheRetention ?? (family === 'other' ? 'none' : 'short'));
  const cachePoint: CachePointBlock | undefined =
    retention === 'none' ? undefined : retention === 'long' ? { type: 'default', ttl: '1h' } : { type: 'default' };

  const optionBudget =
    typeof options.thinkingBudget === 'number' && options.thinkingBudget > 0 ? options.thinkingBudget : 0;
  const extra: Record<string, unknown> = { ...settings.additionalModelRequestFields };
  if (isRecord(options.additionalModelRequestFields)) Object.assign(extra, options.additionalModelRequestFields);
  // The provider-specific options win over the run's reasoning setting: either one given, the setting is not read.
  const explicit = optionBudget > 0 || REASONING_FIELDS.some((field) => extra[field] !== undefined);
  const reasoning =
    explicit || request.reasoning === undefined ? {} : bedrockReasoning(model, family, request.reasoning);
  const budget = optionBudget > 0 ? optionBudget : (reasoning.budget ?? 0);
  const params: ConverseStreamRequest = {
    modelId: model.id,
    messages: convertMessages(messages, settings.provider, model.id, cachePoint),
  };
  if (request.systemPrompt) {
    const system: SystemContentBlock[] = [{ text: request.systemPrompt }];
    if (cachePoint) system.push({ cachePoint });
    params.system = system;
  }

  const tools = request.tools ?? [];
  if (tools.length === 0) {
    // Converse refuses toolUse/toolResult blocks without a toolConfig ("The toolConfig field must be defined…"): a
    // transcript with tool calls but no tools now describes the tools it used, as no longer available.
    const used = usedToolNames(params.messages ?? []);
    if (used.length > 0) {
      params.toolConfig = {
        tools: used.map((name) => ({
          toolSpec: { name, description: UNAVAILABLE_TOOL, inputSchema: { json: { type: 'object' } } },
        })),
      };
    }
  } else {
    const specs: Tool[] = tools.map((tool) => ({
      toolSpec: {
        name: tool.name,
        description: tool.description,
        inputSchema: { json: tool.inputSchema as never },
      },
    }));
    if (cachePoint && family === 'claude') specs.push({ cachePoint });
    const choice = request.toolChoice === undefined ? undefined : toolChoice(request.toolChoice);
    params.toolConfig = { tools: specs, ...(choice ? { toolChoice: choice } : {}) };
  }

  const inference: NonNullable<ConverseStreamRequest['inferenceConfig']> = {};
  // Default: the model's largest output when known (Model or table), at most 32 000, as the Anthropic provider does;
  // else Bedrock's own per-model default. A thinking budget counts against maxTokens: it is added on top.
  const maxTokens = typeof options.maxTokens === 'number' ? options.maxTokens : settings.defaultMaxTokens;
  if (maxTokens !== undefined) inference.maxTokens = budget > 0 ? maxTokens + budget : maxTokens;
  else if (budget > 0) inference.maxTokens = budget + 8_192;
  if (typeof options.temperature === 'number') inference.temperature = options.temperature;
  if (Object.keys(inference).length > 0) params.inferenceConfig = inference;

  // Claude's extended thinking is a model-specific field on Bedrock, as it is on the Messages API.
  if (optionBudget > 0 && family === 'claude' && extra.thinking === undefined) {
    extra.thinking = { type: 'enabled', budget_tokens: optionBudget };
  }
  Object.assign(extra, reasoning.fields);
  if (Object.keys(extra).length > 0) params.additionalModelRequestFields = extra as never;
  const outputConfig: NonNullable<ConverseStreamRequest['outputConfig']> = {};
  if (reasoning.effort !== undefined) outputConfig.effort = reasoning.effort;
  if (request.output !== undefined) {
    const { name, description, schema } = request.output;
    const sent = family === 'claude' ? anthropicOutputSchema(schema, description) : schema;
    outputConfig.textFormat = {
      type: 'json_schema',
      structure: {
        jsonSchema: { schema: JSON.stringify(sent), name, ...(description !== undefined ? { description } : {}) },
      },
    };
  }
  if (Object.keys(outputConfig).length > 0) params.outputConfig = outputConfig;
  if (settings.guardrail) params.guardrailConfig = settings.guardrail;
  return params;
}

/** The description of a tool the transcript used that the request no longer offers. */
export const UNAVAILABLE_TOOL = 'This tool is no longer available; do not call it.';

function usedToolNames(messages: readonly BedrockMessage[]): string[] {
  const names = new Set<string>();
  for (const message of messages) {
    for (const block of message.content ?? []) if (block.toolUse?.name) names.add(block.toolUse.name);
  }
  return [...names].sort();
}

/** The model families whose request fields differ: Claude (thinking, cache points on tools), Nova, the rest. */
export function modelFamily(modelId: string): 'claude' | 'nova' | 'other' {
  if (/(^|[.:/])anthropic\.claude|^claude-/.test(modelId)) return 'claude';
  if (/(^|[.:/])amazon\.nova/.test(modelId)) return 'nova';
  return 'other';
}

function convertMessages(
  messages: readonly Message[],
  provider: string,
  modelId: string,
  cachePoint: CachePointBlock | undefined,
): BedrockMessage[] {
  const transcript = transformMessages(messages, {
    provider,
    model: modelId,
    // Converse's toolUseId is [a-zA-Z0-9_-]{1,64}; an OpenAI Responses id is `call_id|item_id`: keep the call part.
    normalizeToolCallId: (id) => normalizeToolCallId(id.split('|')[0]!, 64),
  });
  const out: BedrockMessage[] = [];
  const documents = documentNames();
  const push = (role: 'user' | 'assistant', content: ContentBlock[]): void => {
    if (content.length === 0) return;
    const last = out[out.length - 1];
    // Converse wants user and assistant turns to alternate: tool results and a user message after them are one turn.
    if (last !== undefined && last.role === role) last.content!.push(...content);
    else out.push({ role, content });
  };
  for (const message of transcript) {
    if (message.role === 'toolResult') {
      const { result, audio } = toolResultBlock(message, documents);
      // Converse's tool results take no audio: it follows the result in the same user turn.
      push('user', [{ toolResult: result }, ...audio]);
      continue;
    }
    const content: ContentBlock[] = [];
    if (message.role === 'user') {
      if (typeof message.content === 'string') {
        if (message.content !== '') content.push({ text: message.content });
      } else {
        for (const block of message.content) {
          const converted = userBlock(block, documents);
          if (converted) content.push(converted);
        }
      }
      push('user', content);
      continue;
    }
    for (const block of message.content) {
      if (block.type === 'text') {
        if (block.text !== '') content.push({ text: block.text });
      } else if (block.type === 'toolCall') {
        const input = JSON.parse(canonicalJson(block.arguments)) as never;
        content.push({ toolUse: { toolUseId: block.id, name: block.name, input } });
      } else if (block.redacted) {
        content.push({
          reasoningContent: { redactedContent: fromBase64(block.thinking, 'a redacted thinking block') },
        });
      } else if (block.signature) {
        content.push({ reasoningContent: { reasoningText: { text: block.thinking, signature: block.signature } } });
      } else if (block.thinking.trim() !== '') {
        content.push({ text: block.thinking });
      }
    }
    push('assistant', content);
  }
  // Converse: "If you include a ContentBlock with a document field in the array, you must also include a ContentBlock
  // with a text field": a 400 we can tell before sending.
  for (const [i, message] of out.entries()) {
    const blocks = message.content ?? [];
    const document = blocks.find((block) => block.document !== undefined)?.document;
    if (document !== undefined && !blocks.some((block) => block.text !== undefined)) {
      throw new RequestRefusal(
        'bad_request',
        `The document "${document.name}" in message ${i + 1} cannot be sent to Bedrock Converse alone: a message with a document needs a text block too`,
      );
    }
  }
  const last = out[out.length - 1];
  if (cachePoint && last !== undefined) last.content!.push({ cachePoint });
  return out;
}

function userBlock(
  block: TextContent | ImageContent | FileContent,
  documents: DocumentNames,
): ContentBlock | undefined {
  if (block.type === 'text') return block.text === '' ? undefined : { text: block.text };
  if (block.type === 'file') return bedrockFileBlock(block, 'in a user message', documents);
  return mediaBlock(block, documents);
}

function mediaBlock(
  block: ImageContent,
  documents: DocumentNames,
): ContentBlock.ImageMember | ContentBlock.DocumentMember {
  const bytes = fromBase64(block.data, `an ${block.mimeType} block`);
  const image = IMAGE_FORMATS[block.mimeType.toLowerCase()];
  if (image !== undefined) return { image: { format: image, source: { bytes } } };
  const document = DOCUMENT_FORMATS[block.mimeType.toLowerCase()];
  if (document !== undefined) {
    return { document: { format: document, name: documentName(undefined, documents), source: { bytes } } };
  }
  throw new InvalidInputError(
    `Bedrock Converse takes images (${Object.keys(IMAGE_FORMATS).join(', ')}) and documents (${Object.keys(DOCUMENT_FORMATS).join(', ')}), not "${block.mimeType}"`,
  );
}

function toolResultBlock(
  message: ToolResultMessage,
  documents: DocumentNames,
): { result: NonNullable<ContentBlock.ToolResultMember['toolResult']>; audio: ContentBlock.AudioMember[] } {
  const content: ToolResultContentBlock[] = [];
  const audio: ContentBlock.AudioMember[] = [];
  for (const block of message.content) {
    if (block.type === 'image') content.push(mediaBlock(block, documents));
    else if (block.type === 'file') {
      const file = bedrockFileBlock(block, `in the result of tool call ${message.toolCallId}`, documents);
      if ('audio' in file && file.audio !== undefined) audio.push(file);
      else content.push(file);
    } else if (block.text !== '') content.push({ text: block.text });
  }
  // Converse requires content; an empty result says so rather than sending nothing.
  if (content.length === 0) content.push({ text: message.isError ? 'Error' : '(no output)' });
  return { result: { toolUseId: message.toolCallId, content, status: message.isError ? 'error' : 'success' }, audio };
}

function toolChoice(choice: ToolChoice): BedrockToolChoice | undefined {
  if (choice === 'auto') return { auto: {} };
  if (choice === 'required') return { any: {} };
  // Converse has no "none": the tools are still described (history with tool calls needs them) and the model chooses.
  if (choice === 'none') return undefined;
  return { tool: { name: choice.name } };
}

function isCacheRetention(value: unknown): value is CacheRetention {
  return value === 'none' || value === 'short' || value === 'long';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Base64 → bytes without `node:buffer` (atob is global in Node 16+ and browsers). Throws {@link InvalidInputError}
 * for text that is not base64 (`what` names the block).
 */
export function fromBase64(data: string, what = 'a block'): Uint8Array {
  let binary: string;
  try {
    binary = atob(data);
  } catch {
    throw new InvalidInputError(`Bedrock request: the data of ${what} is not valid base64`);
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Bytes → base64, the form a redacted reasoning block is kept in (what the wire carried). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
