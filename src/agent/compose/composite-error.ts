/**
 * The typed failure of a composed agent's member.
 * @module
 */
import { CubepiError } from '../../types/errors.js';
import type { CompositeKind, MemberResult } from './composite-events.js';

/**
 * A member of a composite failed: its run ended `failed` (a provider error, a failed hook that the run reported) or
 * its run's Observable errored (a `HookError`, a checkpoint failure, an `AgentBusyError`: then `cause` is that error).
 * `member` and `index` name it; `results` are every member's results (for `parallel`, all of them, siblings included).
 */
export class CompositeMemberError extends CubepiError {
  readonly code = 'composite_member_failed' as const;
  constructor(
    readonly kind: CompositeKind,
    readonly member: string,
    readonly index: number,
    readonly results: readonly MemberResult[],
    why: string,
    options?: { cause?: unknown },
  ) {
    super(`${kind}: member ${index} "${member}" failed: ${why}`, options);
  }
}
