/**
 * Bounding the number of model calls in a run.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { Middleware, TurnEndContext } from './types.js';

/**
 * `shouldStopAfterTurn`: ends the run after its `n`th turn (model call). The last turn's tool calls are still
 * executed and answered; queued messages stay queued.
 *
 * @example
 * new Agent({ provider, model, middleware: [new MaxTurns(8)] });
 */
export class MaxTurns implements Middleware {
  readonly name: string;

  constructor(
    readonly maxTurns: number,
    options: { readonly name?: string } = {},
  ) {
    if (!Number.isInteger(maxTurns) || maxTurns < 1)
      throw new ConfigurationError('MaxTurns: the limit must be a positive integer');
    this.name = options.name ?? 'MaxTurns';
  }

  shouldStopAfterTurn(ctx: TurnEndContext): boolean {
    return ctx.turnIndex + 1 >= this.maxTurns;
  }
}
