/**
 * Checking what callers hand the agent: prompts, queued messages.
 * @module
 */
import { InvalidInputError } from '../types/errors.js';
import { userMessage, type Message } from '../types/messages.js';

const STOP_REASONS = new Set(['stop', 'length', 'toolUse', 'blocked', 'error', 'aborted']);

/** A prompt as messages: a string becomes a user message; messages are checked. */
export function toMessages(input: unknown, where: string): Message[] {
  if (typeof input === 'string') {
    if (input.length === 0) throw new InvalidInputError(`${where}: the message is empty`);
    return [userMessage(input)];
  }
  if (Array.isArray(input)) {
    if (input.length === 0) throw new InvalidInputError(`${where}: expected at least one message`);
    return input.map((message, index) => checkMessage(message, `${where}[${index}]`));
  }
  return [checkMessage(input, where)];
}

/** One message, checked: a string becomes a user message. */
export function toMessage(input: unknown, where: string): Message {
  if (typeof input === 'string') return toMessages(input, where)[0]!;
  return checkMessage(input, where);
}

/** Throws {@link InvalidInputError} naming the first thing wrong with `value` as a message. */
export function checkMessage(value: unknown, where: string): Message {
  const fail = (what: string): never => {
    throw new InvalidInputError(`${where}: ${what}`);
  };
  if (value === null || typeof value !== 'object') return fail('expected a string or a message object');
  const message = value as Record<string, unknown>;
  if (typeof message.timestamp !== 'number') fail('a message needs a numeric `timestamp`');
  switch (message.role) {
    case 'user':
      if (typeof message.content === 'string') break;
      if (!Array.isArray(message.content)) fail('a user message needs `content`: a string or an array of blocks');
      for (const block of message.content as unknown[]) checkBlock(block, ['text', 'image', 'file'], fail);
      break;
    case 'assistant':
      if (!Array.isArray(message.content)) fail('an assistant message needs a `content` array');
      for (const block of message.content as unknown[]) checkBlock(block, ['text', 'thinking', 'toolCall'], fail);
      if (!STOP_REASONS.has(message.stopReason as string)) fail('an assistant message needs a valid `stopReason`');
      if (typeof message.usage !== 'object' || message.usage === null) fail('an assistant message needs `usage`');
      if (typeof message.provider !== 'string' || typeof message.model !== 'string') {
        fail('an assistant message needs `provider` and `model`');
      }
      break;
    case 'toolResult':
      if (typeof message.toolCallId !== 'string' || typeof message.toolName !== 'string') {
        fail('a tool result needs `toolCallId` and `toolName`');
      }
      if (!Array.isArray(message.content)) fail('a tool result needs a `content` array');
      for (const block of message.content as unknown[]) checkBlock(block, ['text', 'image', 'file'], fail);
      if (typeof message.isError !== 'boolean') fail('a tool result needs a boolean `isError`');
      break;
    default:
      fail(`unknown role ${JSON.stringify(message.role)} (expected user, assistant or toolResult)`);
  }
  return value as Message;
}

function checkBlock(block: unknown, allowed: readonly string[], fail: (what: string) => never): void {
  if (block === null || typeof block !== 'object') fail('a content block must be an object');
  const { type } = block as { type?: unknown };
  if (typeof type !== 'string' || !allowed.includes(type)) {
    fail(`a block of type ${JSON.stringify(type)} is not allowed here (allowed: ${allowed.join(', ')})`);
  }
  const fields: Record<string, string[]> = {
    text: ['text'],
    thinking: ['thinking'],
    image: ['data', 'mimeType'],
    file: ['mimeType'],
    toolCall: ['id', 'name'],
  };
  for (const field of fields[type] ?? []) {
    if (typeof (block as Record<string, unknown>)[field] !== 'string')
      fail(`a ${type} block needs a string \`${field}\``);
  }
}
