/**
 * Keeping the context to the most recent messages.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { Message } from '../types/messages.js';
import type { Middleware } from './types.js';

/** Options of {@link SlidingWindow}. */
export interface SlidingWindowOptions {
  /** The most messages the model receives. */
  readonly maxMessages: number;
  readonly name?: string | undefined;
}

/**
 * `transformContext`: the model receives at most the `maxMessages` most recent messages. It never splits a tool call
 * from its result: the window never begins with a tool result whose call fell out (such results leave with it), so it
 * may hold a few messages less than `maxMessages`. The stored transcript is not changed.
 *
 * Some APIs want the first message to be a user message; chain a middleware after this one that prepends one (a
 * summary of what fell out, say) when that matters.
 *
 * @example
 * new Agent({ provider, model, middleware: [new SlidingWindow({ maxMessages: 40 }), new InjectSummary()] });
 */
export class SlidingWindow implements Middleware {
  readonly name: string;
  readonly maxMessages: number;

  constructor(options: SlidingWindowOptions) {
    if (!Number.isInteger(options?.maxMessages) || options.maxMessages < 1) {
      throw new ConfigurationError('SlidingWindow: maxMessages must be a positive integer');
    }
    this.maxMessages = options.maxMessages;
    this.name = options.name ?? 'SlidingWindow';
  }

  transformContext(messages: Message[]): Message[] {
    if (messages.length <= this.maxMessages) return messages;
    let start = messages.length - this.maxMessages;
    while (start < messages.length && messages[start]!.role === 'toolResult') start++;
    return messages.slice(start);
  }
}
