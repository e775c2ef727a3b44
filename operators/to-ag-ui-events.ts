import { Observable, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../src/types/agent-events.js';
import { lastAssistant, resultText, RunTracker, toolCallOf } from './interop-ids.js';

/**
 * An event of the AG-UI protocol (`@ag-ui/core` 1.x, as used by CopilotKit): the subset {@link toAgUiEvents}
 * produces. Each is a plain JSON object whose `type` is the protocol's event type name.
 */
export interface AgUiEvent {
  readonly type:
    | 'RUN_STARTED'
    | 'RUN_FINISHED'
    | 'RUN_ERROR'
    | 'STEP_STARTED'
    | 'STEP_FINISHED'
    | 'TEXT_MESSAGE_START'
    | 'TEXT_MESSAGE_CONTENT'
    | 'TEXT_MESSAGE_END'
    | 'REASONING_START'
    | 'REASONING_MESSAGE_START'
    | 'REASONING_MESSAGE_CONTENT'
    | 'REASONING_MESSAGE_END'
    | 'REASONING_END'
    | 'TOOL_CALL_START'
    | 'TOOL_CALL_ARGS'
    | 'TOOL_CALL_END'
    | 'TOOL_CALL_RESULT'
    | 'STATE_SNAPSHOT'
    | 'STATE_DELTA';
  readonly [field: string]: unknown;
}

/** Options of {@link toAgUiEvents}. */
export interface ToAgUiOptions {
  /** The AG-UI thread id of the runs (default: each run's id). */
  readonly threadId?: string | undefined;
  /**
   * The run state's values when a run starts (`agent.state.extra`; a function is read at each `agent_start`): sent as
   * a `STATE_SNAPSHOT` right after `RUN_STARTED`, the base the run's `STATE_DELTA`s apply to. Without it no snapshot is
   * sent (the deltas still are, against the client's own copy).
   */
  readonly state?: Readonly<Record<string, unknown>> | (() => Readonly<Record<string, unknown>>) | undefined;
}

/** A JSON Pointer (RFC 6901) to a top-level key. */
const pointer = (key: string) => `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;

/**
 * Agent events as AG-UI protocol events, for front ends built on AG-UI (CopilotKit and others). A run is
 * `RUN_STARTED` … `RUN_FINISHED` (outcome `success`; `interrupt` with one interrupt per approval request when the run
 * is suspended; `cancelled` when it was cancelled) or `RUN_ERROR` when it failed; each turn a step (`turn N`); text
 * blocks stream as text messages and thinking blocks as reasoning messages (message ids `runId.turn.block`); tool calls
 * as `TOOL_CALL_START` / `_ARGS` / `_END` (arguments delivered whole by a provider are sent as one `TOOL_CALL_ARGS`)
 * and their results as `TOOL_CALL_RESULT` (the result's text). Errors and completion pass through.
 *
 * Client tools (`clientTool`): a run suspended only on client tool calls finishes with outcome `success` and
 * `pendingToolCallIds` (AG-UI's frontend tool calls, answered by `tool` messages in the next input); one that also
 * waits for approvals finishes with `interrupt`, whose interrupts are the approvals and the client tool calls (reason
 * `client_tool`). Run state: with `state`, a `STATE_SNAPSHOT` of it follows `RUN_STARTED`; every `state_patched` is
 * a `STATE_DELTA` of the values (RFC 6902: `add` for each key set, `remove` for each key deleted that was there).
 *
 * ```text
 * agent_start  state_patched{set:{a:1}}                agent_end
 * RUN_STARTED STATE_SNAPSHOT  STATE_DELTA[add /a 1]    RUN_FINISHED
 * ```
 *
 * @example
 * agent.prompt$(text).pipe(toAgUiEvents({ threadId })).subscribe((event) => send(JSON.stringify(event)));
 */
export function toAgUiEvents(options: ToAgUiOptions = {}): OperatorFunction<AgentEvent, AgUiEvent> {
  return (source) =>
    new Observable<AgUiEvent>((subscriber) => {
      const runs = new RunTracker();
      const pending = new Map<
        string,
        { id: string; reason: string; toolCallId: string; client: boolean; expiresAt?: string }[]
      >();
      const emit = (event: AgUiEvent) => subscriber.next(event);
      const thread = (runId: string) => options.threadId ?? runId;
      // The values the client holds, so that a delete of a key it never had is no `remove` (which would fail there).
      let values = new Set<string>();
      const steps = new Map<string, string>();
      return source.subscribe({
        next: (event) => {
          runs.observe(event);
          switch (event.type) {
            case 'agent_start': {
              emit({ type: 'RUN_STARTED', threadId: thread(event.runId), runId: event.runId });
              if (options.state === undefined) return;
              const snapshot = typeof options.state === 'function' ? options.state() : options.state;
              values = new Set(Object.keys(snapshot));
              return emit({ type: 'STATE_SNAPSHOT', snapshot });
            }
            case 'state_patched': {
              const ops: { op: 'add' | 'remove'; path: string; value?: unknown }[] = [];
              for (const [key, value] of Object.entries(event.patch.set ?? {})) {
                values.add(key);
                ops.push({ op: 'add', path: pointer(key), value });
              }
              for (const key of event.patch.delete ?? []) {
                if (values.delete(key)) ops.push({ op: 'remove', path: pointer(key) });
              }
              if (ops.length === 0) return;
              return emit({ type: 'STATE_DELTA', delta: ops });
            }
            case 'turn_start':
              steps.set(event.runId, `turn ${event.turnIndex}`);
              return emit({ type: 'STEP_STARTED', stepName: `turn ${event.turnIndex}` });
            case 'turn_end':
              steps.delete(event.runId);
              return emit({ type: 'STEP_FINISHED', stepName: `turn ${event.turnIndex}` });
            case 'message_update': {
              const stream = event.streamEvent;
              switch (stream.type) {
                case 'text_start':
                  return emit({
                    type: 'TEXT_MESSAGE_START',
                    messageId: runs.blockId(event.runId, stream.contentIndex),
                    role: 'assistant',
                  });
                case 'text_delta':
                  if (stream.delta === '') return;
                  return emit({
                    type: 'TEXT_MESSAGE_CONTENT',
                    messageId: runs.blockId(event.runId, stream.contentIndex),
                    delta: stream.delta,
                  });
                case 'text_end':
                  return emit({ type: 'TEXT_MESSAGE_END', messageId: runs.blockId(event.runId, stream.contentIndex) });
                case 'thinking_start': {
                  const messageId = runs.blockId(event.runId, stream.contentIndex);
                  emit({ type: 'REASONING_START', messageId });
                  return emit({ type: 'REASONING_MESSAGE_START', messageId, role: 'reasoning' });
                }
                case 'thinking_delta':
                  if (stream.delta === '') return;
                  return emit({
                    type: 'REASONING_MESSAGE_CONTENT',
                    messageId: runs.blockId(event.runId, stream.contentIndex),
                    delta: stream.delta,
                  });
                case 'thinking_end': {
                  const messageId = runs.blockId(event.runId, stream.contentIndex);
                  emit({ type: 'REASONING_MESSAGE_END', messageId });
                  return emit({ type: 'REASONING_END', messageId });
                }
                case 'toolcall_start': {
                  const call = toolCallOf(stream);
                  if (call === undefined) return;
                  return emit({
                    type: 'TOOL_CALL_START',
                    toolCallId: call.id,
                    toolCallName: call.name,
                    parentMessageId: event.runId,
                  });
                }
                case 'toolcall_delta': {
                  const call = toolCallOf(stream);
                  if (call === undefined || stream.delta === '') return;
                  runs.argsStreamed(call.id);
                  return emit({ type: 'TOOL_CALL_ARGS', toolCallId: call.id, delta: stream.delta });
                }
                case 'toolcall_end': {
                  const call = stream.toolCall;
                  if (!runs.takeArgsStreamed(call.id)) {
                    emit({
                      type: 'TOOL_CALL_ARGS',
                      toolCallId: call.id,
                      delta: call.invalidArguments ?? JSON.stringify(call.arguments),
                    });
                  }
                  return emit({ type: 'TOOL_CALL_END', toolCallId: call.id });
                }
                default:
                  return;
              }
            }
            case 'approval_requested': {
              const list = pending.get(event.runId) ?? [];
              list.push({
                id: event.requestId,
                reason: event.reason,
                toolCallId: event.toolCallId,
                client: event.clientTool === true,
                // AG-UI's convention for when an interrupt stops being answerable: an ISO 8601 date.
                ...(event.expiresAt === undefined ? {} : { expiresAt: new Date(event.expiresAt).toISOString() }),
              });
              pending.set(event.runId, list);
              return;
            }
            case 'tool_execution_end':
              return emit({
                type: 'TOOL_CALL_RESULT',
                messageId: `${event.runId}.${event.toolCallId}.result`,
                toolCallId: event.toolCallId,
                content: resultText(event.result.content),
                role: 'tool',
              });
            case 'agent_end': {
              const interrupts = pending.get(event.runId) ?? [];
              pending.delete(event.runId);
              // A turn a suspension (or a failure) left without `turn_end`: its step closes before the run does, as
              // AG-UI requires of RUN_FINISHED.
              const step = steps.get(event.runId);
              steps.delete(event.runId);
              if (step !== undefined) emit({ type: 'STEP_FINISHED', stepName: step });
              if (event.outcome === 'failed') {
                const message = lastAssistant(event.messages)?.errorMessage ?? 'The run failed';
                return emit({ type: 'RUN_ERROR', message });
              }
              const onlyClient = interrupts.length > 0 && interrupts.every((interrupt) => interrupt.client);
              const outcome =
                event.outcome === 'suspended' && onlyClient
                  ? { type: 'success', pendingToolCallIds: interrupts.map((interrupt) => interrupt.toolCallId) }
                  : event.outcome === 'suspended'
                    ? {
                        type: 'interrupt',
                        interrupts: interrupts.map(({ client: _client, ...interrupt }) => interrupt),
                      }
                    : event.outcome === 'cancelled'
                      ? { type: 'cancelled' }
                      : { type: 'success' };
              return emit({ type: 'RUN_FINISHED', threadId: thread(event.runId), runId: event.runId, outcome });
            }
            default:
              return;
          }
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    });
}
