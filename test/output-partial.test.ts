// partialOutput() and elements() in virtual time: where the JSON comes from (text in native and prompt mode, the
// final tool's arguments in tool mode), emissions only on change, a new answer per message, the validated answer
// last; elements once complete, in order, never half; errors, completion and teardown passed through.
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from 'cubepi';
import { createTestScheduler } from 'cubepi/testing';
import { elements, partialOutput } from 'cubepi/operators';
import { args, attempt, callStart, end, invalid, start, text } from './output-partial-events.js';

const scheduler = () => createTestScheduler(expect);

describe('partialOutput()', () => {
  it('native mode: a value per changed text delta; the validated answer, equal to the last, is not repeated', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-2-3-4-e-|', {
        a: attempt('native'),
        s: start(),
        1: text('{"n":"A'),
        2: text('b"'),
        3: text(' ,'), // changes nothing shown
        4: text('"k":[1]}'),
        e: end({ n: 'Ab', k: [1] }),
      });
      expectObservable(source.pipe(partialOutput())).toBe('-----x-y---z---|', {
        x: { n: 'A' },
        y: { n: 'Ab' },
        z: { n: 'Ab', k: [1] },
      });
    });
  });

  it('prompt mode: skips a sentence and a Markdown fence before the value, and the fence after it', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-2-3-e|', {
        a: attempt('prompt'),
        s: start(),
        1: text('Here it is:\n``'),
        2: text('`json\n{"ok":tr'),
        3: text('ue}\n```'),
        e: end({ ok: true }),
      });
      expectObservable(source.pipe(partialOutput())).toBe('-------x-y--|', { x: {}, y: { ok: true } });
    });
  });

  it('native mode: text that is not JSON shows nothing; the validated answer still comes at agent_end', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-e|', {
        a: attempt('native'),
        s: start(),
        1: text('Sure: {"a":1}'),
        e: end({ a: 1 }),
      });
      expectObservable(source.pipe(partialOutput())).toBe('-------x|', { x: { a: 1 } });
    });
  });

  it('tool mode: only the arguments of the call to the final tool', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-o-p-t-q-r-e|', {
        a: attempt('tool', 'answer'),
        s: start(),
        o: callStart('search', 0),
        p: args('{"q":"x"}', 0),
        t: callStart('answer', 1),
        q: args('{"n":1', 1),
        r: args('2}', 1),
        e: end({ n: 12 }),
      });
      expectObservable(source.pipe(partialOutput())).toBe('-----------x-y--|', { x: { n: 1 }, y: { n: 12 } });
    });
  });

  it('an attempt without output (a run without output) gives nothing', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-e|', { a: attempt(), s: start(), 1: text('{"a":1}'), e: end() });
      expectObservable(source.pipe(partialOutput())).toBe('--------|');
    });
  });

  it('a retry after output_invalid starts over; the validated answer (defaults applied) is emitted last', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-i-s-2-e|', {
        a: attempt('native'),
        s: start(),
        1: text('{"n":"one"}'),
        i: invalid(),
        2: text('{"n":1}'),
        e: end({ n: 1, unit: 'kg' }),
      });
      expectObservable(source.pipe(partialOutput())).toBe('-----x-----y-z|', {
        x: { n: 'one' },
        y: { n: 1 },
        z: { n: 1, unit: 'kg' },
      });
    });
  });

  it('empty completes, never stays silent, errors pass through, unsubscribing unsubscribes from the source', () => {
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      expectObservable(cold<AgentEvent>('|').pipe(partialOutput())).toBe('|');
      const never = cold<AgentEvent>('-');
      expectObservable(never.pipe(partialOutput())).toBe('-');
      expectSubscriptions(never.subscriptions).toBe('^');
      const failing = cold('-a-s-1-#', { a: attempt('native'), s: start(), 1: text('[1,') });
      expectObservable(failing.pipe(partialOutput())).toBe('-----x-#', { x: [1] });
      const endless = cold('-a-s-1-2-', { a: attempt('native'), s: start(), 1: text('[1,'), 2: text('2,') });
      expectObservable(endless.pipe(partialOutput()), '^------!').toBe('-----x-', { x: [1] });
      expectSubscriptions(endless.subscriptions).toBe('^------!');
    });
  });
});

describe('elements()', () => {
  it('emits each element of the array once it is complete (its closing brace read), in order, each once', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-2-3-4-e|', {
        a: attempt('native'),
        s: start(),
        1: text('{"items":[{"n":"x'),
        2: text('y"},{"n"'),
        3: text(':"z"}'),
        4: text(']}'),
        e: end({ items: [{ n: 'xy' }, { n: 'z' }] }),
      });
      expectObservable(source.pipe(partialOutput(), elements('items'))).toBe('-------X-Z----|', {
        X: { n: 'xy' },
        Z: { n: 'z' },
      });
    });
  });

  it('a number is complete only once something follows it: the last one at the end, when `]` closed the array', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-2-e|', {
        a: attempt('native'),
        s: start(),
        1: text('{"items":[1,2'),
        2: text(']}'), // closes the array and changes no value: no emission, yet 2 is now known complete
        e: end({ items: [1, 2] }),
      });
      expectObservable(source.pipe(partialOutput(), elements('items'))).toBe('-----a----(b|)', { a: 1, b: 2 });
    });
  });

  it('a run cut off mid-answer: its half element is never emitted', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-2-e|', {
        a: attempt('native'),
        s: start(),
        1: text('{"items":["a","b'),
        2: text('c","d'),
        e: end(),
      });
      expectObservable(source.pipe(partialOutput(), elements('items'))).toBe('-----a-b--|', { a: 'a', b: 'bc' });
    });
  });

  it('a new answer (a retry) starts over from its first element', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a-s-1-i-s-2-e|', {
        a: attempt('native'),
        s: start(),
        1: text('{"items":[1,2,'),
        i: invalid(),
        2: text('{"items":[3]}'),
        e: end({ items: [3] }),
      });
      expectObservable(source.pipe(partialOutput(), elements('items'))).toBe('-----(ab)--c--|', { a: 1, b: 2, c: 3 });
    });
  });

  it('other values: every element but the last, the last at completion; a nested path; a root array', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const nested = cold('-a-b-c|', {
        a: { plan: { steps: ['x'] } },
        b: { plan: { steps: ['x', 'y'] } },
        c: { plan: {} },
      });
      expectObservable(nested.pipe(elements('plan.steps'))).toBe('---x--(y|)');
      const root = cold('-a-b-c|', { a: [1], b: [1, 2], c: [1, 2, 3] });
      expectObservable(root.pipe(elements())).toBe('---a-b(c|)', { a: 1, b: 2, c: 3 });
    });
  });

  it('errors pass through; unsubscribing unsubscribes from the source', () => {
    scheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const failing = cold('-a-b-#', { a: [1], b: [1, 2] });
      expectObservable(failing.pipe(elements())).toBe('---a-#', { a: 1 });
      const endless = cold('-a-b-c-', { a: [1], b: [1, 2], c: [1, 2, 3] });
      expectObservable(endless.pipe(elements()), '^---!').toBe('---a', { a: 1 });
      expectSubscriptions(endless.subscriptions).toBe('^---!');
    });
  });
});
