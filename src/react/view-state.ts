/**
 * `ViewState`: what {@link threadView$} and {@link runView$} keep alike — a status and an error, the messages and
 * tool activity their runs' events assemble into, the approval requests those events raise, and one frozen view
 * emitted per change until the subscription is left.
 * @module
 */
import { Subject, type Subscriber, type Subscription } from 'rxjs';
import { assembleMessages } from '../../operators/assemble-messages.js';
import { throttleDeltas } from '../../operators/throttle-deltas.js';
import { toolActivity, type ToolActivity } from '../../operators/tool-activity.js';
import type { AgentEvent } from '../types/agent-events.js';
import type { ApprovalRequest } from '../types/approval.js';
import type { Message } from '../types/messages.js';

/** @internal The empty list every view starts with (and `CONNECTING_VIEW`, `LOADING_VIEW` hold). */
export const EMPTY_LIST: readonly never[] = Object.freeze([]);

/** @internal How a view is rendered from its {@link ViewState}. */
export interface ViewStateOptions<S extends string, A, V> {
  /** The status before anything arrived (`connecting`, `loading`). */
  readonly status: S;
  /** Deltas arriving within this many ms are merged into one re-render (`throttleDeltas`; default 16). */
  readonly throttleMs: number | undefined;
  /** The view's `pendingApprovals` from the requests held (in the order raised); called at each change of them. */
  readonly approvals: (requests: readonly ApprovalRequest[]) => readonly A[];
  /** The view the state is now: a new frozen object. */
  readonly render: (state: ViewState<S, A, V>) => V;
}

/**
 * @internal One view subscription's state. Its fields are read by `render` and written by the view; `emit()` sends
 * `render(this)` to the subscriber until `close()`.
 *
 * A run's events go in through `next`: an `approval_requested` adds its request (without `type` and `runId`) to
 * `requests` and recomputes `pendingApprovals` before the event reaches the pipelines; `watch(seed)` starts those:
 * `messages` assembled after `seed` (deltas merged within `throttleMs`) and `toolActivity`, each change emitted.
 */
export class ViewState<S extends string, A, V> {
  status: S | 'error';
  error: unknown = undefined;
  messages: readonly Message[] = EMPTY_LIST;
  toolActivity: readonly ToolActivity[] = EMPTY_LIST;
  /** The approval requests held, by id, in the order raised. After changing it, call `setApprovals()`. */
  readonly requests = new Map<string, ApprovalRequest>();
  pendingApprovals: readonly A[] = EMPTY_LIST;
  #closed = false;
  readonly #events = new Subject<AgentEvent>();
  readonly #pipelines: Subscription[] = [];
  readonly #subscriber: Subscriber<V>;
  readonly #options: ViewStateOptions<S, A, V>;

  constructor(subscriber: Subscriber<V>, options: ViewStateOptions<S, A, V>) {
    this.#subscriber = subscriber;
    this.#options = options;
    this.status = options.status;
  }

  /** Whether the subscription was left (`close()`): nothing is emitted any more. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Starts the two pipelines over the events to come: messages assembled after `seed`, and the tool activity. */
  watch(seed: readonly Message[]): void {
    this.#pipelines.push(
      this.#events.pipe(throttleDeltas(this.#options.throttleMs ?? 16), assembleMessages(seed)).subscribe((next) => {
        this.messages = next;
        this.emit();
      }),
      this.#events.pipe(toolActivity()).subscribe((next) => {
        this.toolActivity = next;
        this.emit();
      }),
    );
  }

  /** Passes a run's event to the pipelines, after holding the request of an `approval_requested`. */
  next(event: AgentEvent): void {
    if (event.type === 'approval_requested') {
      const { type: _type, runId: _runId, ...request } = event;
      this.requests.set(request.requestId, request);
      this.setApprovals();
    }
    this.#events.next(event);
  }

  /** No more events: the pipelines flush what they hold (the last throttled deltas) and stop. */
  end(): void {
    this.#events.complete();
  }

  /** Recomputes `pendingApprovals` from `requests`. */
  setApprovals(): void {
    this.pendingApprovals = Object.freeze(this.#options.approvals([...this.requests.values()]));
  }

  /** Sends the view as it is now, unless the subscription was left. */
  emit(): void {
    if (this.#closed) return;
    this.#subscriber.next(this.#options.render(this));
  }

  /** Status `error` with `cause`, emitted. */
  fail(cause: unknown): void {
    this.status = 'error';
    this.error = cause;
    this.emit();
  }

  /** The subscription's teardown: nothing is emitted after; the pipelines stop. */
  close(): void {
    this.#closed = true;
    for (const pipeline of this.#pipelines) pipeline.unsubscribe();
    this.#events.complete();
  }
}
