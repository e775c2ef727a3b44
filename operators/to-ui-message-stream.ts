import { Observable, type OperatorFunction } from 'rxjs';
import type { AgentEvent } from '../src/types/agent-events.js';
import type { AssistantMessage } from '../src/types/messages.js';
import { lastAssistant, resultText, RunTracker, toolCallOf } from './interop-ids.js';

/**
 * A part of the AI SDK's UI message stream protocol (`UIMessageChunk` of the `ai` package, v5 and v6): the subset
 * {@link toUIMessageStream} produces. Serialise each as one Server-Sent Event (`data: ${JSON.stringify(part)}`) with
 * the header `x-vercel-ai-ui-message-stream: v1`, and a `useChat` front end reads it.
 */
export type UIMessageStreamPart =
  | { readonly type: 'start'; readonly messageId: string }
  | { readonly type: 'start-step' }
  | { readonly type: 'finish-step' }
  | { readonly type: 'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end'; readonly id: string }
  | { readonly type: 'text-delta' | 'reasoning-delta'; readonly id: string; readonly delta: string }
  | { readonly type: 'tool-input-start'; readonly toolCallId: string; readonly toolName: string }
  | { readonly type: 'tool-input-delta'; readonly toolCallId: string; readonly inputTextDelta: string }
  | {
      readonly type: 'tool-input-available';
      readonly toolCallId: string;
      readonly toolName: string;
      readonly input: unknown;
    }
  | {
      readonly type: 'tool-input-error';
      readonly toolCallId: string;
      readonly toolName: string;
      readonly input: unknown;
      readonly errorText: string;
    }
  | { readonly type: 'tool-approval-request'; readonly approvalId: string; readonly toolCallId: string }
  | {
      readonly type: 'tool-output-available';
      readonly toolCallId: string;
      readonly output: unknown;
      readonly preliminary?: boolean;
    }
  | { readonly type: 'tool-output-error'; readonly toolCallId: string; readonly errorText: string }
  | { readonly type: 'tool-output-denied'; readonly toolCallId: string }
  | { readonly type: 'error'; readonly errorText: string }
  | { readonly type: 'abort'; readonly reason?: string }
  | {
      readonly type: 'finish';
      readonly finishReason: 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other';
    };

/**
 * Agent events as the AI SDK's UI message stream, so a front end built on `useChat` (or `readUIMessageStream`) works
 * against a cubepi run unchanged. One run is one UI message (`start` with `messageId` = the run id … `finish`); each
 * turn a step; text and thinking blocks stream as text and reasoning parts (ids `runId.turn.block`); tool calls as
 * tool parts: the input streamed then available (or an input error for arguments that were not JSON), a progress
 * update as a preliminary output, the result as the output (an error result as `tool-output-error`, a policy denial
 * as `tool-output-denied`), a call held for approval as `tool-approval-request` (its `approvalId` the request id: answer it on the
 * server with `agent.respond`, or through `cubepi/server`'s `POST /chat` with the Chat's `addToolApprovalResponse`). A failed model call adds an `error` part; a cancelled run ends with `abort`, any other with
 * `finish` and its finish reason (`tool-calls` for a run suspended for approval).
 *
 * Only assistant output is streamed (the user's message is the client's). Errors and completion pass through.
 *
 * @example
 * agent.prompt$(text).pipe(toUIMessageStream()).subscribe((part) => res.write(`data: ${JSON.stringify(part)}\n\n`));
 */
