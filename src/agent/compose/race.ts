/**
 * `race`: agents on the same input at once; the first to answer wins, the others are cancelled.
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
} from './composite-member.js';
import { CompositeRun, unranResult } from './composite-run.js';
import type { Composite } from './run-composite.js';

/**
 * Runs every member on the composite's input at once; the first whose run completes (or is stopped by its own hooks)
 * wins: in the same frame, every other member's run is cancelled by unsubscribing from it — its provider request is
 * aborted (the HTTP connection closes), its tools' signals fire, its transcript is closed `aborted` on its thread —
 * and the composite ends `completed` with the winner's answer and `winner`; the losers' results are `lost` and none
 * of their events is emitted after the winner's end.
 *
 * A member that fails, is cancelled or suspends does not win and does not stop the race. When no member wins:
 * `stopped` if the shared budget was spent, else `suspended` if one suspended (`pending`), else `failed` (the error
 * names the first failed member) or `cancelled`.
 *
 * ```text
 * a:   ----a|
 * b:   --b|
 * a^:  ^-!          (a is unsubscribed when b wins)
 * out: s-b(e|)
 * ```
 *
 * @example
 * const fastest = race({ name: 'small', agent: small }, { name: 'large', agent: large });
 */
export function race(...args: readonly (CompositeMember | CompositeOptions)[]): Composite {
  const { members: given, options } = splitOptions<CompositeOptions>(args);
  const members = resolveMembers('race', given);
  validateBudget('race', options?.budget);
  return {
    kind: 'race',
    members: members.map((member) => member.name),
    run$: (input, runOptions) =>
      new Observable<CompositeEvent>((subscriber) => {
        const run = new CompositeRun('race', members, subscriber, runOptions, options?.budget);
        const results: MemberResult[] = members.map((member, index) => unranResult(member.name, index, 'lost'));
        const ends: Parameters<CompositeRun['pendingOf']>[1][] = [];
        const running: (Subscription | undefined)[] = members.map(() => undefined);
        const done = members.map(() => false);
        let won = false;
        let settled = 0;
        run.start();
        const cancelOthers = (winner: number): void => {
          running.forEach((sub, index) => {
            if (index !== winner && !done[index]) sub?.unsubscribe();
          });
        };
        const noWinner = (): void => {
          if (run.budget.spent) return run.end({ outcome: 'stopped', results });
          const suspended = results.filter((result) => result.outcome === 'suspended');
          if (suspended.length > 0) {
            const pending = suspended.map((result) => run.pendingOf(result, ends[result.index]));
            return run.end({ outcome: 'suspended', results, pending });
          }
          const failed = results.find((result) => result.outcome === 'failed');
          if (failed !== undefined) return run.end({ outcome: 'failed', results, error: run.failure(failed, results) });
          run.end({ outcome: 'cancelled', results });
        };
        for (let index = 0; index < members.length && !won; index++) {
          const sub = run.runMember(index, input, (result, end) => {
            if (won) return;
            done[index] = true;
            results[index] = result;
            ends[index] = end;
            settled++;
            if ((result.outcome === 'completed' || result.outcome === 'stopped') && !run.budget.spent) {
              won = true;
              cancelOthers(index);
              run.end({ outcome: 'completed', answer: result.answer, winner: result.name, results });
            } else if (settled === members.length) noWinner();
          });
          running[index] = sub;
        }
        // A member that won synchronously, before later ones were subscribed: nothing else starts.
        return () => running.forEach((sub) => sub?.unsubscribe());
      }),
  };
}
