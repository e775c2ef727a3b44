/**
 * `--json` output: every agent event as exactly one JSON line on stdout, then one `result` line. Nothing else goes to
 * stdout. A `message_update` line carries its stream event without the snapshots of the message so far (`message`
 * and `streamEvent.partial`, which grow with the answer and would make the output quadratic in its length); a
 * `toolcall_start` keeps the call it opened (`toolCall`: its id and name). Every other event is written whole, so the
 * message is in full on its `message_start` and `message_end` lines.
 * @module
 */
import { textOf, type AgentEndEvent, type AgentEvent, type Usage } from '../index.js';

/** The last line of `--json` output. */
export interface JsonResult {
  readonly type: 'result';
  readonly outcome: AgentEndEvent['outcome'] | 'error';
  readonly threadId: string;
  /** The text of the last assistant message. */
  readonly text: string;
  /** What the run spent (the run that ended; after an approval, the resumed run). */
  readonly usage?: Usage | undefined;
  /** What the whole thread has spent (`usageOf` its messages): the runs before, and before an approval, included. */
  readonly threadUsage?: Usage | undefined;
  /** The one-line error, when the run failed or was cancelled. */
  readonly error?: string | undefined;
}

/** Writes `event` as one JSON line (a `message_update` as {@link jsonEvent} makes it). */
export function writeJsonEvent(write: (line: string) => void, event: AgentEvent): void {
  write(`${JSON.stringify(jsonEvent(event))}\n`);
}

/**
 * What `--json` writes of `event`: the event, except that a `message_update` drops the message snapshots (`message`,
 * `streamEvent.partial`), so each line is as long as its delta and the output grows linearly with the answer; a
 * `toolcall_start`'s `toolCall` is the block it opened (from the snapshot).
 */
export function jsonEvent(event: AgentEvent): unknown {
  if (event.type !== 'message_update') return event;
  const { partial, ...streamEvent } = event.streamEvent as { partial?: { content: readonly unknown[] } } & {
    type: string;
    contentIndex?: number;
  };
  const line = { type: event.type, runId: event.runId, seq: event.seq, streamEvent };
  if (streamEvent.type === 'toolcall_start' && partial !== undefined && streamEvent.contentIndex !== undefined) {
    return { ...line, streamEvent: { ...streamEvent, toolCall: partial.content[streamEvent.contentIndex] } };
  }
  return line;
}

/** The result line for a run that ended with `end` (or did not: cancelled, failed before its end). */
export function jsonResult(
  threadId: string,
  end: AgentEndEvent | undefined,
  outcome: JsonResult['outcome'],
  error?: string,
): JsonResult {
  const last = end?.messages.findLast((m) => m.role === 'assistant');
  return {
    type: 'result',
    outcome,
    threadId,
    text: last === undefined ? '' : textOf(last),
    ...(end === undefined ? {} : { usage: end.usage }),
    ...(error === undefined ? {} : { error }),
  };
}
