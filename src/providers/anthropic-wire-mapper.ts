/**
 * Anthropic Messages stream events → {@link MessageAssembler} calls.
 * @module
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { Model } from '../types/model.js';
import type { TerminalStreamEvent } from '../types/stream-events.js';
import { computeUsage, type TokenCounts } from '../types/usage.js';
import type { WireMapper } from './from-sdk-stream.js';
import type { MessageAssembler } from './message-assembler.js';
import { modelPricing } from './model-table.js';

type WireEvent = Anthropic.RawMessageStreamEvent;

/** A wire content block we map, by its wire `index`. */
interface OpenBlock {
  readonly kind: 'text' | 'thinking' | 'toolCall';
  readonly contentIndex: number;
  /** A tool_use block's `input` from `content_block_start`, used when no `input_json_delta` follows. */
  readonly initialInput?: unknown;
  sawDelta: boolean;
}

/**
 * Maps one Anthropic response. `message_start` gives the id, the precise model and the first usage; blocks map by
 * their wire `index` (text, thinking with `signature_delta`, `redacted_thinking` opaque and whole, `tool_use` with
 * `input_json_delta`); `message_delta` gives the stop reason and the final usage; `message_stop` ends the message.
 *
 * Ignored, safely: `ping`, `citations_delta`, server-side tool blocks (`server_tool_use`, `*_tool_result`: the API
 * ran them, there is nothing for the client to execute or replay), and any event or block type added later.
 */
