import { mergeMap, type Observable, type OperatorFunction } from 'rxjs';
import { describe, it } from 'vitest';
import { z } from 'zod';
import { defineTool, runAgentLoop, userMessage, type AgentEvent, type AgentToolResult } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { testScheduler } from './helpers.js';

// The loop waits on Observables through the scheduler they run on, so with Observable tools and a FauxProvider a
// whole run happens in virtual time: exact frames, no real waiting.

const model = { id: 'faux', provider: 'faux' };

/** One character per event worth drawing: `f`/`s` a tool ends, `a` an aborted answer, `t` turn_end, `e` agent_end. */
const marks: OperatorFunction<AgentEvent, string> = mergeMap((event) => {
  switch (event.type) {
    case 'tool_execution_end':
      return [event.toolCallId];
    case 'message_end':
      return event.message.role === 'assistant' && event.message.stopReason === 'aborted' ? ['a'] : [];
    case 'turn_end':
      return ['t'];
    case 'agent_end':
      return ['e'];
    default:
      return [];
  }
});

const result = (text: string) => ({ r: { content: [{ type: 'text' as const, text }] } });

describe('runAgentLoop in virtual time', () => {
  it('waits for Observable tools on the scheduler: each step happens at an exact frame', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const fast = cold<AgentToolResult>('10ms (r|)', result('fast'));
      const slow = cold<AgentToolResult>('30ms (r|)', result('slow'));
      const lookup = defineTool({
        name: 'lookup',
        description: 'd',
        parameters: z.object({ which: z.enum(['fast', 'slow']) }),
        execute: (_id, { which }) => (which === 'fast' ? fast : slow),
      });
      // Paced 5 ms a chunk: the first answer ends at 60 ms (two calls, each start + 4 argument chunks + end),
      // the second ("both done": start, text_start, 3 deltas, text_end, done) 55 ms after the batch.
      const faux = new FauxProvider({
        responses: [
          fauxMessage([
            fauxToolCall('lookup', { which: 'slow' }, { id: 's' }),
            fauxToolCall('lookup', { which: 'fast' }, { id: 'f' }),
          ]),
          fauxMessage('both done'),
        ],
        delayMs: 5,
      });
      const run$ = runAgentLoop({ provider: faux, model, tools: [lookup], prompts: [userMessage('go')] });
      expectObservable(run$.pipe(marks)).toBe('70ms f 19ms (st) 21ms (te|)');
      expectSubscriptions(fast.subscriptions).toBe('60ms ^ 9ms !');
      expectSubscriptions(slow.subscriptions).toBe('60ms ^ 29ms !');
    });
  });

  it('a deadline cancels in virtual time: the running tool is unsubscribed at the deadline frame', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const tool$: Observable<AgentToolResult> = cold('500ms (r|)', result('late'));
      const wait = defineTool({ name: 'wait', description: 'd', parameters: z.object({}), execute: () => tool$ });
      const faux = new FauxProvider({
        responses: [fauxMessage([fauxToolCall('wait', {}, { id: 'w' })]), fauxMessage('never')],
      });
      const run$ = runAgentLoop({
        provider: faux,
        model,
        tools: [wait],
        prompts: [userMessage('go')],
        deadlineMs: 100,
      });
      // At 100 ms: the call ends aborted (w), its turn ends (t), the closing turn carries the aborted message (a, t).
      expectObservable(run$.pipe(marks)).toBe('100ms (wtate|)');
      expectSubscriptions((tool$ as ReturnType<typeof cold>).subscriptions).toBe('^ 99ms !');
    });
  });

  it('unsubscribing tears the run down at that frame, hooks and tools included', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const tool$ = cold<AgentToolResult>('50ms (r|)', result('late'));
      const wait = defineTool({ name: 'wait', description: 'd', parameters: z.object({}), execute: () => tool$ });
      const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('wait', {}, { id: 'w' })])] });
      const run$ = runAgentLoop({ provider: faux, model, tools: [wait], prompts: [userMessage('go')] });
      expectObservable(run$.pipe(marks), '20ms !').toBe('');
      expectSubscriptions(tool$.subscriptions).toBe('^ 19ms !');
    });
  });
});
