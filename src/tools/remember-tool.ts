/**
 * The `remember` tool: the model stores a fact in a `Store`, under a namespace the application chooses.
 * @module
 */
import { z } from 'zod';
import { factKey, type Namespace, type Store } from '../types/store.js';
import type { AgentTool, ToolExecuteContext } from '../types/tool.js';
import { defineTool } from './define-tool.js';

/** Options of {@link rememberTool}. */
export interface RememberToolOptions {
  readonly store: Store;
  /** The namespace of the call (e.g. from `ctx.principal`); `undefined` refuses the call (an error result). */
  readonly namespace: (ctx: ToolExecuteContext) => Namespace | undefined;
  /** The tool's name (default `remember`). */
  readonly name?: string | undefined;
  /** TTL of the stored facts in ms (default: forever). */
  readonly ttl?: number | undefined;
}

const parameters = z.object({
  fact: z.string().min(1).max(2000).describe('The fact to remember, as one sentence about the user.'),
  key: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('A short stable name for the fact (e.g. "diet"); a later fact with the same key replaces it.'),
});

/**
 * A tool the model calls to remember a fact across threads: stores `{ text: fact }` under `key` (default: a hash of the
 * fact) in `namespace(ctx)`. Answers `Remembered.`; a store error (or no namespace) is an error result, never a run
 * failure. Pairs with the `memory` middleware, which recalls what it stored.
 *
 * @example
 * tools: [rememberTool({ store, namespace: (ctx) => ctx.principal && ['users', ctx.principal.id, 'facts'] })]
 */
export function rememberTool(options: RememberToolOptions): AgentTool<typeof parameters> {
  return defineTool({
    name: options.name ?? 'remember',
    description:
      'Remember a durable fact about the user (a preference, a personal detail, a decision) for later conversations.',
    parameters,
    async execute(_id, { fact, key }, ctx) {
      const namespace = options.namespace(ctx);
      if (namespace === undefined) throw new Error('no memory namespace for this run');
      await options.store.put(
        namespace,
        key ?? factKey(fact),
        { text: fact.trim() },
        {
          ...(options.ttl === undefined ? {} : { ttl: options.ttl }),
        },
      );
      return 'Remembered.';
    },
  });
}
