/**
 * OpenAI Responses stream events → {@link MessageAssembler} calls.
 * @module
 */
import type OpenAI from 'openai';
import type { Model } from '../types/model.js';
import type { StreamEvent, TerminalStreamEvent } from '../types/stream-events.js';
import { computeUsage } from '../types/usage.js';
import { classifyErrorCode } from './classify-error.js';
import type { WireMapper } from './from-sdk-stream.js';
import type { MessageAssembler } from './message-assembler.js';
import { modelPricing } from './model-table.js';
import { reasoningSignature } from './openai-responses-request.js';

type WireEvent = OpenAI.Responses.ResponseStreamEvent;
type Response = OpenAI.Responses.Response;

/**
 * Maps one Responses stream. Output items map by `output_index`:
 *
 * - `message` items: each `output_text` (or `refusal`) content part is a text block; the item id goes into the
 *   block's `signature` (replayed so a preceding reasoning item keeps its pair).
 * - `reasoning` items: a thinking block made of the summary deltas (parts separated by a blank line), closed at
 *   `output_item.done` with the item (id, summary, `encrypted_content`) as its `signature`, replayed on the next turn.
 *   A reasoning item with neither summary nor encrypted content (nothing to show or replay) is skipped.
 * - `function_call` items: a tool call with id `call_id|item_id` (the Responses API pairs a replayed call with its
 *   reasoning by the item id), argument deltas, `.done` as a fallback when no delta came.
 * - Built-in tool items (`web_search_call`, …) and annotations are ignored: the API ran them.
 *
 * Terminal: `response.completed` → `stop` (`toolUse` when calls were made), `response.incomplete` → `length` (a content
 * filter → `blocked`, `blockReason` `content_filter`), `response.failed` and `error` events → `error`, classified by their code. A stream that ends
 * without any of them is an `error` (`unavailable`), never a success.
 */
