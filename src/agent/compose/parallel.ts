/**
 * `parallel`: agents on the same input at once, their answers merged.
 * @module
 */
import { Observable, Subscription } from 'rxjs';
import { ConfigurationError } from '../../types/errors.js';
import type { CompositeEvent, MemberResult } from './composite-events.js';
import {
  resolveMembers,
  splitOptions,
  validateBudget,
  type CompositeMember,
  type CompositeOptions,
} from './composite-member.js';
import { CompositeRun } from './composite-run.js';
import type { Composite } from './run-composite.js';

/** One member's answer, as `merge` gets it. */
export interface MemberAnswer {
  readonly name: string;
  readonly index: number;
  readonly answer: string;
}

/** Options of {@link parallel}. */
export interface ParallelOptions extends CompositeOptions {
  /** The composite's answer from the members' answers, in the members' order (default {@link labelledAnswers}). */
  readonly merge?: ((answers: readonly MemberAnswer[]) => string) | undefined;
}

/**
 * The default merge of {@link parallel}: each answer under a `## <name>` heading, in the members' order, separated
 * by a blank line.
 *
 * @example
 * labelledAnswers([{ name: 'a', index: 0, answer: 'x' }, { name: 'b', index: 1, answer: 'y' }]); // '## a\n\nx\n\n## b\n\ny'
 */
export function labelledAnswers(answers: readonly MemberAnswer[]): string {
  return answers.map(({ name, answer }) => `## ${name}\n\n${answer}`).join('\n\n');
}

/**
 * Runs every member on the composite's input at once (all of them concurrently) and, when all have ended, answers
 * with `merge(answers)`.
 *
 * A member that fails does not cancel its siblings: every member runs to its end, and the composite's end carries
 * each member's result. Then the first rule that applies decides: the shared budget spent → `stopped` (every member
 * still running was cancelled when it was reached); a member failed → `failed`, its error naming the first failed
 * member (its `results` are all members'); a member suspended → `suspended`, `pending` listing every suspended
 * member; a member cancelled → `cancelled`; else `completed` with the merged answer. A `merge` that throws errors the
 * Observable (a bug in it).
 *
 * ```text
 * a:   ---a|
 * b:   -b|
 * out: s-b-a(e|)
 * ```
 *
 * @example
 * const panel = parallel(legal, finance, { merge: (answers) => answers.map((a) => a.answer).join('\n') });
 */
export function parallel(...args: readonly (CompositeMember | ParallelOptions)[]): Composite {
  const { members: given, options } = splitOptions<ParallelOptions>(args);
  const members = resolveMembers('parallel', given);
  validateBudget('parallel', options?.budget);
  const merge = options?.merge ?? labelledAnswers;
  if (typeof merge !== 'function') throw new ConfigurationError('parallel: `merge` must be a function');
  return {
    kind: 'parallel',
    members: members.map((member) => member.name),
    run$: (input, runOptions) =>
      new Observable<CompositeEvent>((subscriber) => {
        const run = new CompositeRun('parallel', members, subscriber, runOptions, options?.budget);
        const results: (MemberResult | undefined)[] = members.map(() => undefined);
        const ends: Parameters<CompositeRun['pendingOf']>[1][] = [];
        const subscriptions = new Subscription();
        let settled = 0;
        run.start();
        const finish = (): void => {
          const all = results as MemberResult[];
          if (run.budget.spent) return run.end({ outcome: 'stopped', results: all });
          const failed = all.find((result) => result.outcome === 'failed');
          if (failed !== undefined)
            return run.end({ outcome: 'failed', results: all, error: run.failure(failed, all) });
          const suspended = all.filter((result) => result.outcome === 'suspended');
          if (suspended.length > 0) {
            const pending = suspended.map((result) => run.pendingOf(result, ends[result.index]));
            return run.end({ outcome: 'suspended', results: all, pending });
          }
          if (all.some((result) => result.outcome === 'cancelled'))
            return run.end({ outcome: 'cancelled', results: all });
          let answer: string;
          try {
            answer = merge(all.map(({ name, index, answer: text }) => ({ name, index, answer: text ?? '' })));
          } catch (error) {
            subscriber.error(error);
            return;
          }
          run.end({ outcome: 'completed', answer, results: all });
        };
        members.forEach((_member, index) => {
          if (subscriber.closed) return;
          const sub = run.runMember(index, input, (result, end) => {
            results[index] = result;
            ends[index] = end;
            if (++settled === members.length) finish();
          });
          if (sub !== undefined) subscriptions.add(sub);
        });
        return () => subscriptions.unsubscribe();
      }),
  };
}
