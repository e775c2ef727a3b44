/**
 * Gemini `streamGenerateContent` chunks (Gemini API and Vertex AI) → {@link MessageAssembler} calls.
 * @module
 */
import type { GenerateContentResponse, Part } from '@google/genai';
import type { Model } from '../types/model.js';
import type { StreamEvent, TerminalStreamEvent } from '../types/stream-events.js';
import { computeUsage, EMPTY_USAGE, type TokenCounts, type Usage } from '../types/usage.js';
import type { WireMapper } from './from-sdk-stream.js';
import { GEMINI_MADE_ID_PREFIX } from './google-request.js';
import { PartialArgs, type GeminiPartialArg } from './google-partial-args.js';
import type { MessageAssembler } from './message-assembler.js';
import { modelPricing } from './model-table.js';

type Emit = (event: StreamEvent) => void;

/** The usage of a response that reported none: zero because unknown (`Usage.unreported`). */
const UNREPORTED_USAGE: Usage = Object.freeze({ ...EMPTY_USAGE, unreported: true });

/** The finish reasons that mean Gemini's safety system (or a filter) stopped the answer: `blocked`. */
const BLOCKED_FINISH = new Set([
  'SAFETY',
  'RECITATION',
  'LANGUAGE',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
  'MODEL_ARMOR',
]);

/** The parts of a candidate without content. */
const NO_PARTS: readonly Part[] = Object.freeze([]);

/** The text block being streamed: thought summaries and answer text are separate blocks. */
interface OpenText {
  readonly contentIndex: number;
  readonly thought: boolean;
  signed: boolean;
}

/** A function call streamed in pieces (Vertex `willContinue`/`partialArgs`). */
interface OpenCall {
  readonly contentIndex: number;
  readonly args: PartialArgs;
  signed: boolean;
}

/**
 * Maps one Gemini response. Every chunk is a whole `GenerateContentResponse`; the stream has no end event, so the
 * terminal event is made when the wire ends (`end()`), from the `finishReason` seen (or the prompt's block reason):
 * usage sent after the finish chunk is kept.
 *
 * - Text parts stream into a text block, `thought: true` parts into a thinking block (the summaries). A
 *   `thoughtSignature` is stored on the block of the part that carried it: the text block, the thinking block, or the
 *   tool call (`ToolCall.signature`). A signature-only empty text part joins the text block it ends; with no text
 *   block open it becomes an empty text block of its own, so it is replayed where it was. A part bringing a second
 *   signature starts a new block: two signed parts are never merged.
 * - A `functionCall` with its `args` is a whole call; one with `willContinue` (Vertex's streamed arguments) opens a
 *   call that its `partialArgs` fill in, closed by an empty `functionCall`, the last piece without `willContinue`, or
 *   the next part. A call without `id` gets `gcall_<responseId>_<n>` (stored, so stable across a restore). Arguments
 *   that are not an object become `invalidArguments` (the call is not executed).
 * - `finishReason` `STOP` → `stop` (`toolUse` when the answer has calls), `MAX_TOKENS` → `length`, the safety reasons
 *   (`SAFETY`, `PROHIBITED_CONTENT`, `RECITATION`, …) and `promptFeedback.blockReason` → `blocked` with the vendor's
 *   words, `MALFORMED_FUNCTION_CALL` and the other reasons → an `unknown` error naming it. No candidate at all, or a
 *   `STOP` with nothing in it → an `unknown` error; a wire that ends before any finish reason → `unavailable`
 *   (truncated).
 * - `message.model` is the requested model id (`modelVersion` only prices an unknown model: see `identify`).
 * - Usage: `promptTokenCount` minus `cachedContentTokenCount` plus `toolUsePromptTokenCount` is `input`,
 *   `candidatesTokenCount` plus `thoughtsTokenCount` is `output` (thinking is billed as output), `thoughtsTokenCount`
 *   is `reasoning`, `cachedContentTokenCount` is `cacheRead`; priced with the model's prices, again only when a
 *   chunk's counts differ from the last priced (so snapshots of unchanged counts share one `Usage`). A response without
 *   any `usageMetadata` has its usage marked `unreported`.
 */
