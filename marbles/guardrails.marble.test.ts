// The ordering rules of guardrails (docs/guardrails.md), each in virtual time: the provider's stream and the tools
// are cold() Observables, so expectSubscriptions shows exactly when each was subscribed and torn down.
import { mergeMap, type Observable, type OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineTool,
  inputGuardrail,
  outputGuardrail,
  toolGuardrail,
  type AgentEvent,
  type AgentToolResult,
  type AssistantMessage,
  type GuardrailVerdict,
  type Provider,
  type StreamEvent,
  type ToolCall,
} from 'cubepi';
import { runOneTurn } from 'cubepi/testing';
import { assistant, testScheduler } from './helpers.js';

const TEXT = assistant('hi');
const EMPTY: AssistantMessage = { ...TEXT, content: [] };
const CALL: ToolCall = { type: 'toolCall', id: 'c1', name: 'wait', arguments: {} };
const TOOL_USE: AssistantMessage = { ...TEXT, content: [CALL], stopReason: 'toolUse' };

/** Stream events of a text answer `hi`: s(tart) t(ext start) d(elta) e(nd of text) D(one). */
const text: Record<string, StreamEvent> = {
  s: { type: 'start', partial: EMPTY },
  t: { type: 'text_start', contentIndex: 0, partial: { ...TEXT, content: [{ type: 'text', text: '' }] } },
  d: { type: 'text_delta', contentIndex: 0, delta: 'hi', partial: TEXT },
  e: { type: 'text_end', contentIndex: 0, content: 'hi', partial: TEXT },
  D: { type: 'done', message: TEXT },
};
/** Stream events of an answer calling `wait`: s(tart) c(all start) C(all end) D(one). */
const toolUse: Record<string, StreamEvent> = {
  s: { type: 'start', partial: EMPTY },
  c: { type: 'toolcall_start', contentIndex: 0, partial: { ...TOOL_USE, content: [{ ...CALL }] } },
  C: { type: 'toolcall_end', contentIndex: 0, toolCall: CALL, partial: TOOL_USE },
  D: { type: 'done', message: TOOL_USE },
};

/** A provider answering the first call with `first`, any later call with `later` (default: text `hi` at once). */
function provider(first: Observable<StreamEvent>, later?: Observable<StreamEvent>): Provider {
  let calls = 0;
  return {
    id: 'p',
    stream: () => (calls++ === 0 ? first : (later ?? first)),
  };
}

/**
 * One character per event worth drawing: d a text delta, m an assistant message_end, r message_retracted,
 * g guardrail_tripped, x tool_execution_start, y tool_execution_end, e agent_end.
 */
const marks: OperatorFunction<AgentEvent, string> = mergeMap((event) => {
  switch (event.type) {
    case 'message_update':
      return event.streamEvent.type === 'text_delta' ? ['d'] : [];
    case 'message_end':
      return event.message.role === 'assistant' && event.message.content.length > 0 ? ['m'] : [];
    case 'message_retracted':
      return ['r'];
    case 'guardrail_tripped':
      return ['g'];
    case 'tool_execution_start':
      return ['x'];
    case 'tool_execution_end':
      return ['y'];
    case 'agent_end':
      return ['e'];
    default:
      return [];
  }
});

/** Keeps every event in `into`, passing it on. */
const record = (into: AgentEvent[]): OperatorFunction<AgentEvent, AgentEvent> =>
  mergeMap((event) => {
    into.push(event);
    return [event];
  });

const trip: GuardrailVerdict = { trip: true, reason: 'bad input' };
const verdicts = { p: 'pass' as GuardrailVerdict, t: trip };

