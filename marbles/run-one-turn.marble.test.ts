// The testing kit as users get it: one turn of the loop with composed middleware, in virtual time.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, textOf, userMessage, type AgentToolResult, type Message } from 'cubepi';
import { fauxMessage, fauxToolCall, runOneTurn, spyHook, toMarbles, type FauxResponse } from 'cubepi/testing';
import { testScheduler } from './helpers.js';

/** `m` the model answered, `b` a tool call was blocked, `x`/`o` a tool ended with an error/ok, `e` agent_end. */
const marks = toMarbles((event) => {
  if (event.type === 'message_end' && event.message.role === 'assistant') return 'm';
  if (event.type === 'tool_execution_end') return event.isError ? 'x' : 'o';
  if (event.type === 'agent_end') return 'e';
  return undefined;
});

describe('runOneTurn (cubepi/testing)', () => {
  it('runs a turn whose hooks take virtual time: each hook delays the model call by exactly its duration', () => {
    const seen: string[][] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const trim = cold<Message[]>('10ms (t|)', { t: [userMessage('q')] });
      const summary = (messages: Message[]) => cold('20ms (s|)', { s: [userMessage('[summary]'), ...messages] });
      const responses: FauxResponse[] = [(messages) => (seen.push(messages.map(textOf)), fauxMessage('answer'))];
      const run$ = runOneTurn({
        responses,
        middleware: [
          { name: 'trim', transformContext: () => trim },
          { name: 'summary', transformContext: summary },
        ],
      });
      expectObservable(run$.pipe(marks)).toBe('30ms (me|)');
      expectSubscriptions(trim.subscriptions).toBe('^ 9ms !');
    });
    expect(seen).toEqual([['[summary]', 'q']]);
  });

  it('a blocking gate short-circuits in virtual time; the blocked call never runs and later gates are never called', () => {
    const later = spyHook(() => undefined);
    let executed = 0;
    testScheduler().run(({ cold, expectObservable }) => {
      const tool = defineTool({
        name: 'act',
        description: 'd',
        parameters: z.object({}),
        execute: () => (executed++, 'done'),
      });
      const run$ = runOneTurn({
        responses: [fauxMessage([fauxToolCall('act', {}, { id: 'a' })])],
        tools: [tool],
        middleware: [
          { name: 'Quota', beforeToolCall: () => cold('5ms (b|)', { b: { block: true, reason: 'quota' } }) },
          { name: 'Later', beforeToolCall: later },
        ],
      });
      // The answer at 0; the gate blocks at 5 ms: the call ends with an error and the turn (and run) ends.
      expectObservable(run$.pipe(marks)).toBe('m 4ms (xe|)');
    });
    expect(later.calls).toHaveLength(0);
    expect(executed).toBe(0);
  });

  it('unsubscribing mid-hook tears the hook down (expectSubscriptions), and nothing runs after', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const slowGate = cold('50ms (u|)', { u: undefined });
      const slowTool = cold<AgentToolResult>('10ms (r|)', { r: { content: [{ type: 'text', text: 'never' }] } });
      const tool = defineTool({ name: 'act', description: 'd', parameters: z.object({}), execute: () => slowTool });
      const run$ = runOneTurn({
        responses: [fauxMessage([fauxToolCall('act', {}, { id: 'a' })])],
        tools: [tool],
        middleware: [{ name: 'SlowGate', beforeToolCall: () => slowGate }],
      });
      expectObservable(run$.pipe(marks), '20ms !').toBe('m');
      expectSubscriptions(slowGate.subscriptions).toBe('^ 19ms !');
      expectSubscriptions(slowTool.subscriptions).toBe([]);
    });
  });

  it('ends after one turn even when the model asks for more', () => {
    testScheduler().run(({ expectObservable }) => {
      const run$ = runOneTurn({
        responses: [fauxMessage([fauxToolCall('act', {}, { id: 'a' })]), fauxMessage('second turn')],
        tools: [defineTool({ name: 'act', description: 'd', parameters: z.object({}), execute: () => 'ok' })],
      });
      expectObservable(run$.pipe(marks)).toBe('(moe|)');
    });
  });
});
