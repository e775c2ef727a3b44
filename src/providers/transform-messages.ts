/**
 * Cross-provider handoff: a transcript started on one provider, made safe to send to another.
 * @module
 */
import type { AssistantContent } from '../types/content.js';
export { filePlaceholder, noFile } from '../types/file-kind.js';
import { isRecordOnly, type AssistantMessage, type Message, type ToolResultMessage } from '../types/messages.js';
import { sameModel } from './model-table.js';

/** Who the transcript is about to be sent to. */
export interface TransformTarget {
  /** The id of the receiving provider. */
  readonly provider: string;
  /**
   * The id of the receiving model. Thinking is replayed as thinking only to the provider *and* model that produced it
   * (signatures and encrypted reasoning are bound to the model: Claude Sonnet 5.5 rejects another model's); an alias
   * and its dated snapshot count as the same model.
   */
  readonly model: string;
  /** Maps a tool-call id onto what the receiving API accepts; must be a pure function of the id. */
  readonly normalizeToolCallId: (id: string) => string;
}

/** The text of the synthetic result given to a tool call that has none. */
export const MISSING_TOOL_RESULT = 'No result provided for this tool call.';

/**
 * Makes a transcript valid for the receiving provider, whichever providers produced it. The rules:
 *
 * - An assistant message that ended in `error` or `aborted` is not replayed (it records a failed call), and neither
 *   are results that answer its tool calls.
 * - Thinking from another provider or model becomes plain text (its signature means nothing elsewhere); another
 *   provider's or model's redacted (encrypted) thinking is dropped. Thinking of the receiving model is kept as it is.
 * - A text block's `signature` (provider replay data) is dropped when the block came from another provider or model.
 * - Empty text and empty thinking blocks are dropped (Anthropic rejects empty text blocks), unless the receiving
 *   provider and model signed them (Gemini's signature-only empty parts); an assistant message left with no content
 *   is dropped.
 * - Tool-call ids are normalised with `target.normalizeToolCallId`, on the call and on its result alike.
 * - A tool call with no result gets a synthetic error result ({@link MISSING_TOOL_RESULT}) right after its message's
 *   other results; a result that answers no call in the transcript is dropped.
 *
 * The input is not changed; messages that need no change are passed through as they are (same objects).
 */
export function transformMessages(messages: readonly Message[], target: TransformTarget): Message[] {
  const out: Message[] = [];
  // Calls of the last replayed assistant message still waiting for their result: normalised id → name.
  let pending = new Map<string, string>();
  let pendingSince = 0; // that message's timestamp, stamped on synthetic results (deterministic output)
  const answerPending = () => {
    for (const [toolCallId, toolName] of pending) out.push(syntheticResult(toolCallId, toolName, pendingSince));
    pending = new Map();
  };

  for (const message of messages) {
    if (message.role === 'toolResult') {
      const toolCallId = target.normalizeToolCallId(message.toolCallId);
      if (!pending.has(toolCallId)) continue; // answers a call that is not replayed
      pending.delete(toolCallId);
      out.push(toolCallId === message.toolCallId ? message : { ...message, toolCallId });
      continue;
    }
    answerPending();
    if (message.role === 'user') {
      out.push(message);
      continue;
    }
    if (isRecordOnly(message)) continue;
    const converted = convertAssistant(message, target);
    if (converted === undefined) continue;
    for (const block of converted.content) if (block.type === 'toolCall') pending.set(block.id, block.name);
    pendingSince = converted.timestamp;
    out.push(converted);
  }
  answerPending();
  return out;
}

function convertAssistant(message: AssistantMessage, target: TransformTarget): AssistantMessage | undefined {
  const own = message.provider === target.provider && sameModel(message.model, target.model);
  let changed = false;
  const content: AssistantContent[] = [];
  for (const block of message.content) {
    let next: AssistantContent | undefined = block;
    switch (block.type) {
      case 'text':
        // An empty text that carries its own provider's signature is replay data (Gemini sends its signature on an
        // empty text part at the end of a stream): kept for that provider, dropped elsewhere.
        if (block.text === '') next = own && block.signature !== undefined ? block : undefined;
        else if (!own && block.signature !== undefined) next = { type: 'text', text: block.text };
        break;
      case 'thinking':
        if (own) next = block.thinking === '' && block.signature === undefined ? undefined : block;
        else next = block.redacted || block.thinking.trim() === '' ? undefined : { type: 'text', text: block.thinking };
        break;
      case 'toolCall': {
        const id = target.normalizeToolCallId(block.id);
        if (!own && block.signature !== undefined) {
          const { signature: _foreign, ...call } = block;
          next = { ...call, id };
        } else if (id !== block.id) next = { ...block, id };
        break;
      }
    }
    if (next !== block) changed = true;
    if (next !== undefined) content.push(next);
  }
  if (content.length === 0) return undefined;
  return changed ? { ...message, content } : message;
}

function syntheticResult(toolCallId: string, toolName: string, timestamp: number): ToolResultMessage {
  return {
    role: 'toolResult',
    toolCallId,
    toolName,
    content: [{ type: 'text', text: MISSING_TOOL_RESULT }],
    isError: true,
    timestamp,
  };
}
