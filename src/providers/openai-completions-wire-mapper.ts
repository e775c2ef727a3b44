/**
 * OpenAI Chat Completions chunks → {@link MessageAssembler} calls.
 * @module
 */
import type OpenAI from 'openai';
import type { Model } from '../types/model.js';
import type { StreamEvent } from '../types/stream-events.js';
import { computeUsage, EMPTY_USAGE, type Usage } from '../types/usage.js';
import type { WireMapper } from './from-sdk-stream.js';
import type { MessageAssembler } from './message-assembler.js';
import { modelPricing } from './model-table.js';
import { OPENAI_COMPAT, type OpenAICompat } from './openai-compat.js';

const UNREPORTED_USAGE: Usage = Object.freeze({ ...EMPTY_USAGE, unreported: true });

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type Delta = Chunk['choices'][number]['delta'];
type WireToolCall = NonNullable<Delta['tool_calls']>[number];
type WireUsage = NonNullable<Chunk['usage']>;

/**
 * Maps one Chat Completions stream. Only choice 0 is read: a request with `n > 1` streams every choice interleaved,
 * and cubepi's message is one answer, so the others are ignored on purpose (the usage still counts them, as the
 * server reports it for the whole request).
 *
 * - Text, `refusal` (streamed as text: the model's answer is the refusal) and the reasoning fields of
 *   OpenAI-compatible servers (`reasoning_content`: DeepSeek, vLLM; `reasoning`: Ollama, OpenRouter) as thinking.
 * - Tool calls are keyed by their stream `index`, not by `id`: only the first fragment of a call carries the id and
 *   the name, and parallel calls may interleave. A server that sends no `index` (calls streamed whole) is keyed by
 *   `id`, and a fragment with neither continues the call opened last. A call without an id gets a stable one made
 *   from the response id and its position (`call_<response>_<n>`), unique across the transcript.
 * - The profile ({@link OpenAICompat}) names the reasoning fields, other places usage may be reported (Groq's
 *   `x_groq.usage`), whether calls carry Gemini's `extra_content.google.thought_signature` (→ `ToolCall.signature`),
 *   and whether OpenRouter's `reasoning_details` are kept (merged, as JSON in the thinking block's `signature`).
 * - The stream ends after the usage chunk (`stream_options.include_usage`), so the terminal event is decided at the
 *   end: `stop` (or `toolUse` when calls were made: some compatible servers say `stop` even then), `tool_calls` →
 *   `toolUse`, `length` → `length`, `content_filter` → `blocked` (`blockReason` `content_filter`), unknown reasons → `error`
 *   naming the reason; no
 *   `finish_reason` at all → a truncated stream, `error` (`unavailable`).
 * - The end is that usage chunk (no choices, after the `finish_reason`): the response is complete there, and the
 *   stream ends without waiting for the server to close the connection. The `openai` SDK swallows `data: [DONE]` and
 *   reads on until the server closes, so a server that keeps the response open after `[DONE]` would otherwise leave
 *   the call without its terminal event. A server that sends no usage chunk ends at the close, as before, and its
 *   message's usage is zero and marked `unreported: true`.
 */
