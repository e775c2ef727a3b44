/**
 * Builders for scripted responses of {@link FauxProvider}.
 * @module
 */
import type { AssistantContent, TextContent, ThinkingContent, ToolCall } from '../types/content.js';
import type { AssistantMessage, ProviderErrorKind, StopReason } from '../types/messages.js';
import { EMPTY_USAGE, type Usage } from '../types/usage.js';

let nextFauxCallId = 1;

/** A text block. */
export function fauxText(text: string): TextContent {
  return { type: 'text', text };
}

/** A thinking block (with a signature, when you want to see one replayed). */
export function fauxThinking(thinking: string, options?: { signature?: string; redacted?: boolean }): ThinkingContent {
  return {
    type: 'thinking',
    thinking,
    ...(options?.signature !== undefined ? { signature: options.signature } : {}),
    ...(options?.redacted ? { redacted: true } : {}),
  };
}

/**
 * A tool call. Without `id`, one is generated (`faux_call_<n>`, unique in the process). Pass `rawArguments` to script
 * a call whose argument text is not valid JSON: it streams that text and ends with `invalidArguments` set.
 */
export function fauxToolCall(
  name: string,
  args: Readonly<Record<string, unknown>> = {},
  options?: { id?: string; rawArguments?: string },
): ToolCall {
  const id = options?.id ?? `faux_call_${nextFauxCallId++}`;
  return options?.rawArguments === undefined
    ? { type: 'toolCall', id, name, arguments: args }
    : { type: 'toolCall', id, name, arguments: {}, invalidArguments: options.rawArguments };
}

/** Options of {@link fauxMessage}. */
export interface FauxMessageOptions {
  /** Defaults to `toolUse` when the content has a tool call, `stop` otherwise. */
  readonly stopReason?: StopReason | undefined;
  /** For `stopReason: 'error'`; defaults to `Faux error`. */
  readonly errorMessage?: string | undefined;
  /** For `stopReason: 'error'`; defaults to `unknown`. */
  readonly errorKind?: ProviderErrorKind | undefined;
  /** For `stopReason: 'error'`: the provider's "retry after" (on the error event and the message). */
  readonly retryAfterMs?: number | undefined;
  /** For `stopReason: 'blocked'`; defaults to `Faux block`. */
  readonly blockReason?: string | undefined;
  /** Reported as is instead of the provider's estimate. */
  readonly usage?: Usage | undefined;
  readonly responseId?: string | undefined;
}

/**
 * A scripted assistant message. `provider` and `model` are stamped by the {@link FauxProvider} that streams it.
 *
 * @example
 * faux.setResponses([
 *   fauxMessage([fauxToolCall('weather', { city: 'Paris' })]),
 *   fauxMessage('It is sunny in Paris.'),
 * ]);
 */
export function fauxMessage(
  content: string | readonly AssistantContent[],
  options: FauxMessageOptions = {},
): AssistantMessage {
  const blocks: readonly AssistantContent[] = typeof content === 'string' ? [fauxText(content)] : content;
  const stopReason = options.stopReason ?? (blocks.some((block) => block.type === 'toolCall') ? 'toolUse' : 'stop');
  const message: AssistantMessage = {
    role: 'assistant',
    content: blocks,
    stopReason,
    usage: options.usage ?? EMPTY_USAGE,
    provider: 'faux',
    model: 'faux',
    timestamp: Date.now(),
    ...(options.responseId !== undefined ? { responseId: options.responseId } : {}),
  };
  if (stopReason === 'blocked') return { ...message, blockReason: options.blockReason ?? 'Faux block' };
  if (stopReason !== 'error' && stopReason !== 'aborted') return message;
  return {
    ...message,
    errorMessage: options.errorMessage ?? (stopReason === 'aborted' ? 'Request aborted' : 'Faux error'),
    errorKind: options.errorKind ?? (stopReason === 'aborted' ? 'aborted' : 'unknown'),
    ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
  };
}
