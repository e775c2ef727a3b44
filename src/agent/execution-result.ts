/**
 * How an Agent's run settled: the `execution` of its `agent_end`.
 * @module
 */
import type { AgentEndEvent, ExecutionResult } from '../types/agent-events.js';
import { isRecordOnly, toolCallsOf, type Message } from '../types/messages.js';

/**
 * `end` with its {@link ExecutionResult}: `checkpoint` as the Agent knows it, `historyConsistent` computed over
 * `messages` (what the run stored, or added without a checkpointer). One pass over the run's own messages, once per
 * run.
 */
export function settled(
  end: AgentEndEvent,
  checkpoint: ExecutionResult['checkpoint'],
  messages: readonly Message[] = end.messages,
): AgentEndEvent {
  const execution: ExecutionResult = {
    runId: end.runId,
    outcome: end.outcome,
    checkpoint,
    historyConsistent: historyConsistent(messages, end.pending),
  };
  return { ...end, execution };
}

/**
 * Whether every tool call of `messages` has exactly one result among them, except the calls `pending` waits for
 * (none) and the calls of a record-only message (a failed, cancelled or blocked answer, whose calls never run). A
 * result of a call asked before `messages` (a resumed batch) must be the only one for that call.
 */
export function historyConsistent(
  messages: readonly Message[],
  pending: readonly { readonly toolCallId: string }[] | undefined,
): boolean {
  const results = new Map<string, number>();
  const calls: string[] = [];
  for (const message of messages) {
    if (message.role === 'assistant') {
      if (!isRecordOnly(message)) for (const call of toolCallsOf(message)) calls.push(call.id);
    } else if (message.role === 'toolResult') {
      const count = (results.get(message.toolCallId) ?? 0) + 1;
      if (count > 1) return false;
      results.set(message.toolCallId, count);
    }
  }
  const waiting = new Set(pending?.map((request) => request.toolCallId));
  for (const id of calls) {
    if (waiting.has(id) ? results.has(id) : !results.has(id)) return false;
  }
  return true;
}
