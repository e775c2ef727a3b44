/**
 * `runView$`: one run of a cubepi server, watched by its id, as the state a view renders. The Observable under
 * {@link useRun}; React-free.
 * @module
 */
import { Observable } from 'rxjs';
import type { ToolActivity } from '../../operators/tool-activity.js';
import { cancelRun, runEventsUrl, type RunClientOptions } from '../client/runs.js';
import { fromAgentEvents } from '../client/from-agent-events.js';
import type { RunOutcome } from '../types/agent-events.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { Message } from '../types/messages.js';
import { watchReconnects } from './stream-watch.js';
import { EMPTY_LIST, ViewState } from './view-state.js';

/** Options of {@link useRun} and {@link runView$}. */
export interface RunViewOptions extends RunClientOptions {
  /** Where the server's routes live, e.g. `/api/agent` (relative to the page) or `https://app.example.com/api`. */
  readonly baseUrl: string;
  /** The run to watch (`startRun`'s `agent_start`, `GET /threads/:id`'s `activeRunId`, a `POST …/runs` answer). */
  readonly runId: string;
  /**
   * The run's thread, when known: sent with the stream request so that a server restarted mid-run ends it with
   * `RunLostError` (status `error`) rather than 404.
   */
  readonly threadId?: string | undefined;
  /** Deltas arriving within this many ms are merged into one re-render (`throttleDeltas`; default 16: a frame). */
  readonly throttleMs?: number | undefined;
}

/**
 * - `connecting`: the run's stream is opening; no event has arrived yet.
 * - `running`: its events are streaming (a run that already ended is replayed from its start, then `done`).
 * - `reconnecting`: the stream broke and is being resumed after its last seq (SSE only; no event is lost or repeated).
 * - `done`: the run ended on the server (`outcome` says how: `completed`, `cancelled`, `suspended`…).
 * - `error`: the run failed on the server (`RemoteRunError`), was lost with it (`RunLostError`), or its stream was
 *   refused or broke for good (`AgentServerError`, `StreamBrokenError`); `error` says which.
 *
 * `running` and `reconnecting` are {@link ThreadStatus}'s words for the same states; `done` is where a thread would be
 * `idle` again.
 */
export type RunStatus = 'connecting' | 'running' | 'reconnecting' | 'done' | 'error';

/** What a view renders of one run. A new frozen object at each change. */
export interface RunView {
  readonly status: RunStatus;
  /** The run's own messages (its user message first when it started with a prompt), the streaming one in place. */
  readonly messages: readonly Message[];
  /** Its tool calls running or held (`toolActivity`). */
  readonly toolActivity: readonly ToolActivity[];
  /**
   * The approval requests the run raised (a run that raises them ends `suspended`). Answer them with `useThread`'s
   * `pendingApprovals` or `respond` from `cubepi/client`: the answer resumes the thread in a new run.
   */
  readonly pendingApprovals: readonly ApprovalRequest[];
  /** How the run ended (its `agent_end`), once `done`; else `undefined`. */
  readonly outcome: RunOutcome | undefined;
  /** Why `status` is `error`, else `undefined`. */
  readonly error: unknown;
  /** Cancels the run on the server (`DELETE /runs/:id`); its final events still arrive, then `done` (`cancelled`). */
  stop(): void;
}

const noop = () => undefined;

/** The view before the run's stream is open: status `connecting`, nothing in it; `stop` does nothing. */
export const CONNECTING_VIEW: RunView = Object.freeze({
  status: 'connecting',
  messages: EMPTY_LIST,
  toolActivity: EMPTY_LIST,
  pendingApprovals: EMPTY_LIST,
  outcome: undefined,
  error: undefined,
  stop: noop,
});

/**
 * The run `runId` of the server at `baseUrl`, as a {@link RunView} per change: its events from its start
 * (`fromAgentEvents`, resuming after the last seq when the stream breaks) through `throttleDeltas`,
 * `assembleMessages` and `toolActivity` — the streaming part of {@link threadView$}, for one run.
 *
 * Cold: subscribing opens the stream. **Watching only**: unsubscribing closes the stream and leaves the run going
 * (this view did not start it); `stop()` is the explicit cancel. Never errors: failures are `status: 'error'`.
 *
 * @example
 * runView$({ baseUrl: '/api/agent', runId }).subscribe((view) => render(view));
 */
export function runView$(options: RunViewOptions): Observable<RunView> {
  const { baseUrl, runId } = options;
  return new Observable<RunView>((subscriber) => {
    let outcome: RunOutcome | undefined;
    const state: ViewState<RunStatus, ApprovalRequest, RunView> = new ViewState(subscriber, {
      status: 'connecting',
      throttleMs: options.throttleMs,
      approvals: (requests) => requests.map((request) => Object.freeze(request)),
      render: (view) =>
        Object.freeze({
          status: view.status,
          messages: view.messages,
          toolActivity: view.toolActivity,
          pendingApprovals: view.pendingApprovals,
          outcome,
          error: view.error,
          stop,
        }),
    });
    const client: RunClientOptions = {
      ...options,
      fetch: watchReconnects(options.fetch, () => {
        if (state.status !== 'running') return;
        state.status = 'reconnecting';
        state.emit();
      }),
    };
    function stop(): void {
      void cancelRun(baseUrl, runId, client).catch((cause: unknown) => state.fail(cause));
    }

    state.watch([]);
    state.emit();
    const stream = fromAgentEvents(runEventsUrl(baseUrl, runId, options.transport, options.threadId), client).subscribe(
      {
        next: (event) => {
          const changed = state.status !== 'running';
          state.status = 'running';
          if (event.type === 'agent_end') outcome = event.outcome;
          state.next(event);
          if (changed || event.type === 'approval_requested') state.emit();
        },
        error: (cause: unknown) => {
          state.end();
          state.fail(cause);
        },
        complete: () => {
          state.end();
          state.status = 'done';
          state.emit();
        },
      },
    );

    return () => {
      state.close();
      stream.unsubscribe();
    };
  });
}
