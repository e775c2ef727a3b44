import { Observable, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../src/types/agent-events.js';
import type { AgentToolResult } from '../src/types/tool.js';

/** A tool call a UI shows as in progress: running (with its latest progress), or waiting for a person's approval. */
export interface ToolActivity {
  readonly runId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly status: 'running' | 'awaiting_approval';
  /** The latest `tool_execution_update` of a running call. */
  readonly progress?: AgentToolResult | undefined;
  /** Why a held call needs approval, and the request to answer (`agent.respond(requestId, …)`). */
  readonly approval?: { readonly requestId: string; readonly reason: string; readonly payload?: unknown } | undefined;
}

/**
 * The tool calls in flight, from agent events: a call appears at `tool_execution_start` (or `approval_requested`,
 * status `awaiting_approval`), carries its latest progress from `tool_execution_update`, and disappears at its
 * `tool_execution_end`. At a run's `agent_end` its running calls are gone (every call has ended by then); its held
 * calls stay until the resumed run starts them.
 *
 * Each emission is a new frozen array, in the order the calls appeared; an unchanged entry is the same object as
 * before. Emits `[]` first, then after every change. Errors and completion pass through.
 *
 * @example
 * agent.events$.pipe(toolActivity()).subscribe((calls) => renderSpinners(calls));
 */
export function toolActivity(): OperatorFunction<AgentEvent, readonly ToolActivity[]> {
  return (source) =>
    new Observable<readonly ToolActivity[]>((subscriber) => {
      let list: readonly ToolActivity[] = Object.freeze([]);
      const set = (next: ToolActivity[]) => {
        list = Object.freeze(next);
        subscriber.next(list);
      };
      const indexOf = (runId: string, toolCallId: string) =>
        list.findIndex((a) => a.toolCallId === toolCallId && (a.runId === runId || a.status === 'awaiting_approval'));
      subscriber.next(list);
      return source.subscribe({
        next: (event) => {
          switch (event.type) {
            case 'approval_requested': {
              // The call's tool_execution_start came first: its entry now waits instead of running.
              const waiting: ToolActivity = Object.freeze({
                runId: event.runId,
                toolCallId: event.toolCallId,
                toolName: event.toolName,
                args: event.args,
                status: 'awaiting_approval',
                approval: Object.freeze({
                  requestId: event.requestId,
                  reason: event.reason,
                  ...(event.payload === undefined ? {} : { payload: event.payload }),
                }),
              } satisfies ToolActivity);
              const started = list.findIndex((a) => a.runId === event.runId && a.toolCallId === event.toolCallId);
              if (started < 0) set([...list, waiting]);
              else set(list.map((a, i) => (i === started ? waiting : a)));
              return;
            }
            case 'tool_execution_start': {
              // A held call being run by the resumed run (another runId) replaces its waiting entry.
              const running: ToolActivity = Object.freeze({
                runId: event.runId,
                toolCallId: event.toolCallId,
                toolName: event.toolName,
                args: event.args,
                status: 'running',
              });
              const held = list.findIndex((a) => a.toolCallId === event.toolCallId && a.status === 'awaiting_approval');
              if (held < 0) set([...list, running]);
              else set(list.map((a, i) => (i === held ? running : a)));
              return;
            }
            case 'tool_execution_update': {
              const index = indexOf(event.runId, event.toolCallId);
              if (index < 0) return;
              set(list.map((a, i) => (i === index ? Object.freeze({ ...a, progress: event.partialResult }) : a)));
              return;
            }
            case 'tool_execution_end': {
              const index = indexOf(event.runId, event.toolCallId);
              if (index < 0) return;
              set(list.filter((_, i) => i !== index));
              return;
            }
            case 'agent_end': {
              const left = list.filter((a) => a.runId !== event.runId || a.status === 'awaiting_approval');
              if (left.length !== list.length) set(left);
              return;
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
