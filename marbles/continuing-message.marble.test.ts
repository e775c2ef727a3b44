// Rule: continuingMessage — a run resumed from approvals is the rest of the client's assistant message: `start` names
// that message, and the resumed batch's step (the run's first) is folded into the step that asked for the calls.
import { describe, it } from 'vitest';
import type { UIMessageStreamPart } from '../operators/to-ui-message-stream.js';
import { continuingMessage } from '../src/server/front-end-protocols.js';
import { testScheduler } from './helpers.js';

const parts: Record<string, UIMessageStreamPart> = {
  s: { type: 'start', messageId: 'run-2' },
  m: { type: 'start', messageId: 'client-1' },
  a: { type: 'start-step' },
  z: { type: 'finish-step' },
  i: { type: 'tool-input-available', toolCallId: 'c1', toolName: 'lookup', input: {} },
  o: { type: 'tool-output-available', toolCallId: 'c1', output: 'ok' },
  t: { type: 'text-delta', id: 't', delta: 'hi' },
  f: { type: 'finish', finishReason: 'stop' },
};

describe('continuingMessage', () => {
  it('renames start and drops only the first step edges; later steps pass', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('sa-ioz-atzf|', parts);
      expectObservable(source.pipe(continuingMessage('client-1'))).toBe('m--io--atzf|', parts);
      expectSubscriptions(source.subscriptions).toBe('^----------!');
    });
  });

  it('passes errors through, and unsubscribing unsubscribes the source', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('sa#', parts);
      expectObservable(failing.pipe(continuingMessage('client-1'))).toBe('m-#', parts);
      const endless = cold('sa-i-', parts);
      expectObservable(endless.pipe(continuingMessage('client-1')), '^--!').toBe('m--', parts);
      expectSubscriptions(endless.subscriptions).toBe('^--!');
    });
  });

  it('keeps no state between subscriptions: each drops its own first step', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const shared = cold('azaz|', parts).pipe(continuingMessage('client-1'));
      expectObservable(shared).toBe('--az|', parts);
      expectObservable(shared).toBe('--az|', parts);
    });
  });
});
