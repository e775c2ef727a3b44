/**
 * cubepi messages → an OpenAI Responses API request (stateless: the transcript is replayed every turn).
 * @module
 */
import type OpenAI from 'openai';
import type { ImageContent, ToolResultContent, UserContent } from '../types/content.js';
import { canonicalJson, type AssistantMessage, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamRequest, ToolChoice } from '../types/provider.js';
import { findModel } from './model-table.js';
import { normalizeToolCallId } from './normalize-tool-call-id.js';
import type { BlockPlace } from './openai-file-blocks.js';
import { assertStrictSchema } from './openai-strict-schema.js';
import { responsesFilePart } from './openai-responses-files.js';
import { transformMessages } from './transform-messages.js';

type Params = OpenAI.Responses.ResponseCreateParamsStreaming;
type InputItem = OpenAI.Responses.ResponseInputItem;
type ReasoningItem = OpenAI.Responses.ResponseReasoningItem;

/**
 * What a thinking block's `signature` holds for this API: the reasoning item as the API returned it, to be sent back
 * unchanged. Serialised as JSON; opaque to everyone else.
 */
export interface ReasoningSignature {
  readonly id: string;
  readonly encrypted_content?: string | undefined;
  readonly summary: readonly { readonly type: 'summary_text'; readonly text: string }[];
}

/** The `signature` of a thinking block made from a reasoning item (see {@link ReasoningSignature}). */
export function reasoningSignature(item: Pick<ReasoningItem, 'id' | 'encrypted_content' | 'summary'>): string {
  const signature: ReasoningSignature = {
    id: item.id,
    ...(item.encrypted_content ? { encrypted_content: item.encrypted_content } : {}),
    summary: item.summary.map((part) => ({ type: 'summary_text', text: part.text })),
  };
  return JSON.stringify(signature);
}

/** Provider-level settings the request builder needs. */
export interface ResponsesRequestSettings {
  /** The provider's id (see `transformMessages`). */
  readonly provider: string;
}

/**
 * Builds the streaming Responses request body. The call is stateless (`store: false`): the whole transcript is sent
 * each turn, which is what makes a transcript portable between providers and resumable from a checkpoint.
 *
 * - For reasoning models (`model.reasoning`, or the model table) the body asks for `reasoning.encrypted_content` and a
 *   reasoning summary (`options.reasoningSummary`, `auto` by default; `none` leaves it out), with
 *   `reasoning.effort`: `options.reasoningEffort` when given, else from `request.reasoning` (`off` → `none`, a level
 *   as is; a budget alone has no Responses field and is not sent).
 * - `request.output` (native structured output) becomes `text.format`: `{ type: 'json_schema', name, description,
 *   schema, strict }`; a strict schema OpenAI would reject throws an `OpenAIRequestRefusal` (`bad_request`, naming
 *   the path: `strictSchemaProblem`).
 * - Files become `input_file` / `input_image` parts, in user messages and in tool results alike
 *   ({@link responsesFilePart}); audio, video or an unresolved `ref` throws an `OpenAIRequestRefusal` naming the
 *   block (the provider ends the call `model_incapable`, unsent).
 * - Reasoning items of the receiving model are replayed from their thinking blocks' signatures, and then the items
 *   that followed them keep their ids (`msg_…` from a text block's `signature`, `fc_…` from the tool-call id
 *   `call_…|fc_…`), as the API pairs them by id. Without a replayable reasoning item the ids are left out, which the
 *   API also requires.
 * - Tool-call arguments are re-serialised with sorted keys (byte-stable); results with images become lists of
 *   `input_text`/`input_image` parts.
 */
export function buildResponsesRequest(
  model: Model,
  messages: readonly Message[],
  request: StreamRequest,
  settings: ResponsesRequestSettings,
): Params {
  const options = request.options ?? {};
  const reasoning = model.reasoning ?? findModel(model.id)?.reasoning ?? false;
  const params: Params = {
    model: model.id,
    input: convertMessages(model, messages, settings.provider),
    stream: true,
    store: false,
  };
  if (request.systemPrompt) params.instructions = request.systemPrompt;
  const tools = request.tools ?? [];
  if (tools.length > 0) {
    params.tools = tools.map((tool) => ({
      type: 'function',
      name: tool.name,
      description: tool.description,
      parameters: { ...tool.inputSchema },
      // Strict mode rewrites what a schema may contain (every field required, no defaults); cubepi validates itself.
      strict: false,
    }));
    if (request.toolChoice !== undefined) params.tool_choice = toolChoice(request.toolChoice);
  }
  if (typeof options.maxTokens === 'number') params.max_output_tokens = options.maxTokens;
  if (typeof options.temperature === 'number') params.temperature = options.temperature;
  if (request.output !== undefined) {
    assertStrictSchema('OpenAI Responses', request.output);
    const { name, description, schema, strict } = request.output;
    params.text = {
      format: {
        type: 'json_schema',
        name,
        ...(description !== undefined ? { description } : {}),
        schema: { ...schema },
        strict,
      },
    };
  }
  if (reasoning) {
    const summary = options.reasoningSummary ?? 'auto';
    const effort =
      typeof options.reasoningEffort === 'string'
        ? (options.reasoningEffort as NonNullable<OpenAI.Reasoning['effort']>)
        : request.reasoning?.off === true
          ? 'none'
          : request.reasoning?.effort;
    params.reasoning = {
      ...(effort !== undefined ? { effort } : {}),
      ...(summary !== 'none' ? { summary: summary as NonNullable<OpenAI.Reasoning['summary']> } : {}),
    };
    params.include = ['reasoning.encrypted_content'];
  }
  return params;
}

