import type { AgentEvent } from '../src/types/agent-events.js';
import type { AssistantMessage, Message } from '../src/types/messages.js';
import type { ToolCall } from '../src/types/content.js';
import type { StreamEvent } from '../src/types/stream-events.js';

/**
 * What both protocol adapters need to know while they read a run's events: the turn each run is in (block ids are
 * `runId.turn.contentIndex`, unique over the run) and, per tool call, whether its argument text was streamed.
 * @internal
 */
export class RunTracker {
  private readonly turns = new Map<string, number>();
  private readonly streamedArgs = new Set<string>();

  /** Reads a `turn_start`; forgets the run at its `agent_end`. */
  observe(event: AgentEvent): void {
    if (event.type === 'turn_start') this.turns.set(event.runId, event.turnIndex);
    else if (event.type === 'agent_end') this.turns.delete(event.runId);
  }

  /** The id of content block `contentIndex` of the run's current turn. */
  blockId(runId: string, contentIndex: number): string {
    return `${runId}.${this.turns.get(runId) ?? 0}.${contentIndex}`;
  }

  /** Records that argument text of `toolCallId` was streamed. */
  argsStreamed(toolCallId: string): void {
    this.streamedArgs.add(toolCallId);
  }

  /** Whether argument text of `toolCallId` was streamed (and forgets it). */
  takeArgsStreamed(toolCallId: string): boolean {
    return this.streamedArgs.delete(toolCallId);
  }
}

/** The tool call a `toolcall_*` stream event is about (from its snapshot). */
export function toolCallOf(event: StreamEvent & { readonly contentIndex: number }): ToolCall | undefined {
  if (event.type === 'toolcall_end') return event.toolCall;
  if (!('partial' in event)) return undefined;
  const block = event.partial.content[event.contentIndex];
  return block?.type === 'toolCall' ? block : undefined;
}

/** The text of a tool result's text blocks, joined by newlines. */
export function resultText(content: readonly { readonly type: string; readonly text?: string }[]): string {
  return content
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('\n');
}

/** The last assistant message of `messages` (a run's `agent_end.messages`), if any. */
export function lastAssistant(messages: readonly Message[]): AssistantMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === 'assistant') return message;
  }
  return undefined;
}
