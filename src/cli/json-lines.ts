/**
 * `--json` output: every agent event as exactly one JSON line on stdout (full events: a `message_update` keeps its
 * stream event and partial message), then one `result` line. Nothing else goes to stdout.
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

/** Writes `event` as one JSON line. */
export function writeJsonEvent(write: (line: string) => void, event: AgentEvent): void {
  write(`${JSON.stringify(event)}\n`);
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
