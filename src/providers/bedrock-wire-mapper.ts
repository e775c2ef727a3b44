/**
 * Amazon Bedrock ConverseStream events → {@link MessageAssembler} calls.
 * @module
 */
import type { ConverseStreamOutput, TokenUsage } from '@aws-sdk/client-bedrock-runtime';
import type { ProviderErrorKind } from '../types/messages.js';
import type { Model } from '../types/model.js';
import type { StreamEvent, TerminalStreamEvent } from '../types/stream-events.js';
import { computeUsage } from '../types/usage.js';
import { toBase64 } from './bedrock-request.js';
import type { WireMapper } from './from-sdk-stream.js';
import type { MessageAssembler } from './message-assembler.js';
import { modelPricing } from './model-table.js';

/** One ConverseStream event, as the SDK yields it (a member of its `ConverseStreamOutput` union). */
export type BedrockWireEvent = ConverseStreamOutput;

/** What a ConverseStream response said about itself in its `metadata` event. */
export interface BedrockMetrics {
  /** The request id AWS gave the response (`x-amzn-requestid`), when it sent one. */
  readonly requestId?: string | undefined;
  /** `metadata.metrics.latencyMs`: Bedrock's own measure of the call. */
  readonly latencyMs?: number | undefined;
  /** `metadata.usage` as Bedrock reported it (input, output, cache read and write tokens). */
  readonly usage?: TokenUsage | undefined;
  /** `metadata.trace`: the guardrail assessment when the request had a guardrail with tracing on. */
  readonly trace?: unknown;
}

/** The ConverseStream exception members, each with what it means for a retry. */
const EXCEPTIONS: Readonly<Record<string, { readonly name: string; readonly kind: ProviderErrorKind }>> = {
  throttlingException: { name: 'ThrottlingException', kind: 'rate_limited' },
  serviceUnavailableException: { name: 'ServiceUnavailableException', kind: 'unavailable' },
  internalServerException: { name: 'InternalServerException', kind: 'unavailable' },
  modelStreamErrorException: { name: 'ModelStreamErrorException', kind: 'unavailable' },
  validationException: { name: 'ValidationException', kind: 'bad_request' },
};

/** The exception members of the ConverseStream union, which the mapper classifies. */
export const STREAM_EXCEPTIONS: ReadonlySet<string> = new Set(Object.keys(EXCEPTIONS));

const CONTEXT_OVERFLOW = /too long|context window|too many (input )?tokens|maximum context/i;

interface OpenBlock {
  readonly kind: 'text' | 'thinking' | 'toolCall';
  readonly contentIndex: number;
}

/**
 * Maps one ConverseStream response. Blocks map by their wire `contentBlockIndex`: a text block opens at its first
 * non-empty `text` delta (Converse sends no `contentBlockStart` for text, and some models send empty text blocks);
 * a reasoning block at its first `reasoningContent` delta (`text`, then `signature`), a redacted one whole from
 * `redactedContent` (kept as base64, replayed as the same bytes); a tool call at `contentBlockStart.toolUse`, its input
 * streamed as JSON in `toolUse.input` deltas. `messageStop` gives the stop reason; `metadata`, which follows it and
 * ends the stream, gives the usage and the metrics, and ends the message.
 *
 * Stop reasons: `end_turn`/`stop_sequence` → `stop`; `max_tokens`/`model_context_window_exceeded` → `length`;
 * `tool_use` → `toolUse`; `guardrail_intervened` and `content_filtered` → `blocked` (the vendor's reason and, with a
 * traced guardrail, its action reason); `malformed_model_output`/`malformed_tool_use` → an `unknown` error naming it.
 * An exception member (`throttlingException`, `validationException`, `modelStreamErrorException`,
 * `serviceUnavailableException`, `internalServerException`) ends the stream with a classified error in AWS's words.
 *
 * Ignored, safely: `citation` and `image` deltas, `contentBlockStart` of other kinds, and members added later.
 */