export function completionsWireMapper(
  asm: MessageAssembler,
  model: Model,
  compat: OpenAICompat = OPENAI_COMPAT.openai,
): WireMapper<Chunk> {
  let text: number | undefined; // content index of the open text block
  let thinking: number | undefined; // content index of the open thinking block
  const calls = new Map<string, number>(); // `i:<index>` or `id:<id>` → content index, for open calls
  let lastCall: string | undefined; // the key of the call opened last
  let callCount = 0;
  let responseId: string | undefined;
  let finishReason: string | undefined;
  let reportedModel: string | undefined;
  let usageSeen = false;

  const closeText = (emit: (event: StreamEvent) => void) => {
    if (text !== undefined) emit(asm.endText(text));
    text = undefined;
  };
  let details: ReasoningDetail[] = []; // OpenRouter's reasoning_details of the open thinking block, merged
  const closeThinking = (emit: (event: StreamEvent) => void) => {
    if (thinking !== undefined) {
      if (details.length > 0) asm.appendSignature(thinking, JSON.stringify(details));
      details = [];
      emit(asm.endThinking(thinking));
    }
    thinking = undefined;
  };

  // `index` is required by the SDK's type, but servers that stream calls whole (older Ollama) leave it out.
  const keyOf = (call: WireToolCall): string => {
    const index = (call as { index?: unknown }).index;
    if (typeof index === 'number') return `i:${index}`;
    if (call.id) return `id:${call.id}`;
    return lastCall ?? 'i:0';
  };

  const terminal = () => {
    // Some compatible servers (older llama.cpp, LM Studio, proxies) ignore stream_options and send no usage chunk.
    if (!usageSeen) asm.setUsage(UNREPORTED_USAGE);
    switch (finishReason) {
      case undefined:
        return asm.error('unavailable', 'The OpenAI stream ended without a finish_reason (truncated response)');
      case 'stop':
        return asm.done(callCount > 0 ? 'toolUse' : 'stop');
      case 'tool_calls':
      case 'function_call':
        return asm.done('toolUse');
      case 'length':
        return asm.done('length');
      case 'content_filter':
        return asm.blocked('content_filter');
      default:
        return asm.error('unknown', `The response stopped with an unknown finish_reason "${finishReason}"`);
    }
  };

  return {
    identify(chunk) {
      if (chunk.id) {
        responseId = chunk.id;
        asm.setResponseId(chunk.id);
      }
      if (chunk.model) {
        reportedModel = chunk.model;
        asm.setModel(chunk.model);
      }
    },

    map(chunk, emit) {
      const usage = chunk.usage ?? usageAt(chunk, compat.usagePaths);
      if (usage) {
        usageSeen = true;
        const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
        const written = usage.prompt_tokens_details?.cache_write_tokens ?? 0;
        // prompt_tokens includes the cached tokens; completion_tokens includes the reasoning tokens.
        asm.setUsage(
          computeUsage(
            {
              input: Math.max(0, (usage.prompt_tokens ?? 0) - cached - written),
              output: usage.completion_tokens ?? 0,
              cacheRead: cached,
              cacheWrite: written,
              reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0,
            },
            modelPricing(model, reportedModel),
          ),
        );
      }
      // The usage chunk after the finish_reason is the last of the response (see above).
      if (chunk.usage && finishReason !== undefined && (chunk.choices?.length ?? 0) === 0) return terminal();
      const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
      if (choice === undefined) return undefined;
      const delta: Delta = choice.delta ?? {};

      const reasoning = reasoningOf(delta, compat.reasoningFields);
      const detailsDelta = compat.reasoningDetails
        ? (delta as { reasoning_details?: unknown }).reasoning_details
        : undefined;
      const hasDetails = Array.isArray(detailsDelta) && detailsDelta.length > 0;
      if (reasoning || hasDetails) {
        closeText(emit);
        if (thinking === undefined) {
          thinking = asm.blockCount;
          emit(asm.startThinking());
        }
        if (hasDetails) details = mergeReasoningDetails(details, detailsDelta);
        if (reasoning) emit(asm.thinkingDelta(thinking, reasoning));
      }
      for (const piece of [delta.content, delta.refusal]) {
        if (!piece) continue;
        closeThinking(emit);
        if (text === undefined) {
          text = asm.blockCount;
          emit(asm.startText());
        }
        emit(asm.textDelta(text, piece));
      }
      for (const call of delta.tool_calls ?? []) {
        const key = keyOf(call);
        let contentIndex = calls.get(key);
        if (contentIndex === undefined) {
          closeText(emit);
          closeThinking(emit);
          contentIndex = asm.blockCount;
          calls.set(key, contentIndex);
          const id = call.id || `call_${idPart(responseId)}_${callCount}`;
          callCount++;
          emit(asm.startToolCall(id, call.function?.name ?? ''));
        }
        lastCall = key;
        const signature = compat.thoughtSignatures ? thoughtSignatureOf(call) : undefined;
        if (signature !== undefined) asm.setToolCallSignature(contentIndex, signature);
        const args = argumentsText(call.function?.arguments);
        if (args) emit(asm.toolCallDelta(contentIndex, args));
      }

      if (choice.finish_reason) {
        finishReason = choice.finish_reason;
        closeThinking(emit);
        closeText(emit);
        for (const contentIndex of calls.values()) emit(asm.endToolCall(contentIndex));
        calls.clear();
      }
      return undefined;
    },

    end: terminal,
  };
}