export function toUIMessageStream(): OperatorFunction<AgentEvent, UIMessageStreamPart> {
  return (source) =>
    new Observable<UIMessageStreamPart>((subscriber) => {
      const runs = new RunTracker();
      const inputs = new Set<string>(); // tool calls whose input this stream has shown
      const emit = (part: UIMessageStreamPart) => subscriber.next(part);
      return source.subscribe({
        next: (event) => {
          runs.observe(event);
          switch (event.type) {
            case 'agent_start':
              return emit({ type: 'start', messageId: event.runId });
            case 'turn_start':
              return emit({ type: 'start-step' });
            case 'turn_end':
              return emit({ type: 'finish-step' });
            case 'message_update': {
              const stream = event.streamEvent;
              switch (stream.type) {
                case 'text_start':
                case 'text_end':
                case 'thinking_start':
                case 'thinking_end': {
                  const kind = stream.type.startsWith('text') ? 'text' : 'reasoning';
                  const edge = stream.type.endsWith('start') ? 'start' : 'end';
                  return emit({ type: `${kind}-${edge}`, id: runs.blockId(event.runId, stream.contentIndex) });
                }
                case 'text_delta':
                case 'thinking_delta':
                  if (stream.delta === '') return;
                  return emit({
                    type: stream.type === 'text_delta' ? 'text-delta' : 'reasoning-delta',
                    id: runs.blockId(event.runId, stream.contentIndex),
                    delta: stream.delta,
                  });
                case 'toolcall_start': {
                  const call = toolCallOf(stream);
                  if (call === undefined) return;
                  return emit({ type: 'tool-input-start', toolCallId: call.id, toolName: call.name });
                }
                case 'toolcall_delta': {
                  const call = toolCallOf(stream);
                  if (call === undefined || stream.delta === '') return;
                  runs.argsStreamed(call.id);
                  return emit({ type: 'tool-input-delta', toolCallId: call.id, inputTextDelta: stream.delta });
                }
                case 'toolcall_end': {
                  const call = stream.toolCall;
                  runs.takeArgsStreamed(call.id);
                  inputs.add(call.id);
                  if (call.invalidArguments !== undefined) {
                    return emit({
                      type: 'tool-input-error',
                      toolCallId: call.id,
                      toolName: call.name,
                      input: call.invalidArguments,
                      errorText: 'The arguments are not a JSON object',
                    });
                  }
                  return emit({
                    type: 'tool-input-available',
                    toolCallId: call.id,
                    toolName: call.name,
                    input: call.arguments,
                  });
                }
                default:
                  return;
              }
            }
            case 'message_end':
              if (event.message.role === 'assistant' && event.message.stopReason === 'error') {
                emit({ type: 'error', errorText: event.message.errorMessage ?? 'The model call failed' });
              }
              return;
            case 'tool_execution_start':
              // A call this stream has not shown the input of (a held call run by the resumed run, which is a UI
              // message of its own): its input first, so its output has a tool part to land in.
              if (!inputs.has(event.toolCallId)) {
                inputs.add(event.toolCallId);
                emit({
                  type: 'tool-input-available',
                  toolCallId: event.toolCallId,
                  toolName: event.toolName,
                  input: event.args,
                });
              }
              return;
            case 'approval_requested':
              // A client tool's call is the client's to run (`onToolCall` on its input part), not to approve.
              if (event.clientTool === true) return;
              return emit({ type: 'tool-approval-request', approvalId: event.requestId, toolCallId: event.toolCallId });
            case 'tool_execution_update':
              return emit({
                type: 'tool-output-available',
                toolCallId: event.toolCallId,
                output: event.partialResult,
                preliminary: true,
              });
            case 'tool_execution_end':
              if (event.outcome === 'ok') {
                return emit({ type: 'tool-output-available', toolCallId: event.toolCallId, output: event.result });
              }
              if (event.outcome === 'denied') return emit({ type: 'tool-output-denied', toolCallId: event.toolCallId });
              return emit({
                type: 'tool-output-error',
                toolCallId: event.toolCallId,
                errorText: resultText(event.result.content),
              });
            case 'agent_end': {
              if (event.outcome === 'cancelled') {
                const last = lastAssistant(event.messages);
                return emit(
                  last?.errorMessage === undefined ? { type: 'abort' } : { type: 'abort', reason: last.errorMessage },
                );
              }
              return emit({ type: 'finish', finishReason: finishReason(event.outcome, lastAssistant(event.messages)) });
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

function finishReason(
  outcome: string,
  last: AssistantMessage | undefined,
): 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other' {
  if (outcome === 'suspended') return 'tool-calls';
  if (outcome === 'failed') return 'error';
  switch (last?.stopReason) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'toolUse':
      return 'tool-calls';
    case 'blocked':
      return 'content-filter';
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}
