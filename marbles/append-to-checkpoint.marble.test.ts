import { catchError, mergeMap, of, tap, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import {
  CheckpointError,
  EMPTY_USAGE,
  MemoryCheckpointer,
  textOf,
  ThreadConflictError,
  type AgentEvent,
  type AssistantMessage,
  type Message,
} from 'cubepi';
import { appendToCheckpoint, type CheckpointWriter } from 'cubepi/operators';
import { testScheduler } from './helpers.js';

const userMsg = (text: string): Message => ({ role: 'user', content: text, timestamp: 0 });
const answer: AssistantMessage = {
  role: 'assistant',
  content: [{ type: 'text', text: 'done' }],
  stopReason: 'stop',
  usage: EMPTY_USAGE,
  provider: 'p',
  model: 'm',
  timestamp: 0,
};

/** a: turn_start, u: a tool event, e/f: message_end of "one"/"two", t: turn_end. */
const events: Record<string, AgentEvent> = {
  a: { type: 'turn_start', runId: 'r', turnIndex: 0 },
  u: { type: 'tool_execution_start', runId: 'r', toolCallId: 'c', toolName: 'x', args: {} },
  v: { type: 'tool_execution_start', runId: 'r', toolCallId: 'd', toolName: 'x', args: {} },
  e: { type: 'message_end', runId: 'r', message: userMsg('one') },
  f: { type: 'message_end', runId: 'r', message: userMsg('two') },
  t: { type: 'turn_end', runId: 'r', turnIndex: 0, message: answer, toolResults: [] },
};

/** A fake store whose writes are the given cold Observables, in call order; it records every call. */
function fakeStore(appends: Observable<unknown>[], saves: Observable<unknown>[] = []) {
  const calls: unknown[] = [];
  let a = 0;
  let s = 0;
  const writer: CheckpointWriter = {
    append: (threadId, messages, options) => {
      calls.push({ append: threadId, texts: messages.map(textOf), expectedSeq: options?.expectedSeq });
      return appends[a++] as Observable<{ seq: number }>;
    },
    saveExtra: (threadId, extra) => {
      calls.push({ saveExtra: threadId, extra });
      return saves[s++]!;
    },
  };
  return { writer, calls };
}

/** Turns the stream's error into a value describing it, so a marble can show which typed error it was. */
const failure = catchError((error: unknown) =>
  of(
    error instanceof CheckpointError
      ? `${error.name} ${error.operation} ${error.threadId}: ${(error.cause as Error).message}`
      : `other: ${(error as Error).message}`,
  ),
);

describe('appendToCheckpoint', () => {
  it('takes any Checkpointer as its writer (its Promises are ObservableInputs)', () => {
    const writer: CheckpointWriter = new MemoryCheckpointer(); // the compiler checks the assignment
    expect(typeof writer.append).toBe('function');
  });

  it('stores each message_end before emitting it; the events behind a pending write wait, in order', () => {
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('  -a-e-u-----v-|', events);
      const write = cold('      ---(r|)', { r: { seq: 1 } });
      const writeSubs = '    ---^--!';
      const expected = '     -a----(eu)-v-|';
      const { writer, calls } = fakeStore([write]);
      recorded = calls;
      expectObservable(source.pipe(appendToCheckpoint(writer, 't1', { seq: 0 }))).toBe(expected, events);
      expectSubscriptions(write.subscriptions).toBe(writeSubs);
      expectSubscriptions(source.subscriptions).toBe('^------------!');
    });
    expect(recorded).toEqual([{ append: 't1', texts: ['one'], expectedSeq: 0 }]);
  });

  it('passes the seq it last wrote as expectedSeq, and reports each new seq to onAppended', () => {
    const appended: number[] = [];
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('  -e-f-|', events);
      const first = cold('    -(r|)', { r: { seq: 6 } });
      const second = cold('     -(r|)', { r: { seq: 7 } });
      const expected = '     --e-f|';
      const { writer, calls } = fakeStore([first, second]);
      recorded = calls;
      const sink = appendToCheckpoint(writer, 't1', { seq: 5, onAppended: (seq) => appended.push(seq) });
      expectObservable(source.pipe(sink)).toBe(expected, events);
    });
    expect(recorded).toEqual([
      { append: 't1', texts: ['one'], expectedSeq: 5 },
      { append: 't1', texts: ['two'], expectedSeq: 6 },
    ]);
    expect(appended).toEqual([6, 7]);
  });

  it('saves extra at every turn_end, read at that moment, before emitting it', () => {
    let turns = 0;
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('  -t-u-t--|', events);
      const save1 = cold('    --|');
      const save2 = cold('        --|');
      const expected = '     ---(tu)t|';
      const { writer, calls } = fakeStore([], [save1, save2]);
      recorded = calls;
      const sink = appendToCheckpoint(writer, 't1', { seq: 0, extra: () => ({ turns: ++turns }) });
      expectObservable(source.pipe(sink)).toBe(expected, events);
      expectSubscriptions(save1.subscriptions).toBe('-^-!');
      expectSubscriptions(save2.subscriptions).toBe('-----^-!');
    });
    expect(recorded).toEqual([
      { saveExtra: 't1', extra: { turns: 1 } },
      { saveExtra: 't1', extra: { turns: 2 } },
    ]);
  });

  it('with storedExtra, writes only a record that differs from what the store holds; onExtraSaved follows each save', () => {
    const records = [{ plan: 'pro' }, { plan: 'team' }, { plan: 'team' }, { plan: 'pro' }];
    let turn = 0;
    let recorded: unknown[] = [];
    const saved: unknown[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      // Four turn ends: the first equals the stored record (no write), the second differs (written, 2 frames), the
      // third equals what was just saved (no write), the fourth differs again.
      const source = cold('  -t-t-t-t-|', events);
      const save1 = cold('      --|');
      const save2 = cold('          --|');
      const { writer, calls } = fakeStore([], [save1, save2]);
      recorded = calls;
      const sink = appendToCheckpoint(writer, 't1', {
        seq: 0,
        extra: () => records[turn++]!,
        storedExtra: { plan: 'pro' },
        onExtraSaved: (extra) => void saved.push(extra),
      });
      expectObservable(source.pipe(sink)).toBe('-t---(tt)(t|)', events);
      expectSubscriptions(save1.subscriptions).toBe('---^-!');
      expectSubscriptions(save2.subscriptions).toBe('-------^-!');
    });
    expect(recorded).toEqual([
      { saveExtra: 't1', extra: { plan: 'team' } },
      { saveExtra: 't1', extra: { plan: 'pro' } },
    ]);
    expect(saved).toEqual([{ plan: 'team' }, { plan: 'pro' }]);
  });

  it('a failed save errors the stream, and onExtraSaved is not called for it', () => {
    let recorded: unknown[] = [];
    const saved: unknown[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const { writer, calls } = fakeStore([], [cold('-#', {}, new Error('disk full'))]);
      recorded = calls;
      const sink = appendToCheckpoint(writer, 't1', {
        seq: 0,
        extra: () => ({ plan: 'team' }),
        storedExtra: {},
        onExtraSaved: (extra) => void saved.push(extra),
      });
      expectObservable(cold('-t-t|', events).pipe(sink, failure)).toBe('--(x|)', {
        x: 'CheckpointError saveExtra t1: disk full',
      });
    });
    expect(recorded).toEqual([{ saveExtra: 't1', extra: { plan: 'team' } }]);
    expect(saved).toEqual([]);
  });

  it('saves the extra of turn_end time, though an earlier append is still pending and extra changes meanwhile', () => {
    const state: Record<string, unknown> = { step: 1, nested: { step: 1 } };
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      // e's append is pending from 1 to 6; t arrives at 3; u (at 5) changes extra in place, before t's write starts.
      const source = cold('  -e-t-u-|', events).pipe(
        tap((event) => {
          if (event.type === 'tool_execution_start') {
            state.step = 2;
            (state.nested as Record<string, unknown>).step = 2;
          }
        }),
      );
      const append = cold('   -----(r|)', { r: { seq: 1 } });
      const save = cold('           -|');
      const { writer, calls } = fakeStore([append], [save]);
      recorded = calls;
      const sink = appendToCheckpoint(writer, 't1', { seq: 0, extra: () => state });
      expectObservable(source.pipe(sink)).toBe('------e(tu|)', events);
      expectSubscriptions(save.subscriptions).toBe('------^!');
    });
    expect(recorded).toEqual([
      { append: 't1', texts: ['one'], expectedSeq: 0 },
      { saveExtra: 't1', extra: { nested: { step: 1 }, step: 1 } },
    ]);
  });

  it('saves extra as the stores encode it: functions, symbols and undefined fields dropped', () => {
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const { writer, calls } = fakeStore([], [cold('|')]);
      recorded = calls;
      const extra = () => ({ plan: 'pro', format: (n: number) => `#${n}`, tag: Symbol('x'), gone: undefined });
      expectObservable(cold('-t|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 0, extra }))).toBe(
        '-t|',
        events,
      );
    });
    expect(recorded).toEqual([{ saveExtra: 't1', extra: { plan: 'pro' } }]);
    expect(Object.keys((recorded[0] as { extra: object }).extra)).toEqual(['plan']);
  });

  it('errors with a CheckpointError (saveExtra) for an extra that cannot be encoded, behind the pending write', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const saveFailure = catchError((error: unknown) =>
      of(
        error instanceof CheckpointError
          ? `${error.name} ${error.operation} ${error.threadId}: ${error.message}`
          : `other: ${String(error)}`,
      ),
    );
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('  -e-t-u-|', events);
      const append = cold('   ---(r|)', { r: { seq: 1 } });
      const { writer, calls } = fakeStore([append]);
      recorded = calls;
      const message = 'Cannot store extra of thread "t1": it is not JSON-serialisable';
      const expected = { ...events, x: `CheckpointError saveExtra t1: ${message}` };
      // The append ahead of the failure completes and its event is emitted first; nothing after it.
      expectObservable(
        source.pipe(appendToCheckpoint(writer, 't1', { seq: 0, extra: () => ({ n: 1n }) }), saveFailure),
      ).toBe('----(ex|)', expected);
      expectSubscriptions(source.subscriptions).toBe('^--!');
      expectObservable(
        cold('-t|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 0, extra: () => cyclic }), saveFailure),
      ).toBe('-(x|)', expected);
    });
    expect(recorded).toEqual([{ append: 't1', texts: ['one'], expectedSeq: 0 }]); // saveExtra was never called
  });

  it('without an extra option, lets turn_end through at once and saves nothing', () => {
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const { writer, calls } = fakeStore([]);
      recorded = calls;
      expectObservable(cold('-t-|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 0 }))).toBe('-t-|', events);
    });
    expect(recorded).toEqual([]);
  });

  it('errors with a CheckpointError naming the thread when a write fails, and emits nothing behind it', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('  -a-e-u-|', events);
      const write = cold('      --#', undefined, new Error('disk full'));
      const expected = '     -a---(x|)';
      const { writer } = fakeStore([write]);
      expectObservable(source.pipe(appendToCheckpoint(writer, 't1', { seq: 0 }), failure)).toBe(expected, {
        ...events,
        x: 'CheckpointError append t1: disk full',
      });
      expectSubscriptions(source.subscriptions).toBe('^----!');
    });
  });

  it("errors with the store's own ThreadConflictError, unwrapped", () => {
    const conflict = new ThreadConflictError('t1', 0, 2);
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('  -e-|', events);
      const write = cold('    -#', undefined, conflict);
      const { writer } = fakeStore([write]);
      const sameError = catchError((error: unknown) => of(error === conflict ? 'the same conflict' : 'another error'));
      expectObservable(source.pipe(appendToCheckpoint(writer, 't1', { seq: 0 }), sameError)).toBe('--(x|)', {
        x: 'the same conflict',
      });
    });
  });

  it('wraps a write that throws instead of returning, and refuses one that completes without a seq', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const throwing: CheckpointWriter = {
        append: () => {
          throw new Error('not connected');
        },
        saveExtra: () => cold('|'),
      };
      expectObservable(cold('-e-|', events).pipe(appendToCheckpoint(throwing, 't1', { seq: 0 }), failure)).toBe(
        '-(x|)',
        { x: 'CheckpointError append t1: not connected' },
      );
      const { writer } = fakeStore([cold('--|')]);
      const noSeq = catchError((error: unknown) => of(`${(error as Error).name}: ${(error as Error).message}`));
      expectObservable(cold('-e-|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 0 }), noSeq)).toBe('---(x|)', {
        x: 'CheckpointError: Checkpoint append for thread "t1" completed without a seq',
      });
    });
  });

  it('errors with the error of a callback that throws (onAppended, extra), unwrapped', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const { writer } = fakeStore([cold('-(r|)', { r: { seq: 1 } })]);
      const onAppended = () => {
        throw new Error('listener bug');
      };
      const extra = () => {
        throw new Error('extra bug');
      };
      expectObservable(
        cold('-e-|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 0, onAppended }), failure),
      ).toBe('--(x|)', { x: 'other: listener bug' });
      expectObservable(cold('-t-|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 0, extra }), failure)).toBe(
        '-(x|)',
        { x: 'other: extra bug' },
      );
    });
  });

  it('passes an empty source, a never source and a source error through', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const { writer } = fakeStore([]);
      const sink = appendToCheckpoint(writer, 't1', { seq: 0 });
      expectObservable(cold<AgentEvent>('|').pipe(sink)).toBe('|');
      expectObservable(cold<AgentEvent>('-').pipe(sink)).toBe('-');
      expectObservable(cold<AgentEvent>('-a-#', events).pipe(sink)).toBe('-a-#', events);
    });
  });

  it('holds a source error behind the pending write, so what closes a failed run is still stored', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('  -e-#', events);
      const write = cold('    -----(r|)', { r: { seq: 1 } });
      const { writer } = fakeStore([write]);
      expectObservable(source.pipe(appendToCheckpoint(writer, 't1', { seq: 0 }))).toBe('------(e#)', events);
      expectSubscriptions(write.subscriptions).toBe('-^----!');
    });
  });

  it('tears down a pending write when unsubscribed', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('  -a-e-u-|', events);
      const write = cold('      -----(r|)', { r: { seq: 1 } });
      const unsub = '        -----!';
      const { writer } = fakeStore([write]);
      expectObservable(source.pipe(appendToCheckpoint(writer, 't1', { seq: 0 })), unsub).toBe('-a---', events);
      expectSubscriptions(write.subscriptions).toBe('---^-!');
      expectSubscriptions(source.subscriptions).toBe('^----!');
    });
  });

  it('does not break the unsubscription chain', () => {
    testScheduler().run(({ hot, cold, expectObservable, expectSubscriptions }) => {
      const source = hot('   -a-e-u-|', events);
      const write = cold('      -----(r|)', { r: { seq: 1 } });
      const unsub = '        -----!';
      const { writer } = fakeStore([write]);
      const result = source.pipe(
        mergeMap((event) => of(event)),
        appendToCheckpoint(writer, 't1', { seq: 0 }),
        mergeMap((event) => of(event)),
      );
      expectObservable(result, unsub).toBe('-a---', events);
      expectSubscriptions(source.subscriptions).toBe('^----!');
      expectSubscriptions(write.subscriptions).toBe('---^-!');
    });
  });

  it('starts every subscription from options.seq', () => {
    let recorded: unknown[] = [];
    testScheduler().run(({ cold, expectObservable }) => {
      const { writer, calls } = fakeStore([cold('(r|)', { r: { seq: 4 } }), cold('(r|)', { r: { seq: 4 } })]);
      recorded = calls;
      const stored$ = cold('-e|', events).pipe(appendToCheckpoint(writer, 't1', { seq: 3 }));
      expectObservable(stored$).toBe('-e|', events);
      expectObservable(stored$).toBe('-e|', events);
    });
    expect(recorded).toEqual([
      { append: 't1', texts: ['one'], expectedSeq: 3 },
      { append: 't1', texts: ['one'], expectedSeq: 3 },
    ]);
  });
});
