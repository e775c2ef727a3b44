/**
 * Deltas without their snapshots on the wire. A `message_update` event carries the whole message so far (twice:
 * `message` and `streamEvent.partial`), so sending it as it is would cost O(n²) bytes for an answer of n deltas. The
 * server sends a delta update whose snapshot is the previous one grown by the delta as a *compact* frame — the
 * stream event's `type`, `contentIndex` and `delta` (and a tool call's new argument preview, when it changed) — and
 * the client rebuilds the identical snapshot from the previous one. Anything else is sent whole.
 * @module
 */
import type { AgentEvent, MessageUpdateEvent, SequencedEvent } from '../types/agent-events.js';
import type { AssistantContent } from '../types/content.js';
import type { AssistantMessage } from '../types/messages.js';

/** A compact `message_update` as it travels (no `message`, no `partial`). */
export interface CompactUpdate {
  readonly type: 'message_update';
  readonly runId: string;
  readonly seq: number;
  readonly streamEvent: {
    readonly type: 'text_delta' | 'thinking_delta' | 'toolcall_delta';
    readonly contentIndex: number;
    readonly delta: string;
  };
  /** A tool call's new argument preview (absent: the previous one stands). */
  readonly args?: Readonly<Record<string, unknown>>;
}

/**
 * The compact form of `event` when its snapshot is `previous` grown by its delta and nothing else changed, else
 * `undefined` (send it whole). O(number of blocks): blocks are compared by identity, the grown text by its length.
 * @internal
 */
export function compactUpdate(
  event: SequencedEvent,
  previous: AssistantMessage | undefined,
): CompactUpdate | undefined {
  if (event.type !== 'message_update' || previous === undefined) return undefined;
  const stream = event.streamEvent;
  if (stream.type !== 'text_delta' && stream.type !== 'thinking_delta' && stream.type !== 'toolcall_delta') return;
  const message = event.message;
  if (stream.partial !== message || !sameButContent(previous, message)) return undefined;
  const index = stream.contentIndex;
  const before = previous.content;
  const after = message.content;
  if (before.length !== after.length) return undefined;
  for (let i = 0; i < after.length; i++) if (i !== index && before[i] !== after[i]) return undefined;
  const old = before[index];
  const block = after[index];
  if (old === undefined || block === undefined || !grownBy(old, block, stream.delta)) return undefined;
  const compact = {
    type: 'message_update' as const,
    runId: event.runId,
    seq: event.seq,
    streamEvent: { type: stream.type, contentIndex: index, delta: stream.delta },
  };
  if (block.type === 'toolCall' && old.type === 'toolCall' && block.arguments !== old.arguments) {
    return { ...compact, args: block.arguments };
  }
  return compact;
}

/** True when `message` differs from `previous` at most in its `content` (every other field the same value). */
function sameButContent(previous: AssistantMessage, message: AssistantMessage): boolean {
  const keys = Object.keys(message) as (keyof AssistantMessage)[];
  if (keys.length !== Object.keys(previous).length) return false;
  for (const key of keys) if (key !== 'content' && previous[key] !== message[key]) return false;
  return true;
}

/** True when `block` is `old` with `delta` appended to its text (or argument text), every other field the same. */
function grownBy(old: AssistantContent, block: AssistantContent, delta: string): boolean {
  if (old.type !== block.type) return false;
  const grown = block.type === 'text' ? 'text' : block.type === 'thinking' ? 'thinking' : 'arguments';
  const a = old as unknown as Record<string, unknown>;
  const b = block as unknown as Record<string, unknown>;
  const keys = Object.keys(b);
  if (keys.length !== Object.keys(a).length) return false;
  for (const key of keys) if (key !== grown && a[key] !== b[key]) return false;
  if (block.type === 'toolCall') return true;
  // By length alone: reading any character of a text built by appends flattens it (O(n) per delta, O(n²) per answer).
  // Every snapshot from a MessageAssembler is the previous text plus the delta; a provider of its own that rewrote a
  // text to the same length would show the difference at the block's next whole event (`*_end`, `message_end`).
  return (b[grown] as string).length === (a[grown] as string).length + delta.length;
}

/**
 * Rebuilds the events of one stream (one client subscription): compact updates become whole `message_update` events
 * again, equal to what the server's run emitted. Keeps the latest assistant snapshot of each run.
 * @internal
 */
export class DeltaDecoder {
  private readonly snapshots = new Map<string, AssistantMessage>();

  /** The whole event for `received` (a frame's event as parsed); throws for a compact update with no snapshot. */
  decode(received: SequencedEvent | CompactUpdate): SequencedEvent {
    if (received.type === 'message_update' && !('message' in received)) return this.expand(received);
    const event = received;
    this.observe(event);
    return event;
  }

  private observe(event: AgentEvent): void {
    if (event.type === 'message_update') this.snapshots.set(event.runId, event.message);
    else if (event.type === 'message_start' && event.message.role === 'assistant') {
      this.snapshots.set(event.runId, event.message);
    } else if (event.type === 'message_end' || event.type === 'agent_end') this.snapshots.delete(event.runId);
  }

  private expand(compact: CompactUpdate): SequencedEvent {
    const previous = this.snapshots.get(compact.runId);
    const { contentIndex: index, delta, type } = compact.streamEvent;
    const old = previous?.content[index];
    if (previous === undefined || old === undefined) {
      throw new Error(`a compact update (seq ${compact.seq}) with no message to apply it to`);
    }
    let block: AssistantContent;
    if (type === 'text_delta' && old.type === 'text') block = { ...old, text: old.text + delta };
    else if (type === 'thinking_delta' && old.type === 'thinking') block = { ...old, thinking: old.thinking + delta };
    else if (type === 'toolcall_delta' && old.type === 'toolCall') {
      block = compact.args === undefined ? old : { ...old, arguments: compact.args };
    } else throw new Error(`a compact ${type} (seq ${compact.seq}) for a ${old.type} block`);
    const content = previous.content.slice();
    content[index] = block;
    const message: AssistantMessage = { ...previous, content };
    this.snapshots.set(compact.runId, message);
    const event: MessageUpdateEvent & { seq: number } = {
      type: 'message_update',
      runId: compact.runId,
      message,
      streamEvent: { type, contentIndex: index, delta, partial: message },
      seq: compact.seq,
    };
    return event;
  }
}