function convertMessages(model: Model, messages: readonly Message[], provider: string): InputItem[] {
  const transcript = transformMessages(messages, {
    provider,
    model: model.id,
    // Keep the `|fc_…` item id of this provider's calls (split off below); normalise the call id part.
    normalizeToolCallId: (id) => {
      const [callId, itemId] = id.split('|');
      const call = normalizeToolCallId(callId!, 64);
      return itemId !== undefined && /^fc[a-zA-Z0-9_-]*$/.test(itemId) ? `${call}|${itemId}` : call;
    },
  });
  const input: InputItem[] = [];
  transcript.forEach((message, index) => {
    if (message.role === 'user') {
      input.push({
        role: 'user',
        content:
          typeof message.content === 'string'
            ? message.content
            : message.content.map((block, b) => inputPart(block, { message: index, role: 'user', block: b })),
      });
    } else if (message.role === 'toolResult') {
      input.push(functionCallOutput(message, index));
    } else {
      input.push(...assistantItems(message));
    }
  });
  return input;
}

function inputPart(block: UserContent | ToolResultContent, at: BlockPlace): OpenAI.Responses.ResponseInputContent {
  if (block.type === 'text') return { type: 'input_text', text: block.text };
  return block.type === 'image' ? inputImage(block) : responsesFilePart(block, at);
}

function assistantItems(message: AssistantMessage): InputItem[] {
  // After transformMessages, thinking left in a message is the receiving model's own.
  const reasoning = new Map<number, ReasoningItem>();
  message.content.forEach((block, i) => {
    if (block.type !== 'thinking') return;
    const item = parseReasoning(block.signature);
    if (item !== undefined) reasoning.set(i, item);
  });
  const paired = reasoning.size > 0;
  const items: InputItem[] = [];
  let texts: { id: string | undefined; parts: string[] } | undefined;
  const flushText = () => {
    if (texts === undefined) return;
    const text = texts.parts.join('');
    items.push(
      paired && texts.id !== undefined
        ? {
            type: 'message',
            role: 'assistant',
            id: texts.id,
            status: 'completed',
            content: [{ type: 'output_text', text, annotations: [] }],
          }
        : { role: 'assistant', content: text },
    );
    texts = undefined;
  };
  message.content.forEach((block, i) => {
    if (block.type === 'text') {
      const id = block.signature?.startsWith('msg') ? block.signature : undefined;
      if (texts !== undefined && texts.id !== id) flushText();
      (texts ??= { id, parts: [] }).parts.push(block.text);
      return;
    }
    flushText();
    if (block.type === 'toolCall') {
      const [callId, itemId] = block.id.split('|');
      items.push({
        type: 'function_call',
        call_id: callId!,
        name: block.name,
        arguments: canonicalJson(block.arguments),
        ...(paired && itemId !== undefined ? { id: itemId } : {}),
      });
    } else {
      const item = reasoning.get(i);
      if (item !== undefined) items.push(item);
    }
  });
  flushText();
  // A reasoning item must be followed by the item it produced: one left last (its turn produced nothing) is dropped.
  while (items.length > 0 && items[items.length - 1]!.type === 'reasoning') items.pop();
  return items;
}

/** A replayable reasoning item from a signature, or undefined (not ours, or no encrypted content to send back). */
function parseReasoning(signature: string | undefined): ReasoningItem | undefined {
  if (!signature?.startsWith('{')) return undefined;
  let parsed: Partial<ReasoningSignature>;
  try {
    parsed = JSON.parse(signature) as Partial<ReasoningSignature>;
  } catch {
    return undefined;
  }
  if (typeof parsed.id !== 'string' || typeof parsed.encrypted_content !== 'string') return undefined;
  // Read as unknown: the signature is data from the transcript, its summary parts checked one by one.
  const parts: unknown = parsed.summary;
  const summary: readonly unknown[] = Array.isArray(parts) ? parts : [];
  return {
    type: 'reasoning',
    id: parsed.id,
    summary: summary.map((part) => {
      const text = (part as { text?: unknown } | null)?.text;
      return { type: 'summary_text', text: typeof text === 'string' ? text : '' };
    }),
    encrypted_content: parsed.encrypted_content,
  };
}

function functionCallOutput(message: ToolResultMessage, index: number): InputItem {
  const callId = message.toolCallId.split('|')[0]!;
  const textOnly = message.content.every((block) => block.type === 'text');
  return {
    type: 'function_call_output',
    call_id: callId,
    // A result with images or files is a list of parts (the API takes input_text, input_image and input_file there).
    output: textOnly
      ? message.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
      : message.content.map(
          (block, b) =>
            inputPart(block, {
              message: index,
              role: 'toolResult',
              block: b,
            }) as OpenAI.Responses.ResponseFunctionCallOutputItem,
        ),
  };
}

function inputImage(block: ImageContent): OpenAI.Responses.ResponseInputImage {
  return { type: 'input_image', detail: 'auto', image_url: `data:${block.mimeType};base64,${block.data}` };
}

function toolChoice(choice: ToolChoice): NonNullable<Params['tool_choice']> {
  if (typeof choice === 'string') return choice;
  return { type: 'function', name: choice.name };
}
