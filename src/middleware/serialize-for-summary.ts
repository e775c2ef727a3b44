/**
 * The conversation as plain text, for a model asked to summarise it.
 * @module
 */
import { isRecordOnly, type Message } from '../types/messages.js';

/** Longest text kept of one tool result (the rest is cut with a note): tool output is the bulk of long threads. */
const MAX_RESULT_CHARS = 4_000;

/**
 * Renders messages as a plain-text transcript: `User:`, `Assistant:`, tool calls with their arguments, tool results
 * (cut past 4,000 characters, with a note), thinking left out, and every image replaced by a note saying it was
 * dropped. Tool calls and their results appear together, in order.
 */
export function serializeForSummary(messages: readonly Message[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'user':
        lines.push(`User: ${contentText(message.content)}`);
        break;
      case 'assistant': {
        const parts: string[] = [];
        for (const block of message.content) {
          if (block.type === 'text') parts.push(block.text);
          else if (block.type === 'toolCall')
            parts.push(`[called tool ${block.name} with ${JSON.stringify(block.arguments)}]`);
        }
        if (isRecordOnly(message)) {
          const why = message.errorMessage ?? message.blockReason;
          parts.push(`[the answer ended: ${message.stopReason}${why ? `: ${why}` : ''}]`);
        }
        lines.push(`Assistant: ${parts.join('\n')}`);
        break;
      }
      case 'toolResult': {
        let text = contentText(message.content);
        if (text.length > MAX_RESULT_CHARS) {
          text = `${text.slice(0, MAX_RESULT_CHARS)} [… ${text.length - MAX_RESULT_CHARS} more characters cut]`;
        }
        lines.push(`Tool result (${message.toolName}${message.isError ? ', error' : ''}): ${text}`);
        break;
      }
    }
  }
  return lines.join('\n\n');
}

function contentText(content: Message['content']): string {
  if (typeof content === 'string') return content;
  const parts: string[] = [];
  for (const block of content) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'image') parts.push('[an image was here; dropped from the summary]');
  }
  return parts.join('\n');
}
