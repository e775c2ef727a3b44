/**
 * cubepi messages → a Gemini `generateContent` request (Gemini API and Vertex AI alike).
 * @module
 */
import type { Content, FunctionCallingConfigMode, GenerateContentParameters, Part } from '@google/genai';
import type { FileContent, ImageContent, TextContent } from '../types/content.js';
import { canonicalJson, type AssistantMessage, type Message, type ToolResultMessage } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamRequest, ToolChoice } from '../types/provider.js';
import { geminiFilePart, geminiFunctionResponsePart } from './google-files.js';
import { geminiOutputConfig } from './google-output.js';
import { geminiThinkingConfig } from './google-thinking.js';
import { sameModel } from './model-table.js';
import { transformMessages } from './transform-messages.js';

/**
 * The prefix of the tool-call ids cubepi makes when Gemini sends a `functionCall` without an `id` (the Gemini API
 * usually does). Such an id is cubepi's own: it is stored on the call (so it survives a restore) but never sent back
 * as `functionCall.id` or `functionResponse.id`, which Gemini matches against ids it made.
 */
export const GEMINI_MADE_ID_PREFIX = 'gcall_';

/**
 * The signature sent on a replayed function call that has none (a call made by another provider or model, handed
 * off to Gemini 3, which answers 400 "Function call is missing a thought_signature" otherwise). This is the value
 * Google documents for this case (ai.google.dev/gemini-api/docs/thought-signatures, "transfer from another model").
 */
export const GEMINI_DUMMY_SIGNATURE = 'skip_thought_signature_validator';

/** Provider-level settings the request builder needs. */
export interface GoogleRequestSettings {
  /** The provider's id: its own thinking, signatures and call ids are replayed as they are. */
  readonly provider: string;
  /** Vertex AI only: ask Gemini to stream function-call arguments (`partialArgs`). */
  readonly streamFunctionCallArguments?: boolean | undefined;
  /** The request goes to Vertex AI (which has no Files API: a `fileId` is refused there). */
  readonly vertex?: boolean | undefined;
}

/**
 * Builds the streaming request (without the abort signal, which the provider adds).
 *
 * - The transcript is first made safe for Gemini ({@link transformMessages}): failed, cancelled and blocked answers are
 *   not replayed, another model's thinking becomes text and its signatures are dropped, missing results are answered.
 * - Every `thoughtSignature` Gemini sent is sent back on the part it came on: text (also an empty text part that only
 *   carries a signature), thought summaries (`thought: true`) and function calls. On a Gemini 3 model a replayed
 *   function-call step that carries no signature (another provider's calls) gets {@link GEMINI_DUMMY_SIGNATURE} on its
 *   first call.
 * - The results of one step's calls go in one `user` content, one `functionResponse` each (`{ output }`, or
 *   `{ error }` for an error result), in the calls' order; images in a result go inside the `functionResponse` on
 *   Gemini 3 (multimodal function responses), as `inlineData` parts after it on older models. Files in a result: on
 *   Gemini 3 inline PNG/JPEG/WebP images, PDFs and plain text go inside the `functionResponse`; every other file
 *   (audio, video, other documents, URLs and Files API files), and every file on older models, goes as a part right
 *   after it in the same user turn, as Gemini documents for media a function response cannot hold.
 * - Files in user messages: see {@link geminiFilePart} (`inlineData`, `fileData` for URLs and Files API files).
 * - `request.output` (native structured output): `responseMimeType: 'application/json'` and `responseJsonSchema`
 *   (see {@link geminiOutputConfig}); the answer's text is the JSON.
 * - Options: `maxTokens` → `maxOutputTokens`, `temperature`, and the thinking options, which win over
 *   `request.reasoning` (see {@link geminiThinkingConfig}).
 * - Gemini's own retries and automatic continuation are off: a failure reaches the run at once, classified.
 *
 * Throws `GoogleRequestRefusal` for a request refused before it is sent (a file Gemini cannot take, a schema it
 * cannot express, native output with tools before Gemini 3): the provider makes it the terminal error event.
 */
export function buildGoogleRequest(
  model: Model,
  messages: readonly Message[],
  request: StreamRequest,
  settings: GoogleRequestSettings,
): GenerateContentParameters {
  const options = request.options ?? {};
  const config: NonNullable<GenerateContentParameters['config']> = {
    automaticFunctionCalling: { disable: true },
    automaticContinuation: false,
  };
  if (request.systemPrompt) config.systemInstruction = request.systemPrompt;
  if (typeof options.maxTokens === 'number') config.maxOutputTokens = options.maxTokens;
  if (typeof options.temperature === 'number') config.temperature = options.temperature;
  const thinking = geminiThinkingConfig(model, options, request.reasoning);
  if (thinking !== undefined) config.thinkingConfig = thinking;
  if (request.output !== undefined) Object.assign(config, geminiOutputConfig(model, request.output, request));
  const tools = request.tools ?? [];
  if (tools.length > 0) {
    config.tools = [
      {
        functionDeclarations: tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          parametersJsonSchema: withoutSchemaKeyword(tool.inputSchema),
        })),
      },
    ];
    const functionCallingConfig = {
      ...(request.toolChoice !== undefined ? toolChoice(request.toolChoice) : {}),
      ...(settings.streamFunctionCallArguments ? { streamFunctionCallArguments: true } : {}),
    };
    if (Object.keys(functionCallingConfig).length > 0) config.toolConfig = { functionCallingConfig };
  }
  return { model: model.id, contents: convertMessages(messages, model, settings), config };
}

