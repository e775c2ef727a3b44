import { describe, it } from 'vitest';
import { ofType } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

type Event = { type: 'start' } | { type: 'update'; n: number } | { type: 'end' };
const values: Record<string, Event> = {
  s: { type: 'start' },
  u: { type: 'update', n: 1 },
  v: { type: 'update', n: 2 },
  e: { type: 'end' },
};

describe('ofType', () => {
  it('keeps the events of one type', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('  -s-u-v-e-|', values);
      const subs = '        ^--------!';
      const expected = '    ---u-v---|';
      expectObservable(source.pipe(ofType('update'))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('keeps the events of several types', () => {
    testScheduler().run(({ hot, expectObservable }) => {
      const source = hot('  -s-u-v-e-|', values);
      const expected = '    -s-----e-|';
      expectObservable(source.pipe(ofType('start', 'end'))).toBe(expected, values);
    });
  });

  it('passes an empty source, a never source and an error through', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<Event>('|').pipe(ofType('update'))).toBe('|');
      expectObservable(cold<Event>('-').pipe(ofType('update'))).toBe('-');
      expectObservable(cold<Event>('-u-#', values).pipe(ofType('update'))).toBe('-u-#', values);
    });
  });

  it('unsubscribes from the source when unsubscribed', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('  -s-u-v-e-|', values);
      const unsub = '       ----!';
      const subs = '        ^---!';
      expectObservable(source.pipe(ofType('update')), unsub).toBe('---u', values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });
});
