/**
 * Existing front ends' protocols on the agent server. The AI SDK's chat protocol, so a `useChat` front end (its
 * `DefaultChatTransport`) works against cubepi unchanged: `POST /chat` starts a run (a prompt, `regenerate()`, or the
 * answers of `addToolApprovalResponse` and `addToolOutput`) and answers with the UI message stream; `GET
 * /chat/:id/stream` resumes the thread's active run (`useChat({ resume: true })`). And AG-UI's: `POST /ag-ui` takes a
 * `RunAgentInput` (a prompt, or `tool` messages and `resume` entries answering held calls; its `tools` are client
 * tools of the run) and answers with the run's AG-UI events (`@ag-ui/client`'s `HttpAgent`).
 * @module
 */
import { defer, filter, map, pipe, Subject, type MonoTypeOperatorFunction, type OperatorFunction } from 'rxjs';
import { toUIMessageStream, type UIMessageStreamPart } from '../../operators/to-ui-message-stream.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { ApprovalAnswer } from '../types/approval.js';
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
 * What a `DefaultChatTransport` body asks for: a new prompt (`submit-message` ending with a user message), the last
 * answer again (`regenerate-message`: `Chat.regenerate()`), or the answers to approvals (`submit-message` ending with
 * the assistant's message whose tool parts are `approval-responded`: `Chat.addToolApprovalResponse()` then the
 * automatic resend).
 * @internal
 */
export type ChatRequest =
  | { readonly kind: 'prompt'; readonly id: unknown; readonly prompt: string | UserMessage }
  | { readonly kind: 'regenerate'; readonly id: unknown }
  | {
      readonly kind: 'approvals';
      readonly id: unknown;
      /** The id of the client's assistant message holding the approvals: the resumed run's stream continues it. */
      readonly messageId: string | undefined;
      readonly answers: readonly ChatApprovalAnswer[];
    };

/**
 * One answer in a chat body: an approval (the cubepi request id, the UI part's `approval.id`, and the answer), or a
 * client tool's output (the part's `toolCallId`, and `{ output }`: `addToolOutput`'s output, or its `errorText` as an
 * error). The second kind is matched to the thread's pending client-tool requests by tool-call id; a part whose call is
 * no pending client tool's (a server tool's output, shown in the same message) answers nothing.
 * @internal
 */
export type ChatApprovalAnswer =
  | { readonly requestId: string; readonly answer: ApprovalAnswer }
  | { readonly toolCallId: string; readonly answer: ApprovalAnswer };

/**
 * Reads a `DefaultChatTransport` body: the chat id is the thread. With the `submit-message` trigger (or none) and a
 * last message of the user's, that message is the prompt — its text parts joined, or a user message of its text and
 * file parts when it has files (see `chatContent`). With `regenerate-message`, the messages are ignored: the server
 * retries its thread's last answer. A last message of the assistant's with tool parts in state `approval-responded`
 * is the answers of those approvals (`approved: false` is a denial with the part's `reason`, or a default one). The
 * earlier messages are the client's copy of the thread; the server's stored thread is what the agent sees. Throws
 * 400 for anything else (another trigger, an assistant message with no answered approval, a part that is not text or
 * a good file; 413 for a file over `maxFileBytes`).
 * @internal
 */
export function readChatRequest(body: unknown, maxFileBytes: number = DEFAULT_SERVER_MAX_FILE_BYTES): ChatRequest {
  const { id, messages, trigger } = (body ?? {}) as { id?: unknown; messages?: unknown; trigger?: unknown };
  if (trigger === 'regenerate-message') return { kind: 'regenerate', id };
  if (trigger !== undefined && trigger !== 'submit-message') {
    throw new HttpError(
      400,
      'invalid_input',
      `only the submit-message and regenerate-message triggers are supported, got ${JSON.stringify(trigger)}`,
    );
  }
  const last = Array.isArray(messages)
    ? (messages.at(-1) as { id?: unknown; role?: unknown; parts?: unknown } | undefined)
    : undefined;
  if (last?.role === 'assistant' && Array.isArray(last.parts)) {
    const answers = [...approvalAnswers(last.parts), ...clientToolOutputs(last.parts)];
    const messageId = typeof last.id === 'string' && last.id !== '' ? last.id : undefined;
    if (answers.length > 0) return { kind: 'approvals', id, messageId, answers };
    throw new HttpError(400, 'invalid_input', "the last message is the assistant's and answers no approval");
  }
  if (last?.role !== 'user' || !Array.isArray(last.parts)) {
    throw new HttpError(400, 'invalid_input', 'the body must be {"id", "messages"} ending with a user message');
  }
  const content = chatContent(last.parts, `messages[${(messages as unknown[]).length - 1}]`, maxFileBytes);
  if (isEmpty(content)) throw new HttpError(400, 'invalid_input', 'the last user message has no text');
  return { kind: 'prompt', id, prompt: promptOf(content) };
}

