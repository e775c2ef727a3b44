/**
 * Whether a model can take a request, by what the model (or the model table) says it can do.
 * @module
 */
import type { Message } from '../types/messages.js';
import type { Model, ModelIncapability, ModelInputKind } from '../types/model.js';
import type { StreamOptions, ToolDefinition } from '../types/provider.js';
import { fileKind } from '../types/file-kind.js';
import { lookupModel } from '../types/model-lookup.js';
import { estimateMessageTokens, estimateTokensWith } from './estimate-tokens.js';

/** What a request asks of a model, as far as its capabilities go. */
export interface CapabilityRequest {
  readonly messages: readonly Message[];
  readonly systemPrompt?: string | undefined;
  readonly tools?: readonly ToolDefinition[] | undefined;
  readonly options?: Omit<StreamOptions, 'signal'> | undefined;
}

type Block = Exclude<Message['content'], string>[number];

/**
 * The input kind each content block needs, by block type (`undefined`: text, which every model takes). A `file` block
 * needs the kind of its MIME type (`fileKind`: `pdf`, `image`, `audio`, `video`, or `file` for other documents).
 */
const INPUT_OF_BLOCK: { readonly [T in Block['type']]?: (block: Extract<Block, { type: T }>) => ModelInputKind } = {
  image: () => 'image',
  file: (block) => fileKind(block.mimeType),
};

/**
 * Why `model` cannot take `request`, or `undefined` when it can (or when what it can do is not known). Each fact is
 * the model's own, else the model table's for its id; a fact neither states is not checked. In order:
 * - `tools`: the request offers tools and the model has `tools: false`;
 * - `reasoning`: the request sets a `thinkingBudget` above 0 and the model has `reasoning: false`;
 * - `input`: a message (user or tool result) holds a block of a kind missing from the model's `input` (an image; a
 *   file block by its MIME type's kind, `fileKind`: a PDF to a model without `pdf`, audio without `audio`, a CSV
 *   without `file`…). Whether the model or its provider can fetch a file's `url` is the provider's to say;
 * - `context_window`: the request's estimated tokens (`estimateTokens`, files counted by pages, seconds or length)
 *   exceed the model's `contextWindow`.
 *
 * @example
 * modelIncapability({ id: 'llama', provider: 'ollama', input: ['text'] }, { messages: [photoMessage] })
 * // { reason: 'input', kind: 'image', message: 'Model llama cannot take image input' }
 */
export function modelIncapability(model: Model, request: CapabilityRequest): ModelIncapability | undefined {
  return modelIncapabilityWith(model, request, FULL_SCAN);
}

/**
 * What {@link modelIncapability} reads of a request's messages: the first input kind they need that `input` lacks,
 * and their estimated tokens. The loop passes a scan that remembers what it read of its run's transcript, which only
 * grows, so that a model call does not read the whole history again (`TranscriptScan`). @internal
 */
export interface MessageScan {
  missingInput(messages: readonly Message[], input: readonly ModelInputKind[]): ModelInputKind | undefined;
  messageTokens(model: Model, messages: readonly Message[]): number;
}

/** Reads every message, every time. @internal */
export const FULL_SCAN: MessageScan = { missingInput, messageTokens: estimateMessageTokens };

/** {@link modelIncapability}, reading the messages through `scan`. @internal */
export function modelIncapabilityWith(
  model: Model,
  request: CapabilityRequest,
  scan: MessageScan,
): ModelIncapability | undefined {
  const known = lookupModel(model.id);
  const tools = model.tools ?? known?.tools;
  if (tools === false && (request.tools?.length ?? 0) > 0) {
    return {
      reason: 'tools',
      message: `Model ${model.id} cannot call tools; the request offers ${request.tools!.length}`,
    };
  }
  const reasoning = model.reasoning ?? known?.reasoning;
  const budget = request.options?.thinkingBudget;
  if (reasoning === false && typeof budget === 'number' && budget > 0) {
    return { reason: 'reasoning', message: `Model ${model.id} does not reason; the request asks for thinking` };
  }
  const input = model.input ?? known?.input;
  if (input !== undefined) {
    const kind = scan.missingInput(request.messages, input);
    if (kind !== undefined) return { reason: 'input', kind, message: `Model ${model.id} cannot take ${kind} input` };
  }
  const contextWindow = model.contextWindow ?? known?.contextWindow;
  if (contextWindow !== undefined) {
    const tokens = estimateTokensWith({ ...request, model }, scan.messageTokens(model, request.messages));
    if (tokens > contextWindow) {
      return {
        reason: 'context_window',
        tokens,
        contextWindow,
        message: `The request (about ${tokens} tokens) is over the ${contextWindow}-token context window of model ${model.id}`,
      };
    }
  }
  return undefined;
}

/** The input kind a message needs beyond text, in the order its blocks need them (an empty list for most). @internal */
export function inputKindsOf(message: Message): readonly ModelInputKind[] {
  if (message.role === 'assistant' || typeof message.content === 'string') return NONE;
  let kinds: ModelInputKind[] | undefined;
  for (const block of message.content) {
    const kindOf = INPUT_OF_BLOCK[block.type] as ((b: Block) => ModelInputKind) | undefined;
    const kind = kindOf?.(block);
    if (kind !== undefined && !(kinds ??= []).includes(kind)) kinds.push(kind);
  }
  return kinds ?? NONE;
}

const NONE: readonly ModelInputKind[] = [];

/** The first input kind the messages need that `input` lacks. */
function missingInput(messages: readonly Message[], input: readonly ModelInputKind[]): ModelInputKind | undefined {
  for (const message of messages) {
    if (message.role === 'assistant' || typeof message.content === 'string') continue;
    for (const block of message.content) {
      const kindOf = INPUT_OF_BLOCK[block.type] as ((b: Block) => ModelInputKind) | undefined;
      const kind = kindOf?.(block);
      if (kind !== undefined && !input.includes(kind)) return kind;
    }
  }
  return undefined;
}
