// toAgUiEvents, the parts AG-UI 1.0 adds: the run state (STATE_SNAPSHOT after RUN_STARTED, a STATE_DELTA per
// state_patched), a suspended turn's step closed before RUN_FINISHED, and client tool calls as the success outcome's
// pendingToolCallIds (approvals as interrupts) — in virtual time.
import { describe, it } from 'vitest';
import { EMPTY_USAGE, type AgentEvent, type ApprovalRequest } from 'cubepi';
import { toAgUiEvents } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

const start: AgentEvent = { type: 'agent_start', runId: 'r' };
const patched = (set: Record<string, unknown> | undefined, del?: string[]): AgentEvent => ({
  type: 'state_patched',
  runId: 'r',
  eventId: 'e',
  producer: 'p',
  baseVersion: 0,
  version: 1,
  patch: { ...(set === undefined ? {} : { set }), ...(del === undefined ? {} : { delete: del }) },
});
const request = (id: string, clientTool: boolean): ApprovalRequest => ({
  requestId: `r:${id}`,
  toolCallId: id,
  toolName: clientTool ? 'pick' : 'send',
  args: {},
  reason: clientTool ? 'client_tool' : 'ask',
  ...(clientTool ? { clientTool: true as const } : {}),
});
const asked = (id: string, clientTool: boolean): AgentEvent => ({
  type: 'approval_requested',
  runId: 'r',
  ...request(id, clientTool),
});
const suspended = (pending: ApprovalRequest[]): AgentEvent => ({
  type: 'agent_end',
  runId: 'r',
  messages: [],
  outcome: 'suspended',
  usage: EMPTY_USAGE,
  pending,
});
const completed: AgentEvent = { type: 'agent_end', runId: 'r', messages: [], outcome: 'completed', usage: EMPTY_USAGE };
const turnStart: AgentEvent = { type: 'turn_start', runId: 'r', turnIndex: 0 };

const RUN_STARTED = { type: 'RUN_STARTED', threadId: 't', runId: 'r' };
const finished = (outcome: unknown) => ({ type: 'RUN_FINISHED', threadId: 't', runId: 'r', outcome });

describe('toAgUiEvents: run state', () => {
  it('a snapshot of the starting values after RUN_STARTED; each patch a delta (add, remove of a key it had)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a----b-c-d-e|', {
        a: start,
        b: patched({ count: 1, 'x/y~z': [1] }),
        c: patched(undefined, ['count', 'never-there']),
        d: patched(undefined, ['never-there']), // nothing to remove: no delta at all
        e: completed,
      });
      expectObservable(source.pipe(toAgUiEvents({ threadId: 't', state: { kept: true } }))).toBe('-(AS)-B-C---F|', {
        A: RUN_STARTED,
        S: { type: 'STATE_SNAPSHOT', snapshot: { kept: true } },
        B: {
          type: 'STATE_DELTA',
          delta: [
            { op: 'add', path: '/count', value: 1 },
            { op: 'add', path: '/x~1y~0z', value: [1] },
          ],
        },
        C: { type: 'STATE_DELTA', delta: [{ op: 'remove', path: '/count' }] },
        F: finished({ type: 'success' }),
      });
    });
  });

  it('reads a state function at each agent_start; without `state`, no snapshot (deltas still)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      let values: Record<string, unknown> = { n: 1 };
      const source = cold<AgentEvent>('-a----b|', { a: start, b: patched({ n: 2 }) });
      const withState = source.pipe(toAgUiEvents({ threadId: 't', state: () => values }));
      values = { n: 5 };
      expectObservable(withState).toBe('-(AS)-B|', {
        A: RUN_STARTED,
        S: { type: 'STATE_SNAPSHOT', snapshot: { n: 5 } },
        B: { type: 'STATE_DELTA', delta: [{ op: 'add', path: '/n', value: 2 }] },
      });
      expectObservable(source.pipe(toAgUiEvents({ threadId: 't' }))).toBe('-A----B|', {
        A: RUN_STARTED,
        B: { type: 'STATE_DELTA', delta: [{ op: 'add', path: '/n', value: 2 }] },
      });
    });
  });
});

describe('toAgUiEvents: suspended runs', () => {
  it('only client tool calls pending: the open step closes, then success with pendingToolCallIds', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a-t-c-(e|)', {
        a: start,
        t: turnStart,
        c: asked('p1', true),
        e: suspended([request('p1', true)]),
      });
      expectObservable(source.pipe(toAgUiEvents({ threadId: 't' }))).toBe('-A-T---(EF|)', {
        A: RUN_STARTED,
        T: { type: 'STEP_STARTED', stepName: 'turn 0' },
        E: { type: 'STEP_FINISHED', stepName: 'turn 0' },
        F: finished({ type: 'success', pendingToolCallIds: ['p1'] }),
      });
    });
  });

  it('an approval pending too: an interrupt per request (its expiry as ISO 8601), the client call among them', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a-b-c-e|', {
        a: start,
        b: { ...asked('s1', false), expiresAt: Date.UTC(2030, 0, 1) } as AgentEvent,
        c: asked('p1', true),
        e: suspended([request('s1', false), request('p1', true)]),
      });
      expectObservable(source.pipe(toAgUiEvents({ threadId: 't' }))).toBe('-A-----F|', {
        A: RUN_STARTED,
        F: finished({
          type: 'interrupt',
          interrupts: [
            { id: 'r:s1', reason: 'ask', toolCallId: 's1', expiresAt: '2030-01-01T00:00:00.000Z' },
            { id: 'r:p1', reason: 'client_tool', toolCallId: 'p1' },
          ],
        }),
      });
    });
  });
});