describe('inputGuardrail (parallel): beside the first model call', () => {
  it('a trip unsubscribes the model stream at the trip frame, retracts the streamed text, and ends the run stopped', () => {
    const events: AgentEvent[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s t 3ms d 5ms e 9ms (D|)', text);
      const check$ = cold<GuardrailVerdict>('8ms (t|)', verdicts);
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [inputGuardrail({ name: 'policy', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(record(events), marks)).toBe('-----d--(gre|)');
      expectSubscriptions(model$.subscriptions).toBe('^-------!');
      expectSubscriptions(check$.subscriptions).toBe('^-------!');
    });
    const end = events.find((event) => event.type === 'agent_end');
    expect(end).toMatchObject({
      outcome: 'stopped',
      stoppedBy: { by: 'policy', reason: 'Guardrail policy tripped: bad input' },
    });
    // Nothing of the tripped answer is among the run's messages: only the prompt and the closing message.
    expect(
      end?.type === 'agent_end' && end.messages.map((m) => (m.role === 'assistant' ? m.stopReason : m.role)),
    ).toEqual(['user', 'blocked']);
    expect(events.find((event) => event.type === 'guardrail_tripped')).toMatchObject({
      guardrail: 'policy',
      kind: 'input',
      reason: 'bad input',
      action: 'stop',
    });
    expect(events.find((event) => event.type === 'message_retracted')).toMatchObject({ turnIndex: 0, by: 'policy' });
  });

  it('the answer streams while the check is pending; its message_end waits for the check', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const model$ = cold<StreamEvent>('s t d e (D|)', text);
      const check$ = cold<GuardrailVerdict>('20ms (p|)', verdicts);
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [inputGuardrail({ name: 'policy', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(marks)).toBe('--d-----------------(me|)');
    });
  });

  it('no tool starts before the check settled: a tripped check means the tool is never subscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s c C (D|)', toolUse);
      const tool$ = cold<AgentToolResult>('5ms (r|)', { r: { content: [{ type: 'text', text: 'done' }] } });
      const check$ = cold<GuardrailVerdict>('20ms (t|)', verdicts);
      const wait = defineTool({ name: 'wait', description: 'd', parameters: z.object({}), execute: () => tool$ });
      const run$ = runOneTurn({
        provider: provider(model$),
        tools: [wait],
        middleware: [inputGuardrail({ name: 'policy', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(marks)).toBe('--------------------(gre|)');
      expectSubscriptions(tool$.subscriptions).toBe([]);
    });
  });

  it('a tool call the model made waits for the last input guardrail to pass, then runs', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s c C (D|)', toolUse);
      const tool$ = cold<AgentToolResult>('5ms (r|)', { r: { content: [{ type: 'text', text: 'done' }] } });
      const fast$ = cold<GuardrailVerdict>('10ms (p|)', verdicts);
      const slow$ = cold<GuardrailVerdict>('20ms (p|)', verdicts);
      const wait = defineTool({ name: 'wait', description: 'd', parameters: z.object({}), execute: () => tool$ });
      const run$ = runOneTurn({
        provider: provider(model$),
        tools: [wait],
        middleware: [
          inputGuardrail({ name: 'fast', inspect: () => fast$ }),
          inputGuardrail({ name: 'slow', inspect: () => slow$ }),
        ],
      });
      expectObservable(run$.pipe(marks)).toBe('--------------------(mx)-(ye|)');
      expectSubscriptions(tool$.subscriptions).toBe('--------------------^----!');
    });
  });

  it('a check that never answers trips with reason timeout at timeoutMs', () => {
    const tripped: AgentEvent[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s t d 100ms e (D|)', text);
      const never$ = cold<GuardrailVerdict>('-');
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [inputGuardrail({ name: 'slow', timeoutMs: 50, inspect: () => never$ })],
      });
      expectObservable(run$.pipe(record(tripped), marks)).toBe('--d' + '-'.repeat(47) + '(gre|)');
      expectSubscriptions(never$.subscriptions).toBe('^' + '-'.repeat(49) + '!');
      expectSubscriptions(model$.subscriptions).toBe('^' + '-'.repeat(49) + '!');
    });
    expect(tripped.find((event) => event.type === 'guardrail_tripped')).toMatchObject({
      guardrail: 'slow',
      timeout: true,
      reason: 'timeout: no answer within 50 ms',
    });
  });
});

