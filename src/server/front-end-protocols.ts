/**
 * Existing front ends' protocols on the agent server. The AI SDK's chat protocol, so a `useChat` front end (its
 * `DefaultChatTransport`) works against cubepi unchanged: `POST /chat` starts a run and answers with the UI message
 * stream; `GET /chat/:id/stream` resumes the thread's active run (`useChat({ resume: true })`). And AG-UI's: `POST
 * /ag-ui` takes a `RunAgentInput` and answers with the run's AG-UI events (CopilotKit's `HttpAgent`).
 * @module
 */
import { Subject, type OperatorFunction } from 'rxjs';
import { toUIMessageStream } from '../../operators/to-ui-message-stream.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { UserContent } from '../types/content.js';
import { userMessage, type UserMessage } from '../types/messages.js';
import { DEFAULT_SERVER_MAX_FILE_BYTES } from './file-input.js';
import { agUiContent, chatContent } from './front-end-content.js';
import { FrameReader, frameOf } from './frame-pump.js';
import { HEARTBEAT, HttpError, SSE_HEADERS } from './http.js';
import type { RunRegistry } from './run-registry.js';

const encoder = new TextEncoder();

/**
 * A prompt from a front end: its text alone as a string (what the server sent before files), or a user message when
 * it holds a file.
 */
function promptOf(content: string | readonly UserContent[]): string | UserMessage {
  if (typeof content === 'string') return content;
  const text = content.every((block) => block.type === 'text');
  return text ? content.map((block) => (block as { text: string }).text).join('') : userMessage(content);
}

/** Whether `content` holds nothing: no text, no file. */
function isEmpty(content: string | readonly UserContent[]): boolean {
  if (typeof content === 'string') return content === '';
  return content.every((block) => block.type === 'text' && block.text === '');
}

/**
 * Reads a `DefaultChatTransport` body: the chat id is the thread, the last message (a user message) its prompt — its
 * text parts joined, or a user message of its text and file parts when it has files (see `chatContent`). The earlier
 * messages are the client's copy of the thread; the server's stored thread is what the agent sees. Throws 400 for
 * anything else (a `regenerate-message` trigger, a last message that is not the user's, a part that is not text or a
 * good file; 413 for a file over `maxFileBytes`).
 * @internal
 */
export function readChatRequest(
  body: unknown,
  maxFileBytes: number = DEFAULT_SERVER_MAX_FILE_BYTES,
): { readonly id: unknown; readonly prompt: string | UserMessage } {
  const { id, messages, trigger } = (body ?? {}) as { id?: unknown; messages?: unknown; trigger?: unknown };
  if (trigger !== undefined && trigger !== 'submit-message') {
    throw new HttpError(
      400,
      'invalid_input',
      `only the submit-message trigger is supported, got ${JSON.stringify(trigger)}`,
    );
  }
  const last = Array.isArray(messages)
    ? (messages.at(-1) as { role?: unknown; parts?: unknown } | undefined)
    : undefined;
  if (last?.role !== 'user' || !Array.isArray(last.parts)) {
    throw new HttpError(400, 'invalid_input', 'the body must be {"id", "messages"} ending with a user message');
  }
  const content = chatContent(last.parts, `messages[${(messages as unknown[]).length - 1}]`, maxFileBytes);
  if (isEmpty(content)) throw new HttpError(400, 'invalid_input', 'the last user message has no text');
  return { id, prompt: promptOf(content) };
}

/**
 * Reads an AG-UI `RunAgentInput` (`{ threadId, runId, messages, tools, state, context, forwardedProps }`): the thread,
 * and the prompt — the last message, a user message: its text (a string, or its text parts joined), or a user message
 * of its text and file parts when it has files (see `agUiContent`). The client's earlier messages, tools and state
 * are its own copy: the server's stored thread and the agent's tools are what run. Throws 400 otherwise (413 for a
 * file over `maxFileBytes`).
 * @internal
 */
export function readAgUiRequest(
  body: unknown,
  maxFileBytes: number = DEFAULT_SERVER_MAX_FILE_BYTES,
): { readonly threadId: unknown; readonly prompt: string | UserMessage } {
  const { threadId, messages } = (body ?? {}) as { threadId?: unknown; messages?: unknown };
  const last = Array.isArray(messages)
    ? (messages.at(-1) as { role?: unknown; content?: unknown } | undefined)
    : undefined;
  if (last?.role !== 'user') {
    throw new HttpError(400, 'invalid_input', 'the body must be a RunAgentInput whose last message is a user message');
  }
  const content = agUiContent(last.content, `messages[${(messages as unknown[]).length - 1}]`, maxFileBytes);
  if (isEmpty(content)) throw new HttpError(400, 'invalid_input', 'the last user message has no text');
  return { threadId, prompt: promptOf(content) };
}

/**
 * The run's UI message stream as an SSE response (header `x-vercel-ai-ui-message-stream: v1`, `data: [DONE]` at the
 * end), read from the run's log from its first frame. `cancelOnLeave`: the client that started the run leaving cancels
 * it (`useChat`'s `stop()` aborts the request); a resumed stream's client leaving does not.
 * @internal
 */
export function uiMessageStreamResponse(
  registry: RunRegistry,
  runId: string,
  cancelOnLeave: boolean,
  heartbeatMs: number,
): Response {
  return protocolStreamResponse(registry, runId, { cancelOnLeave, heartbeatMs }, toUIMessageStream(), {
    headers: { 'x-vercel-ai-ui-message-stream': 'v1' },
    trailer: 'data: [DONE]\n\n',
  });
}

/**
 * A run's events in another protocol, as Server-Sent Events: the run's log read from its first frame through
 * `operator`, each part one `data:` line, then `trailer`. `cancelOnLeave`: the client leaving cancels the run (it
 * started it); otherwise it only stops reading.
 * @internal
 */
export function protocolStreamResponse<T>(
  registry: RunRegistry,
  runId: string,
  reading: { readonly cancelOnLeave: boolean; readonly heartbeatMs: number },
  operator: OperatorFunction<AgentEvent, T>,
  wire: { readonly headers?: Readonly<Record<string, string>>; readonly trailer?: string } = {},
): Response {
  const reader = new FrameReader(registry.log(runId)!, 0, reading.heartbeatMs);
  const events = new Subject<AgentEvent>();
  let parts: T[] = [];
  const subscription = events.pipe(operator).subscribe((part) => parts.push(part));
  const take = () => {
    const text = parts.map((part) => `data: ${JSON.stringify(part)}\n\n`).join('');
    parts = [];
    return text;
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const item = await reader.next();
        if (item === null) {
          events.complete();
          subscription.unsubscribe();
          controller.enqueue(encoder.encode(`${take()}${wire.trailer ?? ''}`));
          controller.close();
          return;
        }
        if (item === 'heartbeat') {
          controller.enqueue(HEARTBEAT);
          return;
        }
        for (const sent of item) {
          const frame = frameOf(sent);
          if (frame.kind === 'event') events.next(frame.event);
        }
        const text = take();
        if (text !== '') {
          controller.enqueue(encoder.encode(text));
          return;
        }
      }
    },
    cancel() {
      reader.stop();
      subscription.unsubscribe();
      if (reading.cancelOnLeave) registry.cancel(runId, 'the client left');
    },
  });
  return new Response(body, {
    status: 200,
    headers: { ...SSE_HEADERS, ...wire.headers },
  });
}
