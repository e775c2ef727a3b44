import { mergeMap, type Observable, type OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  defineTool,
  parallel,
  race,
  sequence,
  supervise,
  textOf,
  type AgentToolResult,
  type CompositeEvent,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { testScheduler } from './helpers.js';

// Agents on a paced FauxProvider with Observable tools run in virtual time, so a composite's whole run has exact
// frames: `s` composite_start, a member's final answer drawn as its name's first letter, `e` composite_end.

const marks: OperatorFunction<CompositeEvent, string> = mergeMap((event) => {
  if (event.type === 'composite_start') return ['s'];
  if (event.type === 'composite_end') return ['e'];
  const inner = event.event;
  return inner.type === 'agent_end' ? [event.member[0]!] : [];
});

const result = (text: string) => ({ r: { content: [{ type: 'text' as const, text }] } });

/** An agent that calls `wait` (a cold tool) once, then answers `answer`. */
function waiting(tool$: Observable<AgentToolResult>, answer: string, seen?: string[]): Agent {
  const wait = defineTool({ name: 'wait', description: 'd', parameters: z.object({}), execute: () => tool$ });
  const faux = new FauxProvider({
    responses: [
      (messages) => {
        seen?.push(textOf(messages[messages.length - 1]!));
        return fauxMessage([fauxToolCall('wait', {}, { id: 'w' })]);
      },
      fauxMessage(answer),
    ],
    delayMs: 5,
  });
  return new Agent({ provider: faux, model: 'faux', tools: [wait] });
}

describe('composition operators in virtual time', () => {
  it('sequence: each member starts when the previous one ends, on its answer', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a$ = cold<AgentToolResult>('20ms (r|)', result('x'));
      const b$ = cold<AgentToolResult>('20ms (r|)', result('y'));
      const seen: string[] = [];
      const run$ = sequence(
        { name: 'a', agent: waiting(a$, 'alpha', seen) },
        { name: 'b', agent: waiting(b$, 'beta', seen) },
      ).run$('go');
      expectObservable(run$.pipe(marks)).toBe('s 54ms a 49ms (be|)');
      expectSubscriptions(a$.subscriptions).toBe('15ms ^ 19ms !');
      expectSubscriptions(b$.subscriptions).toBe('70ms ^ 19ms !');
    });
  });

  it("sequence: the second member is prompted with the first one's answer", () => {
    const seen: string[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const t$ = cold<AgentToolResult>('20ms (r|)', result('x'));
      const run$ = sequence(waiting(t$, 'alpha', seen), waiting(t$, 'beta', seen)).run$('go');
      expectObservable(run$.pipe(marks)).toBe('s 54ms m 49ms (me|)');
    });
    expect(seen).toEqual(['go', 'alpha']);
  });

  it('parallel: every member runs at once on the same input; the end waits for the last', () => {
    const seen: string[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a$ = cold<AgentToolResult>('40ms (r|)', result('x'));
      const b$ = cold<AgentToolResult>('20ms (r|)', result('y'));
      const run$ = parallel(
        { name: 'a', agent: waiting(a$, 'alpha', seen) },
        { name: 'b', agent: waiting(b$, 'beta', seen) },
      ).run$('go');
      expectObservable(run$.pipe(marks)).toBe('s 49ms b 24ms (ae|)');
      expectSubscriptions(a$.subscriptions).toBe('15ms ^ 39ms !');
      expectSubscriptions(b$.subscriptions).toBe('15ms ^ 19ms !');
    });
    expect(seen).toEqual(['go', 'go']);
  });

  it("race: the losers are unsubscribed in the winner's frame and emit nothing after", () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a$ = cold<AgentToolResult>('20ms (r|)', result('x'));
      const b$ = cold<AgentToolResult>('500ms (r|)', result('y'));
      const c$ = cold<AgentToolResult>('300ms (r|)', result('z'));
      const run$ = race(
        { name: 'a', agent: waiting(a$, 'alpha') },
        { name: 'b', agent: waiting(b$, 'beta') },
        { name: 'c', agent: waiting(c$, 'gamma') },
      ).run$('go');
      expectObservable(run$.pipe(marks)).toBe('s 54ms (ae|)');
      expectSubscriptions(b$.subscriptions).toBe('15ms ^ 39ms !');
      expectSubscriptions(c$.subscriptions).toBe('15ms ^ 39ms !');
    });
  });

  it('sequence: unsubscribing cancels the running member; a later member never starts', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a$ = cold<AgentToolResult>('100ms (r|)', result('x'));
      const b$ = cold<AgentToolResult>('20ms (r|)', result('y'));
      const run$ = sequence(waiting(a$, 'alpha'), waiting(b$, 'beta')).run$('go');
      expectObservable(run$.pipe(marks), '^ 39ms !').toBe('s');
      expectSubscriptions(a$.subscriptions).toBe('15ms ^ 24ms !');
      expectSubscriptions(b$.subscriptions).toBe([]);
    });
  });

  it('parallel: unsubscribing cancels every running member in the same frame', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a$ = cold<AgentToolResult>('100ms (r|)', result('x'));
      const b$ = cold<AgentToolResult>('200ms (r|)', result('y'));
      const run$ = parallel(waiting(a$, 'alpha'), waiting(b$, 'beta')).run$('go');
      expectObservable(run$.pipe(marks), '^ 39ms !').toBe('s');
      expectSubscriptions(a$.subscriptions).toBe('15ms ^ 24ms !');
      expectSubscriptions(b$.subscriptions).toBe('15ms ^ 24ms !');
    });
  });

  it("supervise: a worker's events are numbered in the composite; unsubscribing cancels the worker's tool", () => {
    const paths: string[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const w$ = cold<AgentToolResult>('500ms (r|)', result('found'));
      const manager = new Agent({
        provider: new FauxProvider({
          responses: [fauxMessage([fauxToolCall('research', { prompt: 'look' }, { id: 'r1' })]), fauxMessage('done')],
          delayMs: 5,
        }),
        model: 'faux',
      });
      const desk = supervise(manager, [
        { name: 'research', description: 'd', createAgent: () => waiting(w$, 'found') },
      ]);
      const run$ = desk.run$('go').pipe(
        mergeMap((event) => {
          if (event.type === 'member_event' && event.event.type === 'agent_start') paths.push(event.path.join('/'));
          return event.type === 'member_event' && event.member === 'research' && event.event.type === 'agent_start'
            ? ['w']
            : event.type === 'composite_start'
              ? ['s']
              : [];
        }),
      );
      expectObservable(run$, '^ 99ms !').toBe('s 34ms w');
      expectSubscriptions(w$.subscriptions).toBe('50ms ^ 49ms !');
    });
    expect(paths).toEqual(['supervise/0/manager', 'supervise/1/research/r1']);
  });
});
void expect;
