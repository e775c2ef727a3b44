// Agent events of a run with `output`, for the partialOutput() and elements() specs: an attempt, an assistant message
// streaming its text (or a tool call's arguments), the run's end.
import { EMPTY_USAGE, type AgentEvent, type AssistantMessage, type OutputMode } from 'cubepi';

export const message = (text = ''): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason: 'stop',
  usage: EMPTY_USAGE,
  provider: 'p',
  model: 'm',
  timestamp: 0,
});

const withCall = (name: string): AssistantMessage => ({
  ...message(),
  content: [{ type: 'toolCall', id: `call-${name}`, name, arguments: {} }],
});

export const attempt = (mode?: OutputMode, toolName?: string, runId = 'r'): AgentEvent => ({
  type: 'model_attempt',
  runId,
  turnIndex: 0,
  invocationId: 'i',
  attemptId: 'a',
  attempt: 1,
  provider: 'p',
  model: 'm',
  ...(mode === undefined ? {} : { output: toolName === undefined ? { mode } : { mode, toolName } }),
});

export const start = (runId = 'r'): AgentEvent => ({ type: 'message_start', runId, message: message() });

export const text = (delta: string, runId = 'r'): AgentEvent => ({
  type: 'message_update',
  runId,
  message: message(),
  streamEvent: { type: 'text_delta', contentIndex: 0, delta, partial: message() },
});

export const callStart = (name: string, contentIndex = 0): AgentEvent => ({
  type: 'message_update',
  runId: 'r',
  message: withCall(name),
  streamEvent: {
    type: 'toolcall_start',
    contentIndex,
    partial: {
      ...message(),
      content: [
        ...Array.from({ length: contentIndex }, () => ({ type: 'text' as const, text: '' })),
        withCall(name).content[0]!,
      ],
    },
  },
});

export const args = (delta: string, contentIndex = 0): AgentEvent => ({
  type: 'message_update',
  runId: 'r',
  message: message(),
  streamEvent: { type: 'toolcall_delta', contentIndex, delta, partial: message() },
});

export const invalid = (): AgentEvent => ({
  type: 'output_invalid',
  runId: 'r',
  turnIndex: 0,
  attempt: 1,
  issues: [{ path: ['n'], message: 'Expected number' }],
  retrying: true,
});

export const end = (output?: unknown, runId = 'r'): AgentEvent => ({
  type: 'agent_end',
  runId,
  messages: [],
  outcome: output === undefined ? 'failed' : 'completed',
  usage: EMPTY_USAGE,
  ...(output === undefined ? {} : { output }),
});
