/**
 * Repairing a transcript whose process stopped in the middle of a tool batch.
 * @module
 */
import { isRecordOnly, toolCallsOf, type Message, type ToolResultMessage } from '../types/messages.js';

/** The text of the result given to a tool call whose process stopped before it was answered. */
export const INTERRUPTED_TOOL_RESULT =
  'Tool call interrupted: the process stopped before it finished. It may or may not have run.';

/**
 * The results a restored transcript is missing: when the last assistant message (one that did not fail) asked for
 * tools and the transcript ends before every call was answered — a process killed mid-batch — each unanswered call
 * gets an error result saying it was interrupted, in the model's order. Appending them makes the transcript
 * consistent again (every tool call has exactly one result), so the run can resume. A call for which `waiting` is true
 * is not interrupted: it waits for an approval (or, approved, for the batch to resume).
 */
export function interruptedToolResults(
  messages: readonly Message[],
  waiting: (toolCallId: string) => boolean = () => false,
): ToolResultMessage[] {
  let last = messages.length - 1;
  while (last >= 0 && messages[last]!.role === 'toolResult') last--;
  const assistant = messages[last];
  if (assistant?.role !== 'assistant' || isRecordOnly(assistant)) return [];
  const answered = new Set<string>();
  for (let i = last + 1; i < messages.length; i++) answered.add((messages[i] as ToolResultMessage).toolCallId);
  const timestamp = Date.now();
  return toolCallsOf(assistant)
    .filter((call) => !answered.has(call.id) && !waiting(call.id))
    .map((call) => ({
      role: 'toolResult',
      toolCallId: call.id,
      toolName: call.name,
      content: [{ type: 'text', text: INTERRUPTED_TOOL_RESULT }],
      isError: true,
      outcome: 'interrupted',
      timestamp,
    }));
}
