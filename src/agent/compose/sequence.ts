/**
 * `sequence`: agents one after another, each on the previous one's answer.
 * @module
 */
import { Observable, type Subscription } from 'rxjs';
import type { CompositeEvent, MemberResult } from './composite-events.js';
import {
  resolveMembers,
  splitOptions,
  validateBudget,
  type CompositeMember,
  type CompositeOptions,
  type CompositeRunOptions,
} from './composite-member.js';
import { CompositeRun, unranResult } from './composite-run.js';
import type { Composite } from './run-composite.js';

/** Options of one run of a sequence. */
export interface SequenceRunOptions extends CompositeRunOptions {
  /**
   * Starts at this member (default 0) with the run's input: to continue a sequence after a member suspended, answer
   * its approvals on its agent (`pending[0].agent.respond(…)`), then run the sequence again from the next member with
   * that run's answer (see docs/composition.md, "Approvals").
   */
  readonly startAt?: number | undefined;
}

/** A composite of agents run one after another (see {@link sequence}). */
export interface SequenceComposite extends Composite {
  run$(input: Parameters<Composite['run$']>[0], options?: SequenceRunOptions): Observable<CompositeEvent>;
}

/**
 * Runs the members one after another: the first on the composite's input, each next one on the text of the
 * previous one's answer (its last assistant message); the composite's answer is the last member's.
 *
 * A member that does not complete (or is not stopped by its own hooks) ends the sequence and no later member starts:
 * `failed` with a `CompositeMemberError` naming it, `suspended` with its pending approvals, `cancelled`; the shared
 * `budget` spent ends it `stopped`. Later members' results are `not_run`.
 *
 * ```text
 * a:   --a|
 * b:        --b|
 * out: s--a---b(e|)
 * ```
 *
 * Throws `ConfigurationError` for no members, a member that is not an Agent or a factory, or a bad budget.
 *
 * @example
 * const pipeline = sequence({ name: 'research', agent: researcher }, { name: 'write', agent: writer }, { budget: { usd: 1 } });
 * pipeline.run$('Tides').subscribe((event) => ui.show(event.path, event));
 */
export function sequence(...args: readonly (CompositeMember | CompositeOptions)[]): SequenceComposite {
  const { members: given, options } = splitOptions<CompositeOptions>(args);
  const members = resolveMembers('sequence', given);
  validateBudget('sequence', options?.budget);
  return {
    kind: 'sequence',
    members: members.map((member) => member.name),
    run$: (input, runOptions) =>
      new Observable<CompositeEvent>((subscriber) => {
        const startAt = runOptions?.startAt ?? 0;
        const run = new CompositeRun('sequence', members, subscriber, runOptions, options?.budget);
        const results: MemberResult[] = members.map((member, index) => unranResult(member.name, index, 'not_run'));
        let current: Subscription | undefined;
        let stopped = false;
        run.start();
        if (!Number.isInteger(startAt) || startAt < 0 || startAt >= members.length) {
          subscriber.error(new RangeError(`sequence: startAt must be a member index, got ${String(startAt)}`));
          return;
        }
        const step = (index: number, stepInput: Parameters<Composite['run$']>[0]): void => {
          // A member that ends synchronously calls back before `runMember` returns: loop instead of recursing.
          let next: { index: number; input: string } | undefined;
          let sync = true;
          const sub = run.runMember(index, stepInput, (result, end) => {
            results[index] = result;
            if (run.endUnlessAnswered(result, end, results)) return;
            if (index === members.length - 1) {
              run.end({ outcome: 'completed', answer: result.answer, results });
              return;
            }
            next = { index: index + 1, input: result.answer ?? '' };
            if (!sync && !stopped) step(next.index, next.input);
          });
          sync = false;
          current = sub;
          if (next !== undefined && !stopped) step(next.index, next.input);
        };
        step(startAt, input);
        return () => {
          stopped = true;
          current?.unsubscribe();
        };
      }),
  };
}
