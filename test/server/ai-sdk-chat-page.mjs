// The page of test/server/ai-sdk-chat-browser.test.ts (plain JS, bundled by esbuild for the browser): the `ai`
// package's own AbstractChat (as @ai-sdk/react's Chat, minus React) over its DefaultChatTransport, posting to the
// page's origin's /chat. `makeChat(id, kind)` makes a chat ('plain', 'approvals': sendAutomaticallyWhen on approval
// responses, 'client': onToolCall answers getLocation with addToolOutput and sendAutomaticallyWhen on tool calls);
// `view(id)` is what the chat shows (its status, error, messages), each distinct assistant text it showed in order,
// and the client tool calls it ran.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';

const textOf = (message) => message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');

/** A Chat whose state is a plain array; every assistant text it shows is recorded in `texts`. */
class BrowserChat extends AbstractChat {
  constructor(init) {
    const texts = [];
    const record = (message) => {
      if (message.role !== 'assistant') return;
      const text = textOf(message);
      if (text !== '' && texts.at(-1) !== text) texts.push(text);
    };
    const state = {
      status: 'ready',
      error: undefined,
      messages: [],
      pushMessage: (message) => (state.messages.push(message), record(message)),
      popMessage: () => void state.messages.pop(),
      replaceMessage: (index, message) => ((state.messages[index] = message), record(message)),
      snapshot: (thing) => structuredClone(thing),
    };
    super({ ...init, state });
    this.texts = texts;
    this.toolCalls = [];
  }
}

const chats = new Map();

window.makeChat = (id, kind) => {
  const transport = new DefaultChatTransport({ api: `${location.origin}/chat` });
  const options = { id, transport };
  if (kind === 'approvals') options.sendAutomaticallyWhen = lastAssistantMessageIsCompleteWithApprovalResponses;
  if (kind === 'client') {
    options.sendAutomaticallyWhen = lastAssistantMessageIsCompleteWithToolCalls;
    options.onToolCall = ({ toolCall }) => {
      const chat = chats.get(id);
      chat.toolCalls.push({ toolName: toolCall.toolName, input: toolCall.input });
      if (toolCall.toolName === 'getLocation') {
        void chat.addToolOutput({ tool: 'getLocation', toolCallId: toolCall.toolCallId, output: { city: 'Paris' } });
      }
    };
  }
  chats.set(id, new BrowserChat(options));
};

/** Sends a user message (text, and file parts if any) and resolves when the chat's request is done. */
window.send = (id, text, files) => chats.get(id).sendMessage(files === undefined ? { text } : { text, files });
window.regenerate = (id) => chats.get(id).regenerate();
window.respond = (id, approvalId, approved, reason) =>
  chats.get(id).addToolApprovalResponse({ id: approvalId, approved, reason });

window.view = (id) => {
  const chat = chats.get(id);
  return {
    status: chat.status,
    error: chat.error === undefined ? undefined : String(chat.error),
    messages: structuredClone(chat.messages),
    texts: [...chat.texts],
    toolCalls: [...chat.toolCalls],
  };
};

window.ready = true;
