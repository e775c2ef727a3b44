/**
 * Ending a run when the model says a sentinel.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import { textOf } from '../types/messages.js';
import type { Middleware, TurnEndContext } from './types.js';

/**
 * `shouldStopAfterTurn`: ends the run after a turn whose assistant text contains `pattern` (a string) or matches it
 * (a RegExp) — the "FINAL ANSWER" sentinel.
 *
 * @example
 * new Agent({ provider, model, middleware: [new StopOnText('FINAL ANSWER')] });
 */
export class StopOnText implements Middleware {
  readonly name: string;

  constructor(
    readonly pattern: string | RegExp,
    options: { readonly name?: string } = {},
  ) {
    if (!(typeof pattern === 'string' && pattern !== '') && !(pattern instanceof RegExp)) {
      throw new ConfigurationError('StopOnText: the pattern must be a non-empty string or a RegExp');
    }
    this.name = options.name ?? 'StopOnText';
  }

  shouldStopAfterTurn(ctx: TurnEndContext): boolean {
    const text = textOf(ctx.message);
    if (typeof this.pattern === 'string') return text.includes(this.pattern);
    this.pattern.lastIndex = 0; // a /g or /y RegExp keeps state between test() calls
    return this.pattern.test(text);
  }
}