function convertMessages(messages: readonly Message[], model: Model, settings: GoogleRequestSettings): Content[] {
  const { provider } = settings;
  const vertex = settings.vertex === true;
  const transcript = transformMessages(messages, { provider, model: model.id, normalizeToolCallId: (id) => id });
  const needsSignature = /^gemini-3/.test(model.id);
  const contents: Content[] = [];
  // Ids Gemini made for the calls it is about to see answered: sent back as functionResponse.id.
  const geminiIds = new Set<string>();
  const push = (content: Content): void => {
    const last = contents[contents.length - 1];
    // Gemini wants alternating turns: a user text after tool results joins their user content.
    if (content.role === 'user' && last?.role === 'user')
      last.parts = [...(last.parts ?? []), ...(content.parts ?? [])];
    else contents.push(content);
  };
  for (const message of transcript) {
    if (message.role === 'user') {
      const parts =
        typeof message.content === 'string'
          ? message.content === ''
            ? []
            : [{ text: message.content }]
          : message.content.flatMap((block) =>
              block.type === 'file' ? [geminiFilePart(block, 'a user message', vertex)] : userPart(block),
            );
      if (parts.length > 0) push({ role: 'user', parts });
    } else if (message.role === 'assistant') {
      const own = message.provider === provider && sameModel(message.model, model.id);
      const parts = modelParts(message, own, geminiIds);
      if (needsSignature) addDummySignature(parts);
      if (parts.length > 0) contents.push({ role: 'model', parts });
    } else {
      const sendId = geminiIds.has(message.toolCallId);
      push({ role: 'user', parts: functionResponseParts(message, sendId, needsSignature, vertex) });
    }
  }
  return contents;
}

function modelParts(message: AssistantMessage, own: boolean, geminiIds: Set<string>): Part[] {
  const parts: Part[] = [];
  for (const block of message.content) {
    // transformMessages kept signatures only on this provider's and model's own blocks.
    const signed = block.signature !== undefined ? { thoughtSignature: block.signature } : {};
    if (block.type === 'text') parts.push({ text: block.text, ...signed });
    else if (block.type === 'thinking') {
      // Only this model's thinking is still thinking here (another's became text); Gemini has no redacted thinking.
      if (!block.redacted) parts.push({ text: block.thinking, thought: true, ...signed });
    } else {
      const sendId = own && !block.id.startsWith(GEMINI_MADE_ID_PREFIX);
      if (sendId) geminiIds.add(block.id);
      const args = JSON.parse(canonicalJson(block.arguments)) as Record<string, unknown>;
      parts.push({ functionCall: { ...(sendId ? { id: block.id } : {}), name: block.name, args }, ...signed });
    }
  }
  return parts;
}

/**
 * Gemini 3 rejects a function-call step whose first call has no signature: a step that carries no signature at all
 * (another model's calls) gets the dummy. A step Gemini signed elsewhere (a trailing signature-only part) is replayed
 * as it came.
 */
function addDummySignature(parts: Part[]): void {
  const first = parts.findIndex((part) => part.functionCall !== undefined);
  if (first < 0 || parts.some((part) => part.thoughtSignature !== undefined)) return;
  parts[first] = { ...parts[first], thoughtSignature: GEMINI_DUMMY_SIGNATURE };
}

function userPart(block: TextContent | ImageContent): Part[] {
  if (block.type === 'text') return block.text === '' ? [] : [{ text: block.text }];
  return [{ inlineData: { mimeType: block.mimeType, data: block.data } }];
}

function functionResponseParts(
  message: ToolResultMessage,
  sendId: boolean,
  multimodal: boolean,
  vertex: boolean,
): Part[] {
  const text = message.content
    .filter((block): block is TextContent => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
  const images = message.content
    .filter((block): block is ImageContent => block.type === 'image')
    .map((block) => ({ inlineData: { mimeType: block.mimeType, data: block.data } }));
  const place = `the result of ${message.toolName} (${message.toolCallId})`;
  const files = message.content
    .filter((block): block is FileContent => block.type === 'file')
    .map((block) => geminiFilePart(block, place, vertex));
  const inside = multimodal ? files.map(geminiFunctionResponsePart) : [];
  const after = files.filter((_, index) => inside[index] === undefined);
  const response = message.isError ? { error: text } : { output: text };
  const parts = [...(multimodal ? images : []), ...inside.filter((part) => part !== undefined)];
  const functionResponse = {
    ...(sendId ? { id: message.toolCallId } : {}),
    name: message.toolName,
    response,
    ...(parts.length > 0 ? { parts } : {}),
  };
  return [{ functionResponse }, ...(multimodal ? [] : images), ...after];
}

function toolChoice(choice: ToolChoice): { mode: FunctionCallingConfigMode; allowedFunctionNames?: string[] } {
  // The SDK's enum values are these strings; written out so this module needs no runtime import of the SDK.
  if (choice === 'auto') return { mode: 'AUTO' as FunctionCallingConfigMode };
  if (choice === 'none') return { mode: 'NONE' as FunctionCallingConfigMode };
  if (choice === 'required') return { mode: 'ANY' as FunctionCallingConfigMode };
  return { mode: 'ANY' as FunctionCallingConfigMode, allowedFunctionNames: [choice.name] };
}

/** Gemini's JSON Schema support does not take the `$schema` keyword zod adds. */
function withoutSchemaKeyword(schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}
