/**
 * The composite type and its promise-returning convenience.
 * @module
 */
import { lastValueFrom, type Observable } from 'rxjs';
import type { CompositeEndEvent, CompositeEvent, CompositeInput, CompositeKind } from './composite-events.js';
import type { CompositeRunOptions } from './composite-member.js';

/**
 * Agents composed by `sequence`, `parallel`, `race` or `supervise`. `run$(input)` is a cold Observable of the
 * composite's events: `composite_start` (seq 1), every member's events as `member_event`s, then exactly one
 * `composite_end` (the answer, or why there is none); subscribing starts the members, unsubscribing cancels every
 * member still running (its provider request aborted, its tools signalled, its transcript closed `aborted`) and
 * nothing is emitted after. A composite can be run many times, one run per subscription.
 */
export interface Composite {
  readonly kind: CompositeKind;
  /** The members' names, in order (for `supervise`: the manager, then the workers). */
  readonly members: readonly string[];
  run$(input: CompositeInput, options?: CompositeRunOptions): Observable<CompositeEvent>;
}

/**
 * Runs a composite and resolves with its `composite_end` (outcome `completed`, `stopped`, `cancelled` or
 * `suspended`: read `answer`, `stop`, `pending`); rejects with the end's `CompositeMemberError` when a member failed.
 *
 * @example
 * const end = await runComposite(sequence(researcher, writer), 'Write about tides');
 * console.log(end.answer);
 */
export async function runComposite<C extends Composite>(
  composite: C,
  input: CompositeInput,
  options?: Parameters<C['run$']>[1],
): Promise<CompositeEndEvent> {
  const last = await lastValueFrom(composite.run$(input, options), {
    defaultValue: undefined,
  });
  // A composite's run always ends with `composite_end` (or errors): anything else is a composite built by hand.
  if (last?.type !== 'composite_end')
    throw new TypeError(`runComposite: the ${composite.kind} run ended without composite_end`);
  if (last.outcome === 'failed' && last.error !== undefined) throw last.error;
  return last;
}
