import { describe, it } from 'vitest';
import type { AgentEvent, AssistantMessage, StreamEvent } from 'cubepi';
import { textDeltas, thinkingDeltas } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

const partial = { role: 'assistant', content: [] } as unknown as AssistantMessage;
const delta = (type: 'text_delta' | 'thinking_delta', text: string): StreamEvent => ({
  type,
  contentIndex: 0,
  delta: text,
  partial,
});
const update = (streamEvent: StreamEvent): AgentEvent => ({
  type: 'message_update',
  runId: 'r',
  message: partial,
  streamEvent,
});

const events: Record<string, AgentEvent | StreamEvent> = {
  s: { type: 'message_start', runId: 'r', message: partial },
  a: update(delta('text_delta', 'Hel')),
  b: update(delta('text_delta', 'lo')),
  t: update(delta('thinking_delta', 'hmm')),
  e: { type: 'message_end', runId: 'r', message: partial },
  x: delta('text_delta', 'raw'),
};

describe('textDeltas', () => {
  it('emits the text of each text delta of agent events', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('  -s-a-t-b-e-|', events);
      const subs = '        ^----------!';
      const expected = '    ---a---b---|';
      expectObservable(source.pipe(textDeltas())).toBe(expected, { a: 'Hel', b: 'lo' });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('reads provider stream events directly too', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-x-|', events).pipe(textDeltas())).toBe('-x-|', { x: 'raw' });
    });
  });

  it('passes completion, silence and errors through, and unsubscribes upstream', () => {
    testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      expectObservable(cold<AgentEvent>('|').pipe(textDeltas())).toBe('|');
      expectObservable(cold<AgentEvent>('-').pipe(textDeltas())).toBe('-');
      expectObservable(cold('-a-#', events).pipe(textDeltas())).toBe('-a-#', { a: 'Hel' });
      const source = hot('-a-b-|', events);
      expectObservable(source.pipe(textDeltas()), '--!').toBe('-a', { a: 'Hel' });
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
  });
});

describe('thinkingDeltas', () => {
  it('emits the text of each thinking delta', () => {
    testScheduler().run(({ hot, expectObservable }) => {
      const source = hot('  -s-a-t-b-e-|', events);
      const expected = '    -----t-----|';
      expectObservable(source.pipe(thinkingDeltas())).toBe(expected, { t: 'hmm' });
    });
  });
});