describe('inputGuardrail (blocking): before the first model call', () => {
  it('the model is subscribed only after the check passed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s t d e (D|)', text);
      const check$ = cold<GuardrailVerdict>('10ms (p|)', verdicts);
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [inputGuardrail({ name: 'policy', mode: 'blocking', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(marks)).toBe('------------d-(me|)');
      expectSubscriptions(model$.subscriptions).toBe('----------^---!');
    });
  });

  it('a trip means the model is never called', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s t d e (D|)', text);
      const check$ = cold<GuardrailVerdict>('10ms (t|)', verdicts);
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [inputGuardrail({ name: 'policy', mode: 'blocking', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(marks)).toBe('----------(ge|)');
      expectSubscriptions(model$.subscriptions).toBe([]);
    });
  });
});

describe('outputGuardrail: settles before message_end', () => {
  it('a pass lets message_end through only when the check answered', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s t d e (D|)', text);
      const check$ = cold<GuardrailVerdict>('10ms (p|)', verdicts);
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [outputGuardrail({ name: 'out', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(marks)).toBe('--d-----------(me|)');
      expectSubscriptions(check$.subscriptions).toBe('----^---------!');
    });
  });

  it('a trip retracts the streamed answer: no message_end for it, the run ends stopped', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const model$ = cold<StreamEvent>('s t d e (D|)', text);
      const check$ = cold<GuardrailVerdict>('10ms (t|)', verdicts);
      const run$ = runOneTurn({
        provider: provider(model$),
        middleware: [outputGuardrail({ name: 'out', inspect: () => check$ })],
      });
      expectObservable(run$.pipe(marks)).toBe('--d-----------(gre|)');
    });
  });
});

describe('toolGuardrail: around the tool', () => {
  it('an args trip denies the call: the tool is never subscribed, the denial is its result', () => {
    const events: AgentEvent[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const model$ = cold<StreamEvent>('s c C (D|)', toolUse);
      const after$ = cold<StreamEvent>('s t d e (D|)', text);
      const tool$ = cold<AgentToolResult>('5ms (r|)', { r: { content: [{ type: 'text', text: 'done' }] } });
      const check$ = cold<GuardrailVerdict>('10ms (t|)', verdicts);
      const wait = defineTool({ name: 'wait', description: 'd', parameters: z.object({}), execute: () => tool$ });
      const run$ = runOneTurn({
        provider: provider(model$, after$),
        tools: [wait],
        middleware: [toolGuardrail({ name: 'args', args: () => check$ })],
      });
      expectObservable(run$.pipe(record(events), marks)).toBe('---(mx)------(gye|)');
      expectSubscriptions(tool$.subscriptions).toBe([]);
    });
    const end = events.find((event) => event.type === 'tool_execution_end');
    expect(end).toMatchObject({ outcome: 'denied', isError: true });
    expect(end?.type === 'tool_execution_end' && end.result.content).toEqual([
      { type: 'text', text: 'Denied by guardrail args: bad input' },
    ]);
    expect(events.find((event) => event.type === 'guardrail_tripped')).toMatchObject({
      guardrail: 'args',
      kind: 'tool',
      action: 'deny',
      toolCallId: 'c1',
    });
  });
});

describe('guardrail option checks', () => {
  it('rejects a missing name, a bad timeout and a guardrail without a check', () => {
    expect(() => inputGuardrail({ name: '', text: () => 'pass' })).toThrow(/name/);
    expect(() => outputGuardrail({ name: 'x', timeoutMs: -1, text: () => 'pass' })).toThrow(/timeoutMs/);
    expect(() => toolGuardrail({ name: 'x' })).toThrow(/args, result or text/);
    expect(() => inputGuardrail({ name: 'x' })).toThrow(/text/);
  });
});
