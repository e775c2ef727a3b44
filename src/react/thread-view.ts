/**
 * `threadView$`: one thread of a cubepi server as the state a chat view renders, with the actions that change it.
 * The Observable under {@link useThread}; React-free.
 * @module
 */
import { Observable, type Subscription } from 'rxjs';
import type { ToolActivity } from '../../operators/tool-activity.js';
import { cancelRun, getThread, respond, runEventsUrl, startRun, type RunClientOptions } from '../client/runs.js';
import { fromAgentEvents } from '../client/from-agent-events.js';
import type { ApprovalAnswer, ApprovalRequest } from '../types/approval.js';
import type { Message } from '../types/messages.js';
import type { SequencedEvent } from '../wire/frames.js';
import { watchReconnects } from './stream-watch.js';
import { EMPTY_LIST, ViewState } from './view-state.js';

/** Options of {@link useThread} and {@link threadView$}. */
export interface ThreadOptions extends RunClientOptions {
  /** Where the server's routes live, e.g. `/api/agent` (relative to the page) or `https://app.example.com/api`. */
  readonly baseUrl: string;
  readonly threadId: string;
  /** Deltas arriving within this many ms are merged into one re-render (`throttleDeltas`; default 16: a frame). */
  readonly throttleMs?: number | undefined;
}

/**
 * - `loading`: reading the thread (`GET /threads/:id`).
 * - `idle`: no run is streaming.
 * - `running`: a run's events are streaming (one this view started, or the thread's active run it found at load).
 * - `reconnecting`: a run's stream broke and is being resumed (SSE only; no event is lost or repeated).
 * - `error`: the thread could not be read or a run failed; `error` says why. The next `send` clears it.
 */
export type ThreadStatus = 'loading' | 'idle' | 'running' | 'reconnecting' | 'error';

/** A tool call waiting for a person's answer, with the three answers bound to it. */
export interface PendingApproval extends ApprovalRequest {
  /** Runs the call as it is (`{ approve: true }`). */
  approve(): void;
  /** Refuses it; the model is told `reason`. */
  deny(reason: string): void;
  /** Runs it with `args` instead. */
  edit(args: Readonly<Record<string, unknown>>): void;
}

/** What a chat view renders of a thread, and its actions. A new frozen object at each change. */
export interface ThreadView {
  readonly status: ThreadStatus;
  /** The thread's messages, the streaming one updated in place (`assembleMessages`, structurally shared). */
  readonly messages: readonly Message[];
  /** Tool calls running or held (`toolActivity`). */
  readonly toolActivity: readonly ToolActivity[];
  /** The thread's open approval requests (those found at load and those raised since), in the order raised. */
  readonly pendingApprovals: readonly PendingApproval[];
  /** The run streaming now (once its first event arrived), or `null`. */
  readonly runId: string | null;
  /** Why `status` is `error` (an `AgentServerError`, `RemoteRunError`, `StreamBrokenError`…), else `undefined`. */
  readonly error: unknown;
  /**
   * Starts a run with `input`, owned by this view: leaving the view (unsubscribing, unmounting) cancels it. Waits for
   * the thread to be loaded. A send while a run is active is refused by the server (status `error`, 409).
   */
  send(input: string | Message | readonly Message[]): void;
  /** Cancels the run streaming now, whoever started it (`DELETE /runs/:id`); its final events still arrive. */
  stop(): void;
}

const noop = () => undefined;

/** The view before anything is known: status `loading`, no messages; its actions do nothing. */
export const LOADING_VIEW: ThreadView = Object.freeze({
  status: 'loading',
  messages: EMPTY_LIST,
  toolActivity: EMPTY_LIST,
  pendingApprovals: EMPTY_LIST,
  runId: null,
  error: undefined,
  send: noop,
  stop: noop,
});

/**
 * The thread `threadId` of the server at `baseUrl`, as a {@link ThreadView} per change. Cold: subscribing reads the
 * thread (its stored messages and pending approvals) and, when it has an active run, watches it from its start.
 *
 * Ownership decides what leaving cancels. Runs this subscription started (`send`, and the resumed runs of `approve`,
 * `deny`, `edit`) are cancelled on the server when it unsubscribes before they ended (`startRun`/`respond`); a run it
 * only watches (another tab's or another user's) is left running. `stop()` is explicit and cancels either.
 * Never errors: failures are `status: 'error'` with `error`.
 *
 * @example
 * threadView$({ baseUrl: '/api/agent', threadId: 't1' }).subscribe((view) => render(view));
 */
