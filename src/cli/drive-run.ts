/**
 * Follows one run to its end for a terminal command: every event to `onEvent`; when the run suspends for approvals,
 * each pending request is asked about (`ask`) and answered (`agent.respond$`), and the resumed run is followed the same
 * way; aborting `cancel` unsubscribes, which cancels the run the cubepi way (request aborted, tools signalled).
 * @module
 */
import { concat, concatMap, defer, type Observable } from 'rxjs';
import type { Agent, AgentEndEvent, AgentEvent, ApprovalAnswer, ApprovalRequest } from '../index.js';

/** Options of {@link driveRun}. */
export interface DriveRunOptions {
  readonly onEvent: (event: AgentEvent) => void;
  /** Asks the user about one held tool call. */
  readonly ask: (request: ApprovalRequest) => Promise<ApprovalAnswer>;
  /** Aborting it cancels the run. */
  readonly cancel: AbortSignal;
}

/** How a driven run ended. */
export type DriveResult =
  | { readonly kind: 'ended'; readonly end: AgentEndEvent | undefined }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'error'; readonly error: unknown };

/**
 * Runs `run$` (and the runs its approvals resume) to the end; never rejects. Approvals a previous process left
 * unanswered on the thread (it was stopped at the question) are asked about first, so the thread can go on.
 */
export async function driveRun(
  agent: Agent,
  run$: Observable<AgentEvent>,
  options: DriveRunOptions,
): Promise<DriveResult> {
  try {
    await agent.restore();
  } catch (error) {
    return { kind: 'error', error };
  }
  let current$ = agent.pending.length > 0 ? concat(answers$(agent, options.ask), run$) : run$;
  for (;;) {
    const result = await follow(current$, options);
    if (result.kind !== 'ended' || result.end?.outcome !== 'suspended') return result;
    current$ = answers$(agent, options.ask);
  }
}

/** Asks about every pending request in turn, then records the answers; the last one's resumed run follows. */
function answers$(agent: Agent, ask: DriveRunOptions['ask']): Observable<AgentEvent> {
  return defer(async () => {
    const answers: [ApprovalRequest, ApprovalAnswer][] = [];
    for (const request of agent.pending) answers.push([request, await ask(request)]);
    return answers;
  }).pipe(concatMap((answers) => concat(...answers.map(([r, answer]) => agent.respond$(r.requestId, answer)))));
}

function follow(run$: Observable<AgentEvent>, options: DriveRunOptions): Promise<DriveResult> {
  return new Promise<DriveResult>((resolve) => {
    let end: AgentEndEvent | undefined;
    const subscription = run$.subscribe({
      next: (event) => {
        if (event.type === 'agent_end') end = event;
        options.onEvent(event);
      },
      error: (error: unknown) => settle({ kind: 'error', error }),
      complete: () => settle({ kind: 'ended', end }),
    });
    const onCancel = () => {
      subscription.unsubscribe();
      settle({ kind: 'cancelled' });
    };
    // Removed when the run settles: one listener per run, never left behind on a long-lived signal.
    if (options.cancel.aborted) onCancel();
    else options.cancel.addEventListener('abort', onCancel, { once: true });
    function settle(result: DriveResult): void {
      options.cancel.removeEventListener('abort', onCancel);
      resolve(result);
    }
  });
}