export function bedrockWireMapper(
  asm: MessageAssembler,
  model: Model,
  report?: (metrics: BedrockMetrics) => void,
  requestId?: string,
): WireMapper<BedrockWireEvent> {
  const blocks = new Map<number, OpenBlock>();
  let stopReason: string | undefined;
  let stopped = false;

  const open = (index: number, kind: OpenBlock['kind'], start: () => StreamEvent, emit: Emit): OpenBlock => {
    const block = { kind, contentIndex: asm.blockCount };
    emit(start());
    blocks.set(index, block);
    return block;
  };
  const close = (index: number, emit: Emit): void => {
    const block = blocks.get(index);
    if (block === undefined) return;
    blocks.delete(index);
    if (block.kind === 'text') emit(asm.endText(block.contentIndex));
    else if (block.kind === 'thinking') emit(asm.endThinking(block.contentIndex));
    else emit(asm.endToolCall(block.contentIndex));
  };
  const closeAll = (emit: Emit): void => {
    for (const index of [...blocks.keys()]) close(index, emit);
  };

  const finish = (trace: unknown): TerminalStreamEvent => {
    switch (stopReason) {
      case 'end_turn':
      case 'stop_sequence':
      case undefined:
        return asm.done('stop');
      case 'max_tokens':
      case 'model_context_window_exceeded':
        return asm.done('length');
      case 'tool_use':
        return asm.done('toolUse');
      case 'guardrail_intervened':
      case 'content_filtered': {
        const why = guardrailReason(trace);
        return asm.blocked(why === undefined ? stopReason : `${stopReason}: ${why}`);
      }
      default:
        // malformed_model_output, malformed_tool_use, and reasons added later: the answer is not usable as it is.
        return asm.error('unknown', `Bedrock stopped the response with stopReason "${stopReason}"`);
    }
  };

  return {
    map(event, emit) {
      if (event.contentBlockDelta !== undefined) {
        const { contentBlockIndex: index = 0, delta } = event.contentBlockDelta;
        if (delta === undefined) return undefined;
        let block = blocks.get(index);
        if (delta.text !== undefined) {
          if (delta.text === '') return undefined; // empty text blocks (Kimi K2) would only be dropped on replay
          block ??= open(index, 'text', () => asm.startText(), emit);
          if (block.kind !== 'text') throw new Error(`text delta in the ${block.kind} block ${index}`);
          emit(asm.textDelta(block.contentIndex, delta.text));
        } else if (delta.reasoningContent !== undefined) {
          const reasoning = delta.reasoningContent;
          if (reasoning.redactedContent !== undefined) {
            // Opaque and whole: one block per redacted delta, kept as the base64 the wire carried.
            if (block !== undefined) close(index, emit);
            open(
              index,
              'thinking',
              () => asm.startThinking({ redacted: true, thinking: toBase64(reasoning.redactedContent) }),
              emit,
            );
            return undefined;
          }
          block ??= open(index, 'thinking', () => asm.startThinking(), emit);
          if (block.kind !== 'thinking') throw new Error(`reasoning delta in the ${block.kind} block ${index}`);
          if (reasoning.text) emit(asm.thinkingDelta(block.contentIndex, reasoning.text));
          if (reasoning.signature) asm.appendSignature(block.contentIndex, reasoning.signature);
        } else if (delta.toolUse !== undefined) {
          if (block?.kind !== 'toolCall') throw new Error(`toolUse delta for block ${index}, which is not a toolUse`);
          if (delta.toolUse.input) emit(asm.toolCallDelta(block.contentIndex, delta.toolUse.input));
        }
        return undefined; // citation and image deltas, and delta kinds added later
      }
      if (event.contentBlockStart !== undefined) {
        const { contentBlockIndex: index = 0, start } = event.contentBlockStart;
        const toolUse = start?.toolUse;
        if (toolUse !== undefined) {
          close(index, emit);
          const id = toolUse.toolUseId ?? `tooluse_${index}`;
          open(index, 'toolCall', () => asm.startToolCall(id, toolUse.name ?? ''), emit);
        }
        return undefined;
      }
      if (event.contentBlockStop !== undefined) {
        close(event.contentBlockStop.contentBlockIndex ?? 0, emit);
        return undefined;
      }
      if (event.messageStop !== undefined) {
        closeAll(emit);
        stopped = true;
        stopReason = event.messageStop.stopReason;
        return undefined;
      }
      if (event.metadata !== undefined) {
        const { usage, metrics, trace } = event.metadata;
        if (usage !== undefined) {
          // Bedrock's inputTokens exclude cache reads and writes, as cubepi's `input` does.
          const counts = {
            input: usage.inputTokens,
            output: usage.outputTokens,
            cacheRead: usage.cacheReadInputTokens,
            cacheWrite: usage.cacheWriteInputTokens,
          };
          asm.setUsage(computeUsage(counts, modelPricing(model)));
        }
        report?.({ requestId, latencyMs: metrics?.latencyMs, usage, trace });
        closeAll(emit);
        return finish(trace);
      }
      for (const [member, exception] of Object.entries(EXCEPTIONS)) {
        const body = (event as unknown as Record<string, { message?: string } | undefined>)[member];
        if (body === undefined) continue;
        const message = body.message ?? '(no message)';
        const kind =
          exception.kind === 'bad_request' && CONTEXT_OVERFLOW.test(message) ? 'context_overflow' : exception.kind;
        return asm.error(kind, `Bedrock ${exception.name} in the stream: ${message}`);
      }
      return undefined; // messageStart, and members added after this SDK
    },

    end() {
      // `metadata` is the last event; a stream that stopped without it still holds a whole answer.
      if (stopped) return finish(undefined);
      return asm.error('unavailable', 'The Bedrock stream ended before messageStop (truncated response)');
    },
  };
}

type Emit = (event: StreamEvent) => void;

/** The guardrail's own words from a traced intervention: `actionReason`, when the trace has one. */
function guardrailReason(trace: unknown): string | undefined {
  const guardrail = (trace as { guardrail?: { actionReason?: unknown } } | undefined)?.guardrail;
  return typeof guardrail?.actionReason === 'string' && guardrail.actionReason !== ''
    ? guardrail.actionReason
    : undefined;
}
