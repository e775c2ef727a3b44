import { describe, it } from 'vitest';
import type { Observable } from 'rxjs';
import { executeToolCalls } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

describe('executeToolCalls', () => {
  it('runs calls concurrently and emits outcomes in completion order, tagged with the model order', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('    -----A|');
      const b = cold('    -B|');
      const c = cold('    ---C|');
      const calls: Record<string, Observable<string>> = { a, b, c };
      const source = cold('(abc|)');
      const expected = '   --b-c-(a|)';
      expectObservable(source.pipe(executeToolCalls((name: string) => calls[name]!))).toBe(expected, {
        a: { index: 0, outcome: 'A' },
        b: { index: 1, outcome: 'B' },
        c: { index: 2, outcome: 'C' },
      });
      expectSubscriptions(a.subscriptions).toBe('^-----!');
      expectSubscriptions(b.subscriptions).toBe('^-!');
      expectSubscriptions(c.subscriptions).toBe('^---!');
    });
  });

  it('runs at most `concurrency` calls at once; the next starts when one completes', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('   ---A|');
      const b = cold('   -B|');
      const c = cold('   -C|');
      const calls: Record<string, Observable<string>> = { a, b, c };
      const expected = ' --b-(ac|)';
      expectObservable(cold('(abc|)').pipe(executeToolCalls((name: string) => calls[name]!, 2))).toBe(expected, {
        a: { index: 0, outcome: 'A' },
        b: { index: 1, outcome: 'B' },
        c: { index: 2, outcome: 'C' },
      });
      expectSubscriptions(a.subscriptions).toBe('^---!');
      expectSubscriptions(b.subscriptions).toBe('^-!');
      expectSubscriptions(c.subscriptions).toBe('--^-!');
    });
  });

  it("takes each call's last value (progress before it is not an outcome); a call with no value emits nothing", () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const calls: Record<string, Observable<string>> = { a: cold('-p-q-A|'), b: cold<never>('--|') };
      expectObservable(cold('(ab|)').pipe(executeToolCalls((name: string) => calls[name]!))).toBe('------(a|)', {
        a: { index: 0, outcome: 'A' },
      });
    });
  });

  it('an error in one call errors the batch and tears down its siblings', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('   -----A|');
      const b = cold('   --#');
      const calls: Record<string, Observable<string>> = { a, b };
      expectObservable(cold('(ab|)').pipe(executeToolCalls((name: string) => calls[name]!))).toBe('--#');
      expectSubscriptions(a.subscriptions).toBe('^-!');
    });
  });

  it('an empty batch completes at once', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold<string>('|').pipe(executeToolCalls((name: string) => cold(name)))).toBe('|');
    });
  });

  it('unsubscribing tears down every call in flight', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('   -----A|');
      const b = cold('   ------B|');
      const calls: Record<string, Observable<string>> = { a, b };
      expectObservable(cold('(ab|)').pipe(executeToolCalls((name: string) => calls[name]!)), '---!').toBe('-');
      expectSubscriptions(a.subscriptions).toBe('^--!');
      expectSubscriptions(b.subscriptions).toBe('^--!');
    });
  });
});
