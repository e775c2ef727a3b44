/**
 * The AI SDK's chat protocol on the agent server, so a `useChat` front end (its `DefaultChatTransport`) works against
 * cubepi unchanged: `POST /chat` starts a run and answers with the UI message stream; `GET /chat/:id/stream` resumes
 * the thread's active run (`useChat({ resume: true })`).
 * @module
 */
import { Subject } from 'rxjs';
import { toUIMessageStream, type UIMessageStreamPart } from '../../operators/to-ui-message-stream.js';
import type { AgentEvent } from '../types/agent-events.js';
import { frameBatches } from './frame-pump.js';
import { HttpError } from './http.js';
import type { RunRegistry } from './run-registry.js';

const encoder = new TextEncoder();

/** What `POST /chat` needs from the AI SDK's request body (`{ id, messages, trigger, messageId }`). */
export interface ChatRequest {
  readonly threadId: string;
  readonly text: string;
}

/**
 * Reads a `DefaultChatTransport` body: the chat id is the thread, the last message (a user message) its prompt — its
 * text parts joined. The earlier messages are the client's copy of the thread; the server's stored thread is what
 * the agent sees. Throws 400 for anything else (a `regenerate-message` trigger, a last message that is not the user's).
 * @internal
 */
export function readChatRequest(body: unknown): { readonly id: unknown; readonly text: string } {
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
  const text = (last.parts as { type?: unknown; text?: unknown }[])
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
  if (text === '') throw new HttpError(400, 'invalid_input', 'the last user message has no text');
  return { id, text };
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
  const log = registry.log(runId)!;
  let leave!: () => void;
  const left = new Promise<void>((resolve) => (leave = resolve));
  const batches = frameBatches(log, 0, left, heartbeatMs);
  const events = new Subject<AgentEvent>();
  let parts: UIMessageStreamPart[] = [];
  const subscription = events.pipe(toUIMessageStream()).subscribe((part) => parts.push(part));
  const take = () => {
    const text = parts.map((part) => `data: ${JSON.stringify(part)}\n\n`).join('');
    parts = [];
    return text;
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const next = await batches.next();
        if (next.done === true) {
          events.complete();
          subscription.unsubscribe();
          controller.enqueue(encoder.encode(`${take()}data: [DONE]\n\n`));
          controller.close();
          return;
        }
        if (next.value === 'heartbeat') {
          controller.enqueue(encoder.encode(':\n\n'));
          return;
        }
        for (const { frame } of next.value) if (frame.kind === 'event') events.next(frame.event);
        const text = take();
        if (text !== '') {
          controller.enqueue(encoder.encode(text));
          return;
        }
      }
    },
    cancel() {
      leave();
      void batches.return(undefined);
      subscription.unsubscribe();
      if (cancelOnLeave) registry.cancel(runId, 'the chat client left');
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      'x-vercel-ai-ui-message-stream': 'v1',
    },
  });
}
