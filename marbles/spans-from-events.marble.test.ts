// spansFromEvents (page/studio/live-spans.ts): a live run's events as timeline spans, in virtual time (the spans'
// clock is the scheduler's). Each emission is summarised as `label:start+duration:status` per span, `~` open.
import { map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { EMPTY_USAGE, type AgentEvent } from 'cubepi';
import { fauxMessage, fauxToolCall } from 'cubepi/testing';
import type { StudioSpan } from 'cubepi/studio';
import { spansFromEvents } from '../page/studio/live-spans.js';
import { testScheduler } from './helpers.js';

const answer = fauxMessage('hi', {
  usage: { ...EMPTY_USAGE, input: 10, output: 3, totalTokens: 13 },
});
const failedCall = fauxMessage([], { stopReason: 'error', errorKind: 'rate_limited', errorMessage: 'slow down' });
const callsTool = fauxMessage([fauxToolCall('echo', { text: 'x' }, { id: 'c1' })]);
const attempt = (n: number, model = 'faux'): AgentEvent => ({
  type: 'model_attempt',
  runId: 'r',
  turnIndex: 0,
  invocationId: 'r.0',
  attemptId: `r.0.${n}`,
  attempt: n,
  provider: 'faux',
  model,
  ...(n > 1 ? { previous: { attemptId: `r.0.${n - 1}`, errorKind: 'rate_limited' as const, error: 'slow down' } } : {}),
});
const values: Record<string, AgentEvent> = {
  a: { type: 'agent_start', runId: 'r' },
  t: { type: 'turn_start', runId: 'r', turnIndex: 0 },
  m: attempt(1),
  n: attempt(2, 'small'),
  f: {
    type: 'model_fallback',
    runId: 'r',
    turnIndex: 0,
    invocationId: 'r.0',
    from: { provider: 'faux', model: 'faux' },
    to: { provider: 'faux', model: 'small' },
  },
  x: { type: 'message_end', runId: 'r', message: failedCall },
  u: {
    type: 'message_update',
    runId: 'r',
    message: answer,
    streamEvent: { type: 'text_delta', contentIndex: 0, delta: 'hi', partial: answer },
  },
  e: { type: 'message_end', runId: 'r', message: answer },
  c: { type: 'message_end', runId: 'r', message: callsTool },
  s: { type: 'tool_execution_start', runId: 'r', toolCallId: 'c1', toolName: 'echo', args: { text: 'x' } },
  q: {
    type: 'approval_requested',
    runId: 'r',
    requestId: 'r:c1',
    toolCallId: 'c1',
    toolName: 'echo',
    args: { text: 'x' },
    reason: 'sure?',
  },
  h: { type: 'hook_error', runId: 'r', middleware: 'Audit', hook: 'afterToolCall', error: 'boom' },
  T: { type: 'turn_end', runId: 'r', turnIndex: 0, message: answer, toolResults: [] },
  E: { type: 'agent_end', runId: 'r', messages: [answer], outcome: 'completed', usage: answer.usage },
  S: { type: 'agent_end', runId: 'r', messages: [], outcome: 'suspended', usage: EMPTY_USAGE },
  C: { type: 'agent_end', runId: 'r', messages: [], outcome: 'cancelled', usage: EMPTY_USAGE },
  z: { type: 'turn_start', runId: 'other', turnIndex: 0 },
};

const show = (spans: readonly StudioSpan[]): string =>
  spans
    .map(
      (s) =>
        `${s.label}:${s.startMs}+${s.durationMs ?? '~'}${s.status === 'error' ? '!' : s.status === 'running' ? '~' : ''}`,
    )
    .join(' | ');

/** A fresh scheduler, and the operator reading the spans' times from its clock. */
function setup() {
  const scheduler = testScheduler();
  const spans = () => spansFromEvents({ now: () => scheduler.now() });
  return { scheduler, spans };
}

describe('spansFromEvents', () => {
  it('opens a span per run, turn and attempt, closes them as the events say; deltas emit nothing', () => {
    const { scheduler, spans } = setup();
    scheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('  -a-t-m-u-u-e-T-E-|', values);
      const subs = '        ^----------------!';
      const expected = '    -A-B-C-----D-F-G-|';
      expectObservable(source.pipe(spans(), map(show))).toBe(expected, {
        A: 'invoke_agent:1+~~',
        B: 'invoke_agent:1+~~ | turn 0:3+~~',
        C: 'invoke_agent:1+~~ | turn 0:3+~~ | chat faux:5+~~',
        D: 'invoke_agent:1+~~ | turn 0:3+~~ | chat faux:5+6',
        F: 'invoke_agent:1+~~ | turn 0:3+10 | chat faux:5+6',
        G: 'invoke_agent:1+14 | turn 0:3+10 | chat faux:5+6',
      });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('a retry then a fallback: the failed attempt ends as an error, the next names the model it fell back from', () => {
    const { scheduler, spans } = setup();
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('a-t-m-f-n-e-T-E|', values);
      const expected = '   A-B-C---D-E-F-G|';
      expectObservable(source.pipe(spans(), map(show))).toBe(expected, {
        A: 'invoke_agent:0+~~',
        B: 'invoke_agent:0+~~ | turn 0:2+~~',
        C: 'invoke_agent:0+~~ | turn 0:2+~~ | chat faux:4+~~',
        D: 'invoke_agent:0+~~ | turn 0:2+~~ | chat faux:4+4! | chat small · attempt 2 · fallback from faux/faux:8+~~',
        E: 'invoke_agent:0+~~ | turn 0:2+~~ | chat faux:4+4! | chat small · attempt 2 · fallback from faux/faux:8+2',
        F: 'invoke_agent:0+~~ | turn 0:2+10 | chat faux:4+4! | chat small · attempt 2 · fallback from faux/faux:8+2',
        G: 'invoke_agent:0+14 | turn 0:2+10 | chat faux:4+4! | chat small · attempt 2 · fallback from faux/faux:8+2',
      });
    });
  });

  it('a call held for approval: the approval waits under the call; a suspended agent_end closes both, pending', () => {
    const { scheduler, spans } = setup();
    let last: readonly StudioSpan[] = [];
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('a-t-m-c-s-q-h-S|', values);
      const expected = '   A-B-C-D-E-F-G-H|';
      const base = 'invoke_agent:0+~~ | turn 0:2+~~ | chat faux:4+2';
      expectObservable(
        source.pipe(
          spans(),
          map((s) => ((last = s), show(s))),
        ),
      ).toBe(expected, {
        A: 'invoke_agent:0+~~',
        B: 'invoke_agent:0+~~ | turn 0:2+~~',
        C: 'invoke_agent:0+~~ | turn 0:2+~~ | chat faux:4+~~',
        D: base,
        E: `${base} | echo:8+~~`,
        F: `${base} | echo:8+~~ | approval echo:10+~~`,
        G: `${base} | echo:8+~~ | approval echo:10+~~ | afterToolCall · Audit:12+0!`,
        H: 'invoke_agent:0+14 | turn 0:2+12 | chat faux:4+2 | echo:8+6 | approval echo (run suspended):10+4 | afterToolCall · Audit:12+0!',
      });
    });
    const tool = last.find((s) => s.kind === 'tool')!;
    const approval = last.find((s) => s.kind === 'approval')!;
    expect(approval.parentSpanId).toBe(tool.spanId);
    expect(tool.attributes['cubepi.tool.outcome']).toBe('pending');
    expect(tool.attributes['cubepi.approval.request_id']).toBe('r:c1');
    expect(last.find((s) => s.kind === 'run')!.attributes['cubepi.run.outcome']).toBe('suspended');
  });

  it('a cancelled run: agent_end closes the attempt, the tool call (interrupted), the turn and the run', () => {
    const { scheduler, spans } = setup();
    let last: readonly StudioSpan[] = [];
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('a-t-m-s-C|', values);
      expectObservable(
        source.pipe(
          spans(),
          map((s) => ((last = s), s.length)),
        ),
      ).toBe('A-B-C-D-E|', {
        A: 1,
        B: 2,
        C: 3,
        D: 4,
        E: 4,
      });
    });
    expect(last.map((s) => [s.label, s.durationMs, s.status])).toEqual([
      ['invoke_agent', 8, 'ok'],
      ['turn 0', 6, 'ok'],
      ['chat faux', 4, 'ok'],
      ['echo', 2, 'ok'],
    ]);
    expect(last[3]!.attributes['cubepi.tool.outcome']).toBe('interrupted');
  });

  it('keeps unchanged spans as the same objects; each emission is a new frozen array', () => {
    const { scheduler, spans } = setup();
    const seen: (readonly StudioSpan[])[] = [];
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(
        cold('a-t-m-e|', values).pipe(
          spans(),
          map((s) => (seen.push(s), s.length)),
        ),
      ).toBe('A-B-C-D|', { A: 1, B: 2, C: 3, D: 3 });
    });
    expect(seen.every((s) => Object.isFrozen(s) && s.every((span) => Object.isFrozen(span)))).toBe(true);
    expect(new Set(seen).size).toBe(4);
    expect(seen[2]![0]).toBe(seen[0]![0]); // the run's span, untouched by turn_start and model_attempt
    expect(seen[3]![1]).toBe(seen[2]![1]); // the turn's, untouched by the attempt's end
    expect(seen[3]![2]).not.toBe(seen[2]![2]);
  });

  it('ignores events of a run it did not see start; passes empty, never and errors through', () => {
    const { scheduler, spans } = setup();
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(cold('z-a-z|', values).pipe(spans(), map(show))).toBe('--A--|', { A: 'invoke_agent:2+~~' });
      expectObservable(cold<AgentEvent>('|').pipe(spans())).toBe('|');
      expectObservable(cold<AgentEvent>('-').pipe(spans())).toBe('-');
      expectObservable(cold('a-#', values).pipe(spans(), map(show))).toBe('A-#', { A: 'invoke_agent:0+~~' });
    });
  });

  it('unsubscribes from the source when unsubscribed; each subscription has its own state', () => {
    const { scheduler, spans } = setup();
    scheduler.run(({ hot, cold, expectObservable, expectSubscriptions }) => {
      const source = hot('  -a-t-m-e-T-E-|', values);
      const unsub = '       ------!';
      const subs = '        ^-----!';
      expectObservable(
        source.pipe(
          spans(),
          map((s) => s.length),
        ),
        unsub,
      ).toBe('-A-B-C', { A: 1, B: 2, C: 3 });
      expectSubscriptions(source.subscriptions).toBe(subs);
      const twice = cold('a-t|', values).pipe(
        spans(),
        map((s) => s.length),
      );
      expectObservable(twice).toBe('A-B|', { A: 1, B: 2 });
      expectObservable(twice).toBe('A-B|', { A: 1, B: 2 });
    });
  });
});