export function threadView$(options: ThreadOptions): Observable<ThreadView> {
  const { baseUrl, threadId } = options;
  return new Observable<ThreadView>((subscriber) => {
    const runs = new Set<Subscription>();
    let runId: string | null = null;
    let streaming = 0;
    let reconnecting = false;

    // Stored: `loading`, `idle` or `error`; the view shows `running` or `reconnecting` while a run streams.
    const currentStatus = (): ThreadStatus =>
      state.status === 'loading' || state.status === 'error'
        ? state.status
        : streaming > 0
          ? reconnecting
            ? 'reconnecting'
            : 'running'
          : 'idle';
    const bind = (request: ApprovalRequest): PendingApproval =>
      Object.freeze({
        ...request,
        approve: () => answer(request.requestId, { approve: true }),
        deny: (reason: string) => answer(request.requestId, { deny: reason }),
        edit: (args: Readonly<Record<string, unknown>>) => answer(request.requestId, { edit: args }),
      });
    const state: ViewState<ThreadStatus, PendingApproval, ThreadView> = new ViewState(subscriber, {
      status: 'loading',
      throttleMs: options.throttleMs,
      approvals: (requests) => requests.map(bind),
      render: (view) =>
        Object.freeze({
          status: currentStatus(),
          messages: view.messages,
          toolActivity: view.toolActivity,
          pendingApprovals: view.pendingApprovals,
          runId,
          error: view.error,
          send,
          stop,
        }),
    });
    const fail = (cause: unknown) => state.fail(cause);

    // Every run stream's connection attempts go through here: a second attempt at one run's events is a reconnect.
    const watchingFetch = watchReconnects(options.fetch, () => {
      if (reconnecting) return;
      reconnecting = true;
      state.emit();
    });
    const client: RunClientOptions = { ...options, fetch: watchingFetch };

    /** Streams a run's events into the view until it ends; `owned` runs are cancelled when the view is left. */
    const follow = (run$: Observable<SequencedEvent>) => {
      streaming++;
      let done = false;
      let subscription: Subscription | undefined = undefined;
      const finish = () => {
        if (done) return;
        done = true;
        streaming--;
        reconnecting = false;
        if (subscription !== undefined) runs.delete(subscription);
        if (streaming === 0) runId = null;
      };
      subscription = run$.subscribe({
        next: (event) => {
          if (event.type === 'agent_start') runId = event.runId;
          const wasReconnecting = reconnecting;
          reconnecting = false;
          state.next(event);
          if (wasReconnecting || event.type === 'agent_start' || event.type === 'approval_requested') state.emit();
        },
        error: (cause: unknown) => {
          finish();
          fail(cause);
        },
        complete: () => {
          finish();
          state.emit();
        },
      });
      if (!done) runs.add(subscription);
      state.emit();
    };

    // Deferred a microtask: an action called from the first (synchronous) emission runs once `loaded` exists.
    const whenLoaded = (then: () => void) =>
      queueMicrotask(
        () =>
          void loaded.then((ok) => {
            if (ok && !state.closed) then();
          }),
      );

    function send(input: string | Message | readonly Message[]): void {
      whenLoaded(() => {
        if (state.status === 'error') {
          state.status = 'idle';
          state.error = undefined;
        }
        follow(startRun(baseUrl, threadId, input, client));
      });
    }
    function answer(requestId: string, reply: ApprovalAnswer): void {
      whenLoaded(() => {
        if (!state.requests.delete(requestId)) return;
        state.setApprovals();
        follow(respond(baseUrl, threadId, requestId, reply, client));
      });
    }
    function stop(): void {
      const id = runId;
      if (id !== null) {
        void cancelRun(baseUrl, id, client).catch(fail);
        return;
      }
      // Not started yet (its POST in flight): leaving its stream cancels it once the server names it.
      for (const run of [...runs]) run.unsubscribe();
      runs.clear();
      streaming = 0;
      reconnecting = false;
      state.emit();
    }

    state.emit();
    const loaded: Promise<boolean> = getThread(baseUrl, threadId, client).then(
      (thread) => {
        if (state.closed) return false;
        state.status = 'idle';
        for (const request of thread.pending) state.requests.set(request.requestId, request);
        state.setApprovals();
        state.watch(thread.messages);
        // Watch the run already going (started elsewhere): from its start, after the messages stored before it.
        if (thread.activeRunId !== null) {
          runId = thread.activeRunId;
          follow(fromAgentEvents(runEventsUrl(baseUrl, thread.activeRunId, options.transport), client));
        } else state.emit();
        return true;
      },
      (cause: unknown) => {
        fail(cause);
        return false;
      },
    );

    return () => {
      state.close();
      for (const run of [...runs]) run.unsubscribe();
    };
  });
}
