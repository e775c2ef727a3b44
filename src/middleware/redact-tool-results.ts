/**
 * Rewriting what tools tell the model.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { ToolResultContent } from '../types/content.js';
import type { AfterToolCallContext, AfterToolCallResult, Middleware } from './types.js';

/** Rewrites the text of one text block of a tool result. */
export type Redactor = (text: string, ctx: AfterToolCallContext) => string;

/**
 * `afterToolCall`: passes every text block of every tool result through `redact` before the model sees it. Only
 * `content` is rewritten (`details`, for the host, are left alone), so it composes with a middleware that adds
 * details. Images pass unchanged.
 *
 * @example
 * new RedactToolResults((text) => text.replace(/sk-[A-Za-z0-9]{20,}/g, '[redacted key]'));
 */
export class RedactToolResults implements Middleware {
  readonly name: string;

  constructor(
    readonly redact: Redactor,
    options: { readonly name?: string } = {},
  ) {
    if (typeof redact !== 'function')
      throw new ConfigurationError('RedactToolResults: expected a function (text, ctx) => text');
    this.name = options.name ?? 'RedactToolResults';
  }

  afterToolCall(ctx: AfterToolCallContext): AfterToolCallResult | undefined {
    let changed = false;
    const content = ctx.result.content.map((block): ToolResultContent => {
      if (block.type !== 'text') return block;
      const text = this.redact(block.text, ctx);
      if (text === block.text) return block;
      changed = true;
      return { type: 'text', text };
    });
    return changed ? { content } : undefined;
  }
}