/** The approvals answered in an assistant message's parts: its tool parts in state `approval-responded`. */
function approvalAnswers(parts: readonly unknown[]): ChatApprovalAnswer[] {
  const answers: ChatApprovalAnswer[] = [];
  for (const part of parts) {
    const { state, approval } = (part ?? {}) as { state?: unknown; approval?: unknown };
    if (state !== 'approval-responded') continue;
    const { id, approved, reason } = (approval ?? {}) as { id?: unknown; approved?: unknown; reason?: unknown };
    if (typeof id !== 'string' || id === '' || typeof approved !== 'boolean') {
      throw new HttpError(400, 'invalid_input', 'an approval-responded part needs approval {"id", "approved"}');
    }
    const denial = typeof reason === 'string' && reason !== '' ? reason : 'The user denied the call';
    answers.push({ requestId: id, answer: approved ? { approve: true } : { deny: denial } });
  }
  return answers;
}

/**
 * The tool outputs of an assistant message's parts (`addToolOutput`): its tool parts in state `output-available` (the
 * output: a string as it is, anything else as its JSON) or `output-error` (`errorText`, an error result). Server tools'
 * parts are among them; the server answers only the calls it holds as client tools.
 */
function clientToolOutputs(parts: readonly unknown[]): ChatApprovalAnswer[] {
  const answers: ChatApprovalAnswer[] = [];
  for (const part of parts) {
    const { type, state, toolCallId, output, errorText, preliminary } = (part ?? {}) as Record<string, unknown>;
    if (typeof type !== 'string' || !(type.startsWith('tool-') || type === 'dynamic-tool')) continue;
    if (typeof toolCallId !== 'string' || toolCallId === '' || preliminary === true) continue;
    if (state === 'output-available') {
      const text = typeof output === 'string' ? output : (JSON.stringify(output) ?? 'null');
      answers.push({ toolCallId, answer: { output: text } });
    } else if (state === 'output-error') {
      const text = typeof errorText === 'string' && errorText !== '' ? errorText : 'The client tool failed';
      answers.push({ toolCallId, answer: { output: text, isError: true } });
    }
  }
  return answers;
}

