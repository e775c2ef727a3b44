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

const UNREPORTED_USAGE: Usage = Object.freeze({ ...EMPTY_USAGE, unreported: true });

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type Delta = Chunk['choices'][number]['delta'];

/**
 * Maps one Chat Completions stream. Only choice 0 is read: a request with `n > 1` streams every choice interleaved,
 * and cubepi's message is one answer, so the others are ignored on purpose (the usage still counts them, as the
 * server reports it for the whole request).
 *
 * - Text, `refusal` (streamed as text: the model's answer is the refusal) and the reasoning fields of
 *   OpenAI-compatible servers (`reasoning_content`: DeepSeek, vLLM; `reasoning`: Ollama, OpenRouter) as thinking.
 * - Tool calls are keyed by their stream `index`, not by `id`: only the first fragment of a call carries the id and
 *   the name, and parallel calls may interleave.
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
export function completionsWireMapper(asm: MessageAssembler, model: Model): WireMapper<Chunk> {
  let text: number | undefined; // content index of the open text block
  let thinking: number | undefined; // content index of the open thinking block
  const calls = new Map<number, number>(); // stream index → content index, for open calls
  let callCount = 0;
  let finishReason: string | undefined;
  let reportedModel: string | undefined;
  let usageSeen = false;

  const closeText = (emit: (event: StreamEvent) => void) => {
    if (text !== undefined) emit(asm.endText(text));
    text = undefined;
  };
  const closeThinking = (emit: (event: StreamEvent) => void) => {
    if (thinking !== undefined) emit(asm.endThinking(thinking));
    thinking = undefined;
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
      if (chunk.id) asm.setResponseId(chunk.id);
      if (chunk.model) {
        reportedModel = chunk.model;
        asm.setModel(chunk.model);
      }
    },

    map(chunk, emit) {
      if (chunk.usage) {
        usageSeen = true;
        const usage = chunk.usage;
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

      const reasoning = reasoningOf(delta);
      if (reasoning) {
        closeText(emit);
        if (thinking === undefined) {
          thinking = asm.blockCount;
          emit(asm.startThinking());
        }
        emit(asm.thinkingDelta(thinking, reasoning));
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
      for (const [position, call] of (delta.tool_calls ?? []).entries()) {
        const key = call.index ?? position;
        let contentIndex = calls.get(key);
        if (contentIndex === undefined) {
          closeText(emit);
          closeThinking(emit);
          contentIndex = asm.blockCount;
          calls.set(key, contentIndex);
          callCount++;
          emit(asm.startToolCall(call.id ?? `call_${key}`, call.function?.name ?? ''));
        }
        if (call.function?.arguments) emit(asm.toolCallDelta(contentIndex, call.function.arguments));
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

/** Reasoning text in the fields OpenAI-compatible servers use (OpenAI itself streams none). */
function reasoningOf(delta: Delta): string | undefined {
  const extra = delta as { reasoning_content?: unknown; reasoning?: unknown };
  const value = extra.reasoning_content ?? extra.reasoning;
  return typeof value === 'string' && value !== '' ? value : undefined;
}