/** Reasoning text in the fields the profile names (OpenAI itself streams none), the first non-empty one. */
function reasoningOf(delta: Delta, fields: readonly string[]): string | undefined {
  for (const field of fields) {
    const value = (delta as Record<string, unknown>)[field];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/**
 * A call's argument fragment as text. Some servers (Ollama before its OpenAI layer serialised them) send the arguments
 * as a JSON object instead of a string: it is the whole argument object, so it is serialised here.
 */
function argumentsText(args: unknown): string | undefined {
  if (typeof args === 'string') return args;
  if (typeof args === 'object' && args !== null) return JSON.stringify(args);
  return undefined;
}

/** One entry of OpenRouter's `reasoning_details` (`reasoning.text`, `reasoning.summary`, `reasoning.encrypted`). */
type ReasoningDetail = Record<string, unknown>;

/**
 * Streamed `reasoning_details` entries merged into whole ones: a fragment with the `index` and `type` of the last
 * entry continues it (its `text`, `summary` and `data` appended; other fields, such as `signature`, set when given).
 */
function mergeReasoningDetails(merged: ReasoningDetail[], fragments: readonly unknown[]): ReasoningDetail[] {
  const out = merged.slice();
  for (const fragment of fragments) {
    if (typeof fragment !== 'object' || fragment === null) continue;
    const piece = fragment as ReasoningDetail;
    const last = out.at(-1);
    if (last === undefined || last.index !== piece.index || last.type !== piece.type) {
      out.push({ ...piece });
      continue;
    }
    const next: ReasoningDetail = { ...last };
    for (const [key, value] of Object.entries(piece)) {
      if (value === null || value === undefined) continue;
      if ((key === 'text' || key === 'summary' || key === 'data') && typeof value === 'string') {
        next[key] = (typeof last[key] === 'string' ? last[key] : '') + value;
      } else next[key] = value;
    }
    out[out.length - 1] = next;
  }
  return out;
}

/** Usage reported outside `chunk.usage`, at one of the profile's paths (Groq: `x_groq.usage`). */
function usageAt(chunk: Chunk, paths: readonly (readonly string[])[] | undefined): WireUsage | undefined {
  for (const path of paths ?? []) {
    let value: unknown = chunk;
    for (const key of path)
      value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
    if (typeof value === 'object' && value !== null) return value as WireUsage;
  }
  return undefined;
}

/** Gemini's thought signature on a streamed call: `extra_content.google.thought_signature`. */
function thoughtSignatureOf(call: WireToolCall): string | undefined {
  const extra = (call as { extra_content?: { google?: { thought_signature?: unknown } } }).extra_content;
  const signature = extra?.google?.thought_signature;
  return typeof signature === 'string' && signature !== '' ? signature : undefined;
}

/** The response id as an id part (letters, digits, `_`, `-`), or a random one when the server sent none. */
function idPart(responseId: string | undefined): string {
  const cleaned = responseId?.replace(/[^A-Za-z0-9_-]/g, '').slice(-24);
  return cleaned || globalThis.crypto.randomUUID().slice(0, 8);
}