export function anthropicWireMapper(asm: MessageAssembler, model: Model): WireMapper<WireEvent> {
  const blocks = new Map<number, OpenBlock>();
  let counts: TokenCounts = {};
  let stopReason: string | null = null;
  let refusal: { category?: unknown; explanation?: unknown } | null = null; // message_delta's stop_details
  let reportedModel: string | undefined;

  const updateUsage = (usage: Partial<Record<string, unknown>> | undefined): void => {
    if (!usage) return;
    // message_delta repeats the counts cumulatively; a null or absent field keeps the message_start value.
    const read = (key: string, previous: number | undefined) =>
      typeof usage[key] === 'number' ? usage[key] : previous;
    const details = usage.output_tokens_details as { thinking_tokens?: unknown } | undefined;
    counts = {
      input: read('input_tokens', counts.input),
      output: read('output_tokens', counts.output),
      cacheRead: read('cache_read_input_tokens', counts.cacheRead),
      cacheWrite: read('cache_creation_input_tokens', counts.cacheWrite),
      reasoning: typeof details?.thinking_tokens === 'number' ? details.thinking_tokens : counts.reasoning,
    };
    // Anthropic's input_tokens already exclude cache reads and writes: no subtraction here.
    asm.setUsage(computeUsage(counts, modelPricing(model, reportedModel)));
  };

  const finish = (): TerminalStreamEvent => {
    switch (stopReason) {
      case 'end_turn':
      case 'stop_sequence':
      case 'pause_turn': // a server-tool loop paused; the answer so far is complete, re-sending continues it
      case null:
        return asm.done('stop');
      case 'max_tokens':
      case 'model_context_window_exceeded':
        return asm.done('length');
      case 'tool_use':
        return asm.done('toolUse');
      case 'refusal':
        return asm.blocked(refusalReason(refusal));
      default:
        return asm.error('unknown', `Anthropic stopped the response with an unknown stop_reason "${stopReason}"`);
    }
  };

  return {
    identify(event) {
      if (event.type !== 'message_start') return;
      asm.setResponseId(event.message.id);
      if (event.message.model) {
        reportedModel = event.message.model;
        asm.setModel(event.message.model);
      }
    },

    map(event, emit) {
      switch (event.type) {
        case 'message_start':
          updateUsage(event.message.usage as unknown as Record<string, unknown>);
          return undefined;
        case 'content_block_start': {
          const block = event.content_block;
          const contentIndex = asm.blockCount;
          if (block.type === 'text') {
            emit(asm.startText());
            if (block.text) emit(asm.textDelta(contentIndex, block.text));
            blocks.set(event.index, { kind: 'text', contentIndex, sawDelta: false });
          } else if (block.type === 'thinking') {
            emit(asm.startThinking());
            if (block.thinking) emit(asm.thinkingDelta(contentIndex, block.thinking));
            if (block.signature) asm.appendSignature(contentIndex, block.signature);
            blocks.set(event.index, { kind: 'thinking', contentIndex, sawDelta: false });
          } else if (block.type === 'redacted_thinking') {
            // Opaque and whole: kept as the encrypted `data`, replayed verbatim as redacted_thinking.
            emit(asm.startThinking({ redacted: true, thinking: block.data }));
            blocks.set(event.index, { kind: 'thinking', contentIndex, sawDelta: false });
          } else if (block.type === 'tool_use') {
            emit(asm.startToolCall(block.id, block.name));
            blocks.set(event.index, { kind: 'toolCall', contentIndex, initialInput: block.input, sawDelta: false });
          }
          return undefined;
        }
        case 'content_block_delta': {
          const open = blocks.get(event.index);
          if (open === undefined) return undefined; // a delta of an ignored (server-side) block
          const delta = event.delta;
          if (delta.type === 'text_delta' && open.kind === 'text') {
            if (delta.text) emit(asm.textDelta(open.contentIndex, delta.text));
          } else if (delta.type === 'thinking_delta' && open.kind === 'thinking') {
            if (delta.thinking) emit(asm.thinkingDelta(open.contentIndex, delta.thinking));
          } else if (delta.type === 'signature_delta' && open.kind === 'thinking') {
            asm.appendSignature(open.contentIndex, delta.signature);
          } else if (delta.type === 'input_json_delta' && open.kind === 'toolCall') {
            open.sawDelta = true;
            // The first fragment is often empty: nothing to preview yet.
            if (delta.partial_json) emit(asm.toolCallDelta(open.contentIndex, delta.partial_json));
          }
          return undefined;
        }
        case 'content_block_stop': {
          const open = blocks.get(event.index);
          if (open === undefined) return undefined;
          blocks.delete(event.index);
          if (open.kind === 'text') emit(asm.endText(open.contentIndex));
          else if (open.kind === 'thinking') emit(asm.endThinking(open.contentIndex));
          else {
            // A tool_use that arrived whole (no input_json_delta) carries its input on content_block_start.
            const input = open.initialInput;
            if (!open.sawDelta && input !== null && typeof input === 'object' && Object.keys(input).length > 0) {
              emit(asm.toolCallDelta(open.contentIndex, JSON.stringify(input)));
            }
            emit(asm.endToolCall(open.contentIndex));
          }
          return undefined;
        }
        case 'message_delta':
          if (event.delta.stop_reason) stopReason = event.delta.stop_reason;
          // Newer API versions explain a refusal in `stop_details` (category, explanation); older ones send none.
          refusal = (event.delta as { stop_details?: typeof refusal }).stop_details ?? refusal;
          updateUsage(event.usage as unknown as Record<string, unknown>);
          return undefined;
        case 'message_stop':
          return finish();
        default:
          return undefined; // ping (the SDK drops it already) and event types added after this SDK
      }
    },

    end() {
      return asm.error('unavailable', 'The Anthropic stream ended before message_stop (truncated response)');
    },
  };
}

/** A refusal's `blockReason`: `refusal`, with the category and explanation Anthropic gave (`refusal (cyber): …`). */
function refusalReason(details: { category?: unknown; explanation?: unknown } | null): string {
  const category = typeof details?.category === 'string' ? ` (${details.category})` : '';
  const explanation =
    typeof details?.explanation === 'string' && details.explanation !== '' ? `: ${details.explanation}` : '';
  return `refusal${category}${explanation}`;
}