/** A tool an AG-UI client declares for its run (`RunAgentInput.tools[]`): a client tool of that run. @internal */
export interface AgUiTool {
  readonly name: string;
  readonly description: string;
  /** The JSON Schema of its arguments (an object schema; absent: no arguments). */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/**
 * What a `RunAgentInput` asks for: a new prompt (the last message a user message), or answers to the thread's held
 * calls — the trailing `tool` messages (a client tool's output, by `toolCallId`) and the `resume` entries (an
 * interrupt's answer, by `interruptId`: the request id). Either way with the run's client tools.
 * @internal
 */
export type AgUiRequest =
  | {
      readonly kind: 'prompt';
      readonly threadId: unknown;
      readonly prompt: string | UserMessage;
      readonly tools: readonly AgUiTool[];
    }
  | {
      readonly kind: 'answers';
      readonly threadId: unknown;
      readonly answers: readonly ChatApprovalAnswer[];
      readonly tools: readonly AgUiTool[];
    };

/**
 * Reads an AG-UI `RunAgentInput` (`{ threadId, runId, messages, tools, state, context, forwardedProps, resume }`): the
 * thread, the run's client tools (`tools`), and either answers or a prompt. With `resume` entries, or when the
 * messages end with `tool` messages, it answers held calls: each trailing tool message is a client tool's output
 * (`content`, text or its text parts joined; `error` makes it an error result), each resume entry an interrupt's
 * answer (see `resumeAnswer`). Otherwise the last message is the prompt, a user message: its text (a string, or its
 * text parts joined), or a user message of its text and file parts when it has files (see `agUiContent`). The
 * client's earlier messages and its state are its own copy: the server's stored thread and run state are what run.
 * Throws 400 otherwise (413 for a file over `maxFileBytes`).
 * @internal
 */
export function readAgUiRequest(body: unknown, maxFileBytes: number = DEFAULT_SERVER_MAX_FILE_BYTES): AgUiRequest {
  const { threadId, messages, tools, resume } = (body ?? {}) as Record<string, unknown>;
  const runTools = agUiTools(tools);
  const list = Array.isArray(messages) ? (messages as unknown[]) : [];
  const answers: ChatApprovalAnswer[] = [];
  for (let i = list.length - 1; i >= 0; i--) {
    const message = (list[i] ?? {}) as Record<string, unknown>;
    if (message.role !== 'tool') break;
    answers.unshift(toolMessageAnswer(message, i));
  }
  if (resume !== undefined && resume !== null) {
    if (!Array.isArray(resume)) throw new HttpError(400, 'invalid_input', '`resume` must be a list of resume entries');
    resume.forEach((entry: unknown, index) => answers.push(resumeAnswer(entry, index)));
  }
  if (answers.length > 0) return { kind: 'answers', threadId, answers, tools: runTools };
  const last = list.at(-1) as { role?: unknown; content?: unknown } | undefined;
  if (last?.role !== 'user') {
    throw new HttpError(400, 'invalid_input', 'the body must be a RunAgentInput whose last message is a user message');
  }
  const content = agUiContent(last.content, `messages[${list.length - 1}]`, maxFileBytes);
  if (isEmpty(content)) throw new HttpError(400, 'invalid_input', 'the last user message has no text');
  return { kind: 'prompt', threadId, prompt: promptOf(content), tools: runTools };
}

/** `RunAgentInput.tools`: each `{ name, description, parameters? }` (400 otherwise). */
function agUiTools(tools: unknown): AgUiTool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new HttpError(400, 'invalid_input', '`tools` must be a list of tools');
  return tools.map((value: unknown, index) => {
    const { name, description, parameters } = (value ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string' || (description !== undefined && typeof description !== 'string')) {
      throw new HttpError(400, 'invalid_input', `tools[${index}] needs a string name and description`);
    }
    const schema =
      parameters === undefined || parameters === null
        ? { type: 'object', properties: {} }
        : (parameters as Record<string, unknown>);
    return { name, description: description ?? '', parameters: schema };
  });
}

/** A `tool` message as the output of its call (`content`; `error` marks a failure). */
function toolMessageAnswer(message: Record<string, unknown>, index: number): ChatApprovalAnswer {
  const { toolCallId, content, error } = message;
  if (typeof toolCallId !== 'string' || toolCallId === '') {
    throw new HttpError(400, 'invalid_input', `messages[${index}]: a tool message needs a toolCallId`);
  }
  let text: string;
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    text = content
      .map((part: unknown) => {
        const { type, text: partText } = (part ?? {}) as Record<string, unknown>;
        return type === 'text' && typeof partText === 'string' ? partText : '';
      })
      .join('');
  } else throw new HttpError(400, 'invalid_input', `messages[${index}]: a tool message needs content`);
  if (typeof error === 'string' && error !== '') {
    return { toolCallId, answer: { output: text === '' ? error : text, isError: true } };
  }
  return { toolCallId, answer: { output: text } };
}

/**
 * A resume entry as the answer of the request it names (`interruptId`, the request id). `cancelled` is a denial. A
 * `resolved` entry's `payload` is a cubepi answer (`{ approve: true }`, `{ deny: reason }`, `{ edit: args }`,
 * `{ output }`), or `{ approved: boolean, reason? }`; anything else is a client tool's output (a string as it is, other
 * JSON as its text), which a request that is no client tool's refuses (400).
 */
