import { describe, it } from 'vitest';
import type { AssistantMessage, StreamEvent } from 'cubepi';
import { finalMessage } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

const message = (stopReason: AssistantMessage['stopReason']) =>
  ({ role: 'assistant', content: [], stopReason }) as unknown as AssistantMessage;
const M = message('stop');
const E = message('error');
const events: Record<string, StreamEvent> = {
  s: { type: 'start', partial: M },
  d: { type: 'text_delta', contentIndex: 0, delta: 'x', partial: M },
  D: { type: 'done', message: M },
  X: { type: 'error', message: E, errorKind: 'unavailable' },
};

describe('finalMessage', () => {
  it('emits the message of the terminal done event when the stream completes', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold(' -s-d-d-D|', events);
      const subs = '        ^-------!';
      const expected = '    --------(m|)';
      expectObservable(source.pipe(finalMessage())).toBe(expected, { m: M });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('emits the message of a terminal error event (failures are values)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-s-X|', events).pipe(finalMessage())).toBe('----(m|)', { m: E });
    });
  });

  it('errors when the stream completes without a terminal event', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const error = new TypeError('The provider stream completed without a terminal done/error event');
      expectObservable(cold('-s-d|', events).pipe(finalMessage())).toBe('----#', undefined, error);
    });
  });

  it('passes a source error through and never emits for a source that never ends', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-s-#', events).pipe(finalMessage())).toBe('---#');
      expectObservable(cold('-s-D-', events).pipe(finalMessage())).toBe('-');
    });
  });

  it('unsubscribes from the source when unsubscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-s-d-d-D|', events);
      expectObservable(source.pipe(finalMessage()), '---!').toBe('-');
      expectSubscriptions(source.subscriptions).toBe('^--!');
    });
  });
});