export function googleWireMapper(asm: MessageAssembler, model: Model): WireMapper<GenerateContentResponse> {
  let text: OpenText | undefined;
  let call: OpenCall | undefined;
  let responseId: string | undefined;
  let reportedModel: string | undefined;
  let madeIds = 0;
  let calls = 0;
  let sawCandidate = false;
  let finishReason: string | undefined;
  let finishMessage: string | undefined;
  let promptBlock: string | undefined;
  let sawUsage = false;

  const closeText = (emit: Emit): void => {
    if (text === undefined) return;
    emit(text.thought ? asm.endThinking(text.contentIndex) : asm.endText(text.contentIndex));
    text = undefined;
  };
  const closeCall = (emit: Emit): void => {
    if (call === undefined) return;
    emit(asm.toolCallDelta(call.contentIndex, JSON.stringify(call.args.value)));
    emit(asm.endToolCall(call.contentIndex));
    call = undefined;
  };
  const closeAll = (emit: Emit): void => {
    closeText(emit);
    closeCall(emit);
  };

  const onText = (part: Part, emit: Emit): void => {
    closeCall(emit);
    const thought = part.thought === true;
    const delta = part.text ?? '';
    const signature = part.thoughtSignature;
    if (delta === '' && signature === undefined) return;
    if (text !== undefined && (text.thought !== thought || (text.signed && signature !== undefined))) closeText(emit);
    if (text === undefined) {
      const contentIndex = asm.blockCount;
      emit(thought ? asm.startThinking() : asm.startText());
      text = { contentIndex, thought, signed: false };
    }
    if (delta !== '')
      emit(thought ? asm.thinkingDelta(text.contentIndex, delta) : asm.textDelta(text.contentIndex, delta));
    if (signature !== undefined) {
      if (thought) asm.appendSignature(text.contentIndex, signature);
      else asm.setTextSignature(text.contentIndex, signature);
      text.signed = true;
    }
  };

  const onFunctionCall = (part: Part, emit: Emit): void => {
    const fc = part.functionCall!;
    const signature = part.thoughtSignature;
    if (fc.name === undefined || fc.name === '') {
      // A piece of the open streamed call (or its empty closing part).
      if (call === undefined) return;
      for (const arg of (fc as { partialArgs?: GeminiPartialArg[] }).partialArgs ?? []) call.args.apply(arg);
      if (signature !== undefined && !call.signed) {
        asm.setToolCallSignature(call.contentIndex, signature);
        call.signed = true;
      }
      if (fc.willContinue !== true) closeCall(emit);
      return;
    }
    closeAll(emit);
    calls++;
    const id = fc.id ?? `${GEMINI_MADE_ID_PREFIX}${responseId ?? asm.partial.timestamp}_${madeIds++}`;
    const contentIndex = asm.blockCount;
    if (fc.willContinue === true) {
      emit(asm.startToolCall(id, fc.name));
      if (signature !== undefined) asm.setToolCallSignature(contentIndex, signature);
      call = { contentIndex, args: new PartialArgs(), signed: signature !== undefined };
      if (isRecord(fc.args)) Object.assign(call.args.value, fc.args);
      for (const arg of (fc as { partialArgs?: GeminiPartialArg[] }).partialArgs ?? []) call.args.apply(arg);
      return;
    }
    // Arguments that arrived whole are streamed as one delta of their JSON, so a call's deltas always add up to it;
    // the strict parse at the end makes arguments that are not an object (a string, an array) invalidArguments.
    emit(asm.startToolCall(id, fc.name));
    emit(asm.toolCallDelta(contentIndex, JSON.stringify(fc.args ?? {})));
    if (signature !== undefined) asm.setToolCallSignature(contentIndex, signature);
    emit(asm.endToolCall(contentIndex));
  };

  // Gemini repeats the cumulative usage on every chunk, often unchanged from the last. Pricing it anew on every chunk
  // (a Usage and its cost: two objects and five boxed doubles) was most of what a Gemini text delta cost beyond an
  // Anthropic one (bench/mappers.mjs: 0.42× of Anthropic's deltas/s). So the counts last priced are kept, and a chunk
  // with the same counts sets nothing: the Usage already set is equal.
  let pricedCounts = false; // whether the five counts below have been priced (set on the assembler) yet
  let pricedPrompt = 0;
  let pricedCached = 0;
  let pricedToolUse = 0;
  let pricedCandidates = 0;
  let pricedThoughts = 0;
  let pricing: Pick<Model, 'cost'> | undefined;
  let pricingFor: string | undefined | null = null; // the reportedModel `pricing` was looked up for (null: not yet)

  const updateUsage = (chunk: GenerateContentResponse): void => {
    const usage = chunk.usageMetadata;
    if (usage === undefined) return;
    sawUsage = true;
    const prompt = usage.promptTokenCount ?? 0;
    const cached = usage.cachedContentTokenCount ?? 0;
    const toolUse = usage.toolUsePromptTokenCount ?? 0;
    const candidates = usage.candidatesTokenCount ?? 0;
    const thoughts = usage.thoughtsTokenCount ?? 0;
    if (
      pricedCounts &&
      pricedPrompt === prompt &&
      pricedCached === cached &&
      pricedToolUse === toolUse &&
      pricedCandidates === candidates &&
      pricedThoughts === thoughts
    ) {
      return;
    }
    pricedCounts = true;
    pricedPrompt = prompt;
    pricedCached = cached;
    pricedToolUse = toolUse;
    pricedCandidates = candidates;
    pricedThoughts = thoughts;
    if (pricingFor !== reportedModel) {
      pricing = modelPricing(model, reportedModel);
      pricingFor = reportedModel;
    }
    // Gemini counts cached tokens inside promptTokenCount, tool-use prompts (search results…) apart from it.
    const counts: TokenCounts = {
      input: Math.max(0, prompt - cached) + toolUse,
      output: candidates + thoughts,
      cacheRead: cached,
      reasoning: thoughts,
    };
    asm.setUsage(computeUsage(counts, pricing));
  };

  return {
    identify(chunk) {
      if (chunk.responseId) {
        responseId = chunk.responseId;
        asm.setResponseId(chunk.responseId);
      }
      // `modelVersion` prices a model the table does not know, but the message keeps the id that was asked for:
      // replay is bound to the model (transformMessages keeps signatures for the same model only), and an alias
      // (`gemini-flash-latest`) reports another version than the id the next request names.
      if (chunk.modelVersion) reportedModel = chunk.modelVersion;
    },

    map(chunk, emit) {
      updateUsage(chunk);
      const feedback = chunk.promptFeedback;
      const block = feedback?.blockReason;
      if (block !== undefined) {
        const message = feedback?.blockReasonMessage;
        promptBlock = message ? `${block}: ${message}` : block;
      }
      const candidate = chunk.candidates?.[0];
      if (candidate === undefined || finishReason !== undefined) return undefined;
      sawCandidate = true;
      const parts = candidate.content?.parts ?? NO_PARTS;
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i]!;
        if (part.functionCall !== undefined) onFunctionCall(part, emit);
        else if (
          // Most chunks are one plain text piece continuing the open answer text: `onText` for exactly that case (no
          // call to close, no block to open or close, no signature), written out here, which keeps V8's hot path short.
          text !== undefined &&
          !text.thought &&
          call === undefined &&
          part.thought !== true &&
          part.thoughtSignature === undefined &&
          typeof part.text === 'string' &&
          part.text !== ''
        )
          emit(asm.textDelta(text.contentIndex, part.text));
        else if (typeof part.text === 'string' || part.thoughtSignature !== undefined) onText(part, emit);
        // Other parts (inlineData images, executableCode, …) have no cubepi block: skipped.
      }
      if (candidate.finishReason !== undefined) {
        finishReason = candidate.finishReason;
        // Vertex AI keeps `finishMessage`; the SDK's Gemini API mapping drops it, so the ratings that blocked say why.
        const flagged = (candidate.safetyRatings ?? [])
          .filter((rating) => rating.blocked === true)
          .map((rating) => `${rating.category}: ${rating.probability}`);
        finishMessage = [candidate.finishMessage, flagged.length > 0 ? flagged.join(', ') : undefined]
          .filter(Boolean)
          .join('; ');
        closeAll(emit);
      }
      return undefined;
    },

    end(): TerminalStreamEvent {
      if (!sawUsage) asm.setUsage(UNREPORTED_USAGE);
      if (promptBlock !== undefined) return asm.blocked(promptBlock);
      if (finishReason === undefined) {
        return sawCandidate
          ? asm.error('unavailable', 'The Gemini stream ended before a finishReason (truncated response)')
          : asm.error('unknown', 'Gemini returned no candidate (an empty response)');
      }
      const detail = finishMessage ? `${finishReason}: ${finishMessage}` : finishReason;
      if (BLOCKED_FINISH.has(finishReason)) return asm.blocked(detail);
      if (finishReason === 'MAX_TOKENS') return asm.done('length');
      if (finishReason === 'STOP') {
        if (asm.blockCount === 0) return asm.error('unknown', 'Gemini returned an empty candidate (finishReason STOP)');
        return asm.done(calls > 0 ? 'toolUse' : 'stop');
      }
      return asm.error('unknown', `Gemini stopped the response: finishReason ${detail}`);
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