function resumeAnswer(entry: unknown, index: number): ChatApprovalAnswer {
  const { interruptId, status, payload } = (entry ?? {}) as Record<string, unknown>;
  if (typeof interruptId !== 'string' || interruptId === '' || (status !== 'resolved' && status !== 'cancelled')) {
    throw new HttpError(400, 'invalid_input', `resume[${index}] needs an interruptId and a status resolved|cancelled`);
  }
  if (status === 'cancelled') return { requestId: interruptId, answer: { deny: 'The user cancelled the request' } };
  const value = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
  if (['approve', 'deny', 'edit', 'output'].some((key) => key in value)) {
    return { requestId: interruptId, answer: value as ApprovalAnswer };
  }
  if (typeof value.approved === 'boolean') {
    const reason = typeof value.reason === 'string' && value.reason !== '' ? value.reason : 'The user denied the call';
    return { requestId: interruptId, answer: value.approved ? { approve: true } : { deny: reason } };
  }
  const output = typeof payload === 'string' ? payload : (JSON.stringify(payload) ?? 'null');
  return { requestId: interruptId, answer: { output } };
}

/**
 * The run's UI message stream as an SSE response (header `x-vercel-ai-ui-message-stream: v1`, `data: [DONE]` at the
 * end), read from the run's log from its first frame. `cancelOnLeave`: the client that started the run leaving cancels
 * it (`useChat`'s `stop()` aborts the request); a resumed stream's client leaving does not. `continues`: the id of the
 * client's assistant message a run resumed from approvals goes on (see {@link continuingMessage}). `clientCalls`: the
 * client tool calls the resumed run answered with the client's own outputs — their parts are left out of the stream,
 * since the client has them already (its `onToolCall` would otherwise run the tool again on their input part).
 * @internal
 */
export function uiMessageStreamResponse(
  registry: RunRegistry,
  runId: string,
  cancelOnLeave: boolean,
  heartbeatMs: number,
  continues?: string,
  clientCalls: ReadonlySet<string> = new Set(),
): Response {
  const parts =
    continues === undefined
      ? toUIMessageStream()
      : pipe(toUIMessageStream(), continuingMessage(continues), withoutParts(clientCalls));
  return protocolStreamResponse(registry, runId, { cancelOnLeave, heartbeatMs }, parts, {
    headers: { 'x-vercel-ai-ui-message-stream': 'v1' },
    trailer: 'data: [DONE]\n\n',
  });
}

/**
 * The UI message stream of a run resumed from approvals as the rest of the client's assistant message `messageId`
 * (the one whose tool parts hold the approvals), as the AI SDK's own server continues it: `start` names that message
 * (with the run's id the Chat would begin a second assistant message), and the resumed batch's turn — the run's first
 * step, which only runs the held calls — is not a step of its own, so the calls' outputs land in the tool parts of the
 * step that asked for them (the Chat looks a tool part up in the current step only).
 *
 * ```text
 * start(run) start-step  tool-input-available tool-output-available  finish-step  start-step text… finish-step finish
 * start(id)              tool-input-available tool-output-available               start-step text… finish-step finish
 * ```
 * @internal
 */
export function continuingMessage(messageId: string): MonoTypeOperatorFunction<UIMessageStreamPart> {
  return (source) =>
    defer(() => {
      let firstStep: 'before' | 'in' | 'after' = 'before';
      return source.pipe(
        filter((part) => {
          if (part.type === 'start-step' && firstStep === 'before') return ((firstStep = 'in'), false);
          if (part.type === 'finish-step' && firstStep === 'in') return ((firstStep = 'after'), false);
          return true;
        }),
        map((part) => (part.type === 'start' ? { ...part, messageId } : part)),
      );
    });
}

/** Leaves out the tool parts of the calls `toolCallIds`. */
function withoutParts(toolCallIds: ReadonlySet<string>): MonoTypeOperatorFunction<UIMessageStreamPart> {
  if (toolCallIds.size === 0) return (source) => source;
  return filter((part) => {
    const id = (part as { toolCallId?: unknown }).toolCallId;
    return typeof id !== 'string' || !toolCallIds.has(id);
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
