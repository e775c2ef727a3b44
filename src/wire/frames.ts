/**
 * The wire protocol between `cubepi/server` and `cubepi/client`: one run's events as numbered frames, the same over
 * Server-Sent Events and WebSocket. See `docs/ui.md` ("The wire protocol").
 * @module
 */
import type { SequencedEvent } from '../types/agent-events.js';
import type { Message } from '../types/messages.js';

export type { SequencedEvent };

/**
 * One frame of a run's stream. `event` frames carry a {@link SequencedEvent}; the run's stream ends with exactly one
 * `end` frame (the run's Observable completed) or `error` frame (it failed: the error's `name`, `message` and, for
 * cubepi's typed errors, `code`). Terminal frames have a `seq` too (one past the last event's), so a client that
 * reconnects after the run ended still learns how it ended.
 *
 * A `lost` frame ends the stream of a run the server no longer has because its process stopped mid-run (a restart):
 * the thread's checkpoint shows the run started and never ended. It carries the thread and the run's messages as
 * stored (its user message, what it stored before the stop, and the closing messages the server added: `interrupted`
 * tool results, an `aborted` assistant message). See docs/ui.md ("Restart mid-run").
 */
export type WireFrame =
  | { readonly kind: 'event'; readonly seq: number; readonly event: SequencedEvent }
  | { readonly kind: 'end'; readonly seq: number; readonly runId: string }
  | { readonly kind: 'error'; readonly seq: number; readonly runId: string; readonly error: WireError }
  | {
      readonly kind: 'lost';
      readonly seq: number;
      readonly runId: string;
      readonly threadId: string;
      readonly messages: readonly Message[];
    };

/** A run's failure as it travels: enough to rebuild a typed error on the client. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
}

/**
 * The JSON text of one frame as a WebSocket message, and the `data:` of its SSE record:
 * - an event: the {@link SequencedEvent} itself (SSE event name `message`, the default);
 * - `end`: `{"type":"run_end","runId":…,"seq":…}` (SSE event name `end`);
 * - `error`: `{"type":"run_error","runId":…,"seq":…,"error":{…}}` (SSE event name `error`);
 * - `lost`: `{"type":"run_lost","runId":…,"threadId":…,"seq":…,"messages":[…]}` (SSE event name `lost`).
 * @internal
 */
export function frameJson(frame: WireFrame): string {
  switch (frame.kind) {
    case 'event':
      return JSON.stringify(frame.event);
    case 'end':
      return JSON.stringify({ type: 'run_end', runId: frame.runId, seq: frame.seq });
    case 'error':
      return JSON.stringify({ type: 'run_error', runId: frame.runId, seq: frame.seq, error: frame.error });
    case 'lost':
      return JSON.stringify({
        type: 'run_lost',
        runId: frame.runId,
        threadId: frame.threadId,
        seq: frame.seq,
        messages: frame.messages,
      });
  }
}

/**
 * Reads one frame from its JSON text (a WebSocket message or an SSE record's data). Returns `undefined` for text that
 * is not a frame (not JSON, not an object, no numeric `seq`): the client treats that as a broken stream.
 * @internal
 */
export function parseFrame(text: string): WireFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as { type?: unknown; seq?: unknown; runId?: unknown; error?: unknown };
  if (typeof record.seq !== 'number' || !Number.isSafeInteger(record.seq) || typeof record.type !== 'string') {
    return undefined;
  }
  const runId = typeof record.runId === 'string' ? record.runId : '';
  if (record.type === 'run_end') return { kind: 'end', seq: record.seq, runId };
  if (record.type === 'run_lost') {
    const lost = value as { threadId?: unknown; messages?: unknown };
    const threadId = typeof lost.threadId === 'string' ? lost.threadId : '';
    const messages = Array.isArray(lost.messages) ? (lost.messages as Message[]) : [];
    return { kind: 'lost', seq: record.seq, runId, threadId, messages };
  }
  if (record.type === 'run_error') {
    const error = (record.error ?? {}) as { name?: unknown; message?: unknown; code?: unknown };
    return {
      kind: 'error',
      seq: record.seq,
      runId,
      error: {
        name: typeof error.name === 'string' ? error.name : 'Error',
        message: typeof error.message === 'string' ? error.message : 'the run failed',
        ...(typeof error.code === 'string' ? { code: error.code } : {}),
      },
    };
  }
  return { kind: 'event', seq: record.seq, event: value as SequencedEvent };
}

/**
 * The SSE record of a frame: `id:` its seq, `event:` for terminal frames, one `data:` line (JSON has no raw newline).
 * @internal
 */
export function sseRecord(frame: WireFrame, json: string): string {
  const name = frame.kind === 'event' ? '' : `event: ${frame.kind}\n`;
  return `id: ${frame.seq}\n${name}data: ${json}\n\n`;
}

/** A run's failure as it travels. @internal */
export function toWireError(error: unknown): WireError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, message: error.message, ...(typeof code === 'string' ? { code } : {}) };
  }
  return { name: 'Error', message: String(error) };
}
