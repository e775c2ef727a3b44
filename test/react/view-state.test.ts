// ViewState (src/react/view-state.ts): the state runView$ and threadView$ share. Where the two views differ it is
// driven both ways: a run's approvals only grow (each request frozen as raised), a thread's are seeded at load and
// drop one when it is answered; a run starts its pipelines at once, a thread after its load, after the stored
// messages. Also: one emission per change of the pipelines, end() flushing held deltas, fail(), and close().
import { Observable, type Subscription } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { EMPTY_USAGE, type AgentEvent, type ApprovalRequest, type AssistantMessage, type Message } from 'cubepi';
import { ViewState } from '../../src/react/view-state.js';

interface TestView {
  readonly status: string;
  readonly messages: readonly Message[];
  readonly toolActivity: readonly unknown[];
  readonly pendingApprovals: readonly unknown[];
  readonly error: unknown;
}

const assistant = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason: 'stop',
  usage: EMPTY_USAGE,
  provider: 'faux',
  model: 'faux',
  timestamp: 0,
});
const stored: Message = { role: 'user', content: 'stored', timestamp: 0 };
const start: AgentEvent = { type: 'message_start', runId: 'r', message: assistant('') };
const delta = (text: string, soFar: string): AgentEvent => ({
  type: 'message_update',
  runId: 'r',
  message: assistant(soFar),
  streamEvent: { type: 'text_delta', contentIndex: 0, delta: text, partial: assistant(soFar) },
});
const request = (id: string): ApprovalRequest => ({
  requestId: id,
  toolCallId: `call-${id}`,
  toolName: 'lookup',
  args: { q: id },
  reason: 'asks first',
});
const raised = (id: string): AgentEvent => ({ type: 'approval_requested', runId: 'r', ...request(id) });

const subscriptions: Subscription[] = [];
afterEach(() => {
  for (const subscription of subscriptions.splice(0)) subscription.unsubscribe();
});

/** A ViewState behind a subscribed Observable, as the views build it; `views` is every emission. */
function open<A>(approvals: (requests: readonly ApprovalRequest[]) => readonly A[], throttleMs?: number) {
  const views: TestView[] = [];
  let state!: ViewState<'connecting' | 'running' | 'error', A, TestView>;
  const view$ = new Observable<TestView>((subscriber) => {
    state = new ViewState(subscriber, {
      status: 'connecting',
      throttleMs,
      approvals,
      render: (view) =>
        Object.freeze({
          status: view.status,
          messages: view.messages,
          toolActivity: view.toolActivity,
          pendingApprovals: view.pendingApprovals,
          error: view.error,
        }),
    });
    return () => state.close();
  });
  subscriptions.push(view$.subscribe((view) => views.push(view)));
  return { state, views };
}

describe('ViewState', () => {
  it("a run's approvals: each request held without type and runId, frozen, in the order raised; emitted on emit()", () => {
    const { state, views } = open((requests) => requests.map((r) => Object.freeze(r)));
    state.watch([]);
    const watched = views.length; // the pipelines' first values: no messages, no activity
    state.next(raised('a'));
    state.next(raised('b'));
    // Emitted by toolActivity's changes (each held call), the requests already in place.
    expect(views.slice(watched).map((v) => v.pendingApprovals.length)).toEqual([1, 2]);
    state.emit();
    const last = views.at(-1)!;
    expect(last.pendingApprovals).toEqual([request('a'), request('b')]);
    expect(Object.isFrozen(last.pendingApprovals)).toBe(true);
    expect(last.pendingApprovals.every((r) => Object.isFrozen(r))).toBe(true);
    // The request raised first keeps its identity when the second arrives (a view's list is structurally shared).
    expect(views[watched]!.pendingApprovals[0]).toBe(last.pendingApprovals[0]);
  });

  it("a thread's approvals: those found at load first, then those raised; an answered one is dropped", () => {
    const { state, views } = open((requests) => requests.map((r) => ({ id: r.requestId, bound: true })));
    state.requests.set('loaded', request('loaded'));
    state.setApprovals();
    state.watch([stored]);
    state.next(raised('a'));
    state.next(raised('b'));
    state.requests.delete('a');
    state.setApprovals();
    state.emit();
    expect(views.at(-1)!.pendingApprovals).toEqual([
      { id: 'loaded', bound: true },
      { id: 'b', bound: true },
    ]);
  });

  it('watch(seed) assembles messages after the seed, one emission per change; events before it reach no pipeline', () => {
    const { state, views } = open(() => []);
    state.next(start); // before watch: a thread's events only flow after its load, so this never happens there
    expect(views).toEqual([]);
    state.watch([stored]);
    expect(views.at(-1)!.messages).toEqual([stored]);
    const watched = views.length;
    state.next(start);
    state.next({ type: 'message_end', runId: 'r', message: assistant('hello') });
    expect(views.slice(watched).map((v) => v.messages)).toEqual([
      [stored, assistant('')],
      [stored, assistant('hello')],
    ]);
    expect(views.every((v) => v.status === 'connecting')).toBe(true);
  });

  it('end() flushes the deltas held by throttleDeltas into one last emission', () => {
    const { state, views } = open(() => [], 60_000);
    state.watch([]);
    state.next(start);
    const before = views.length;
    state.next(delta('he', 'he'));
    state.next(delta('llo', 'hello'));
    expect(views.length).toBe(before); // held for 60 s
    state.end();
    expect(views.length).toBe(before + 1);
    expect(views.at(-1)!.messages).toEqual([assistant('hello')]);
  });

  it('fail(cause) emits status error with the cause; after close nothing is emitted and events reach no pipeline', () => {
    const { state, views } = open(() => []);
    state.watch([]);
    const cause = new Error('refused');
    state.fail(cause);
    expect(views.at(-1)).toMatchObject({ status: 'error', error: cause });
    const count = views.length;
    subscriptions.splice(0)[0]!.unsubscribe();
    expect(state.closed).toBe(true);
    state.next(start);
    state.emit();
    expect(views.length).toBe(count);
    expect(state.messages).toEqual([]);
  });
});