export function responsesWireMapper(asm: MessageAssembler, model: Model): WireMapper<WireEvent> {
  const texts = new Map<string, { contentIndex: number; itemId: string | undefined }>(); // `${output}:${part}`
  const reasoning = new Map<number, number>(); // output index → content index of its thinking block
  const calls = new Map<number, { contentIndex: number; sawDelta: boolean }>();
  let callCount = 0;
  let reportedModel: string | undefined;

  const updateUsage = (response: Response | undefined): void => {
    const usage = response?.usage;
    if (!usage) return;
    const cached = usage.input_tokens_details?.cached_tokens ?? 0;
    const written = usage.input_tokens_details?.cache_write_tokens ?? 0;
    // input_tokens includes cached tokens; output_tokens includes reasoning tokens.
    asm.setUsage(
      computeUsage(
        {
          input: Math.max(0, usage.input_tokens - cached - written),
          output: usage.output_tokens,
          cacheRead: cached,
          cacheWrite: written,
          reasoning: usage.output_tokens_details?.reasoning_tokens ?? 0,
        },
        modelPricing(model, reportedModel),
      ),
    );
  };

  const startText = (key: string, itemId: string | undefined, emit: (event: StreamEvent) => void): number => {
    const contentIndex = asm.blockCount;
    emit(asm.startText());
    texts.set(key, { contentIndex, itemId });
    return contentIndex;
  };
  const endText = (key: string, emit: (event: StreamEvent) => void): void => {
    const open = texts.get(key);
    if (open === undefined) return;
    texts.delete(key);
    if (open.itemId !== undefined) asm.setTextSignature(open.contentIndex, open.itemId);
    emit(asm.endText(open.contentIndex));
  };
  const thinkingAt = (outputIndex: number, emit: (event: StreamEvent) => void): number => {
    let contentIndex = reasoning.get(outputIndex);
    if (contentIndex === undefined) {
      contentIndex = asm.blockCount;
      emit(asm.startThinking());
      reasoning.set(outputIndex, contentIndex);
    }
    return contentIndex;
  };
  const startCall = (
    outputIndex: number,
    item: OpenAI.Responses.ResponseFunctionToolCall,
    emit: (e: StreamEvent) => void,
  ) => {
    const contentIndex = asm.blockCount;
    emit(asm.startToolCall(item.id ? `${item.call_id}|${item.id}` : item.call_id, item.name));
    const open = { contentIndex, sawDelta: false };
    calls.set(outputIndex, open);
    callCount++;
    return open;
  };
  const failure = (code: string | null | undefined, message: string | undefined): TerminalStreamEvent =>
    asm.error(
      classifyErrorCode(code ?? undefined, message ?? ''),
      `${code ?? 'error'}: ${message ?? 'the OpenAI Responses stream reported an error'}`,
    );

  return {
    identify(event) {
      if (event.type !== 'response.created') return;
      asm.setResponseId(event.response.id);
      if (event.response.model) {
        reportedModel = event.response.model;
        asm.setModel(event.response.model);
      }
    },

    map(event, emit) {
      switch (event.type) {
        case 'response.output_item.added':
          if (event.item.type === 'function_call') {
            const open = startCall(event.output_index, event.item, emit);
            if (event.item.arguments) {
              open.sawDelta = true;
              emit(asm.toolCallDelta(open.contentIndex, event.item.arguments));
            }
          }
          return undefined;
        case 'response.content_part.added':
          if (event.part.type === 'output_text' || event.part.type === 'refusal') {
            const contentIndex = startText(`${event.output_index}:${event.content_index}`, event.item_id, emit);
            const initial = event.part.type === 'output_text' ? event.part.text : event.part.refusal;
            if (initial) emit(asm.textDelta(contentIndex, initial));
          }
          return undefined;
        case 'response.output_text.delta':
        case 'response.refusal.delta': {
          if (!event.delta) return undefined;
          const key = `${event.output_index}:${event.content_index}`;
          const contentIndex = texts.get(key)?.contentIndex ?? startText(key, event.item_id, emit);
          emit(asm.textDelta(contentIndex, event.delta));
          return undefined;
        }
        case 'response.content_part.done':
          endText(`${event.output_index}:${event.content_index}`, emit);
          return undefined;
        case 'response.reasoning_summary_part.added': {
          const contentIndex = thinkingAt(event.output_index, emit);
          if (event.summary_index > 0) emit(asm.thinkingDelta(contentIndex, '\n\n'));
          return undefined;
        }
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta':
          if (event.delta) emit(asm.thinkingDelta(thinkingAt(event.output_index, emit), event.delta));
          return undefined;
        case 'response.function_call_arguments.delta': {
          const open = calls.get(event.output_index);
          if (open !== undefined && event.delta) {
            open.sawDelta = true;
            emit(asm.toolCallDelta(open.contentIndex, event.delta));
          }
          return undefined;
        }
        case 'response.function_call_arguments.done': {
          const open = calls.get(event.output_index);
          if (open !== undefined && !open.sawDelta && event.arguments) {
            open.sawDelta = true;
            emit(asm.toolCallDelta(open.contentIndex, event.arguments));
          }
          return undefined;
        }
        case 'response.output_item.done': {
          const item = event.item;
          if (item.type === 'reasoning') {
            let contentIndex = reasoning.get(event.output_index);
            const summary = item.summary.map((part) => part.text).join('\n\n');
            if (contentIndex === undefined) {
              if (!item.encrypted_content && summary === '') return undefined; // nothing to show or replay
              contentIndex = thinkingAt(event.output_index, emit);
              if (summary !== '') emit(asm.thinkingDelta(contentIndex, summary));
            }
            reasoning.delete(event.output_index);
            asm.appendSignature(contentIndex, reasoningSignature(item));
            emit(asm.endThinking(contentIndex));
          } else if (item.type === 'function_call') {
            const open = calls.get(event.output_index) ?? startCall(event.output_index, item, emit);
            calls.delete(event.output_index);
            if (!open.sawDelta && item.arguments) emit(asm.toolCallDelta(open.contentIndex, item.arguments));
            emit(asm.endToolCall(open.contentIndex));
          } else if (item.type === 'message') {
            for (const key of [...texts.keys()]) if (key.startsWith(`${event.output_index}:`)) endText(key, emit);
          }
          return undefined;
        }
        case 'response.completed':
          updateUsage(event.response);
          return asm.done(callCount > 0 ? 'toolUse' : 'stop');
        case 'response.incomplete': {
          updateUsage(event.response);
          const reason = event.response.incomplete_details?.reason;
          if (reason === 'content_filter') return asm.blocked('content_filter');
          return asm.done('length');
        }
        case 'response.failed':
          updateUsage(event.response);
          return failure(event.response.error?.code, event.response.error?.message);
        case 'error':
          return failure(event.code, event.message);
        default:
          return undefined;
      }
    },

    end() {
      return asm.error(
        'unavailable',
        'The OpenAI Responses stream ended before response.completed (truncated response)',
      );
    },
  };
}
