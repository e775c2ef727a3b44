/**
 * The limit check of the servers of `cubepi/server`: before a run starts, the principal's limits are asked of the
 * store (one atomic step); over a limit, the request is refused with 429 and `Retry-After`; admitted, the run carries
 * its budget (`RunOptions.limits`). See `docs/limits.md`.
 * @module
 */
import { ConfigurationError } from '../types/errors.js';
import type { Principal } from '../types/principal.js';
import type { AccessAction, AccessDenied } from './access.js';
import {
  limitsFor,
  refusalMessage,
  runBudget,
  type LimitRefusal,
  type LimitsPolicy,
  type LimitStore,
  type RunBudget,
} from '../types/limits.js';
import { HttpError } from './http.js';

/** The `limits` option of `createAgentServer` and `createQueueServer`. */
export interface ServerLimitsOptions<P extends Principal = Principal> {
  /** The limits of every principal, or a function giving each its own (`undefined`: no limit for that one). */
  readonly policy: LimitsPolicy<P>;
  /**
   * Where the counters live. `createAgentServer`: a `MemoryLimitStore` by default. `createQueueServer`: required, and
   * one every API node and worker shares (`createPostgresLimitStore` of `cubepi/worker`).
   */
  readonly store?: LimitStore | undefined;
  /** Failures of the store while a run charges its spend (the run goes on); default `console.warn`. */
  readonly onError?: ((error: unknown) => void) | undefined;
}

/** A request refused by a limit: 429, `Retry-After`, and `error.limit`/`error.retryAfterMs` in the body. @internal */
export class LimitHttpError extends HttpError {
  constructor(readonly refusal: LimitRefusal) {
    super(429, refusal.code, refusalMessage(refusal));
  }
}

/** @internal */
export interface Limiter {
  /**
   * Admits a run of `principal` under `runId` (any id unique to this admission): its budget, or `undefined` when the
   * principal has no limits. Rejects with {@link LimitHttpError} over a limit (nothing counted), or with the store's
   * error. Call `release()` on the budget when the run ended or did not start.
   */
  admit(principal: Principal, runId: string, action: AccessAction, threadId: string): Promise<RunBudget | undefined>;
}

/** The limiter of `options`, or `undefined` without it; `owner` names the server in `ConfigurationError`s. @internal */
export function createLimiter(
  owner: string,
  options: ServerLimitsOptions | undefined,
  defaultStore: (() => LimitStore) | undefined,
  deny: (denied: AccessDenied) => void,
): Limiter | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || options.policy === undefined) {
    throw new ConfigurationError(`${owner}: \`limits\` must be { policy, store? }`);
  }
  const store = options.store ?? defaultStore?.();
  if (store === undefined) {
    throw new ConfigurationError(
      `${owner}: \`limits.store\` is required (a store every API node and worker shares: createPostgresLimitStore)`,
    );
  }
  for (const method of ['admit', 'charge', 'release'] as const) {
    if (typeof store[method] !== 'function')
      throw new ConfigurationError(`${owner}: \`limits.store\` has no ${method}()`);
  }
  const onError = options.onError ?? ((error: unknown) => console.warn('cubepi limits:', error));
  return {
    async admit(principal, runId, action, threadId) {
      const limits = limitsFor(options.policy, principal);
      if (limits === undefined) return undefined;
      const admission = await store.admit(principal.id, runId, limits);
      if (!admission.admitted) {
        // Audited like every denial (counted in `metrics().limited`, given to `onAccessDenied`); no content.
        deny({ principal, action, resource: { type: 'thread', threadId, owner: undefined }, status: 429 });
        throw new LimitHttpError(admission.refusal);
      }
      return runBudget(store, principal.id, runId, limits, onError);
    },
  };
}
