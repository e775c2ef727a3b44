// UI operators: throttleDeltas (merge deltas, nothing lost or reordered), assembleMessages (the list a chat renders),
// toolActivity (calls in flight), in virtual time.
import { asyncScheduler, ignoreElements, Observable, type OperatorFunction } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, EMPTY_USAGE, type AgentEvent, type AssistantMessage, type Message } from 'cubepi';
import {
  assembleMessages,
  numberEvents,
  throttleDeltas,
  toAgUiEvents,
  toolActivity,
  toUIMessageStream,
} from 'cubepi/operators';
import { assistant, testScheduler, user } from './helpers.js';

const snap = (text: string): AssistantMessage => assistant(text);
const update = (
  delta: string,
  so_far: string,
  contentIndex = 0,
  type: 'text_delta' | 'thinking_delta' = 'text_delta',
  runId = 'r',
): AgentEvent => ({
  type: 'message_update',
  runId,
  message: snap(so_far),
  streamEvent: { type, contentIndex, delta, partial: snap(so_far) },
});
const end: AgentEvent = { type: 'message_end', runId: 'r', message: snap('abcd') };

describe('throttleDeltas', () => {
  it('merges the deltas of one block until ms after the first, or until another event; nothing lost or reordered', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a-b-c-----d-E---|', {
        a: update('a', 'a'),
        b: update('b', 'ab'),
        c: update('c', 'abc'),
        d: update('d', 'abcd'),
        E: end,
      });
      expectObservable(source.pipe(throttleDeltas(5))).toBe('------x------(yE)|', {
        x: update('abc', 'abc'),
        y: update('d', 'abcd'),
        E: end,
      });
    });
  });

  it('a delta of another block (or run, or kind) flushes the held one first', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a-b-t-|', {
        a: update('a', 'a', 0),
        b: update('b', 'ab', 1),
        t: update('hm', 'ab', 1, 'thinking_delta'),
      });
      expectObservable(source.pipe(throttleDeltas(100))).toBe('---a-b-(t|)', {
        a: update('a', 'a', 0),
        b: update('b', 'ab', 1),
        t: update('hm', 'ab', 1, 'thinking_delta'),
      });
    });
  });

  it('flushes before an error; unsubscribing drops the timer (nothing emitted after)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const failing = cold<AgentEvent>('-a-#', { a: update('a', 'a') }, new Error('boom'));
      expectObservable(failing.pipe(throttleDeltas(10))).toBe('---(a#)', { a: update('a', 'a') }, new Error('boom'));
      const endless = cold<AgentEvent>('-a-b-', { a: update('a', 'a'), b: update('b', 'ab') });
      expectObservable(endless.pipe(throttleDeltas(10)), '^--!').toBe('');
    });
  });

  it('over 200 random streams of two blocks: the text of each block is the same, fewer events, order kept', () => {
    for (let seed = 1; seed <= 200; seed++) {
      let x = seed;
      const random = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
      const sent: string[][] = [[], []];
      const got: string[][] = [[], []];
      let inputs = 0;
      let outputs = 0;
      testScheduler().run(() => {
        const source = new Observable<AgentEvent>((subscriber) => {
          let at = 0;
          const count = 1 + Math.floor(random() * 40);
          for (let i = 0; i < count; i++) {
            at += Math.floor(random() * 4);
            const block = random() < 0.3 ? 1 : 0;
            const delta = `${i}.`;
            sent[block]!.push(delta);
            asyncScheduler.schedule(() => subscriber.next(update(delta, '', block)), at);
          }
          inputs = count;
          asyncScheduler.schedule(() => subscriber.complete(), at + Math.floor(random() * 4));
        });
        source.pipe(throttleDeltas(3)).subscribe((event) => {
          outputs++;
          if (event.type === 'message_update' && event.streamEvent.type === 'text_delta') {
            got[event.streamEvent.contentIndex]!.push(event.streamEvent.delta);
          }
        });
      });
      expect(
        got.map((d) => d.join('')),
        `seed ${seed}`,
      ).toEqual(sent.map((d) => d.join('')));
      // Order within a block is kept: the joined deltas list the indices in increasing order.
      for (const block of got) {
        const indices = block.join('').split('.').filter(Boolean).map(Number);
        expect(indices).toEqual([...indices].sort((m, n) => m - n));
      }
      expect(outputs).toBeLessThanOrEqual(inputs);
    }
  });
});

describe('assembleMessages', () => {
  it('the history first, then each message added, the streaming one updated in place and replaced at its end', () => {
    const history: Message[] = [user('earlier')];
    const prompt = user('hi');
    const m0 = snap('');
    const m1 = snap('he');
    const final = snap('hello');
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a-p-P-s-u-e-|', {
        a: { type: 'agent_start', runId: 'r' },
        p: { type: 'message_start', runId: 'r', message: prompt },
        P: { type: 'message_end', runId: 'r', message: prompt },
        s: { type: 'message_start', runId: 'r', message: m0 },
        u: {
          type: 'message_update',
          runId: 'r',
          message: m1,
          streamEvent: { type: 'text_delta', contentIndex: 0, delta: 'he', partial: m1 },
        },
        e: { type: 'message_end', runId: 'r', message: final },
      });
      expectObservable(source.pipe(assembleMessages(history))).toBe('h--p---s-u-e-|', {
        h: history,
        p: [...history, prompt],
        s: [...history, prompt, m0],
        u: [...history, prompt, m1],
        e: [...history, prompt, final],
      });
    });
  });

  it("a run taken over after its worker was lost keeps the text it showed until the new attempt's first delta; other runs keep theirs", () => {
    const prompt = user('hi');
    const cut = snap('hel');
    const other = snap('o');
    const again = snap('');
    const first = snap('h');
    const final = snap('hello');
    const textStart: AgentEvent = {
      type: 'message_update',
      runId: 'r',
      message: again,
      streamEvent: { type: 'text_start', contentIndex: 0, partial: again },
    };
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-p-s-o-R-a-S-t-u-e-|', {
        p: { type: 'message_start', runId: 'r', message: prompt },
        s: { type: 'message_start', runId: 'r', message: cut },
        o: { type: 'message_start', runId: 'q', message: other },
        R: { type: 'run_recovering', runId: 'r', attempt: 2 },
        a: { type: 'agent_start', runId: 'r' },
        S: { type: 'message_start', runId: 'r', message: again },
        t: textStart,
        u: update('h', 'h'),
        e: { type: 'message_end', runId: 'r', message: final },
      });
      // R, a, S and t change nothing on screen: "hel" stays, in its place, until the first delta replaces it.
      expectObservable(source.pipe(assembleMessages())).toBe('ip-s-o---------u-e-|', {
        i: [],
        p: [prompt],
        s: [prompt, cut],
        o: [prompt, cut, other],
        u: [prompt, first, other],
        e: [prompt, final, other],
      });
    });
  });

  it('a run taken over that streams no delta replaces the stale message at its end; one that adds none drops it at agent_end', () => {
    const cut = snap('hel');
    const other = snap('o');
    const whole = snap('hello');
    const end = (runId: string): AgentEvent => ({
      type: 'agent_end',
      runId,
      messages: [],
      outcome: 'completed',
      usage: EMPTY_USAGE,
    });
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-s-c-a-S-e-A-|', {
        s: { type: 'message_start', runId: 'r', message: cut },
        c: { type: 'message_start', runId: 'q', message: snap('q') },
        a: { type: 'agent_start', runId: 'r' },
        S: { type: 'message_start', runId: 'r', message: snap('') },
        e: { type: 'message_end', runId: 'r', message: whole },
        A: end('r'),
      });
      expectObservable(source.pipe(assembleMessages())).toBe('is-c-----e---|', {
        i: [],
        s: [cut],
        c: [cut, snap('q')],
        e: [whole, snap('q')],
      });
    });
    testScheduler().run(({ cold, expectObservable }) => {
      // Lost twice: the second restart keeps the first attempt's text; the last attempt adds nothing, and it goes.
      const source = cold<AgentEvent>('-s-o-R-S-R-A-|', {
        s: { type: 'message_start', runId: 'r', message: cut },
        o: { type: 'message_start', runId: 'q', message: other },
        R: { type: 'run_recovering', runId: 'r', attempt: 2 },
        S: { type: 'message_start', runId: 'r', message: snap('') },
        A: end('r'),
      });
      expectObservable(source.pipe(assembleMessages())).toBe('is-o-------A-|', {
        i: [],
        s: [cut],
        o: [cut, other],
        A: [other],
      });
    });
  });

  it('emissions are frozen and share what did not change; two interleaved runs are kept apart', () => {
    const seen: (readonly Message[])[] = [];
    const a0 = snap('a');
    const b0 = snap('b');
    testScheduler().run(({ cold }) => {
      cold<AgentEvent>('-x-y-X-Y-|', {
        x: { type: 'message_start', runId: 'A', message: a0 },
        y: { type: 'message_start', runId: 'B', message: b0 },
        X: { type: 'message_end', runId: 'A', message: snap('a!') },
        Y: { type: 'message_end', runId: 'B', message: snap('b!') },
      })
        .pipe(assembleMessages())
        .subscribe((list) => seen.push(list));
    });
    expect(seen.map((list) => list.map((m) => (m as AssistantMessage).content[0]))).toEqual([
      [],
      [{ type: 'text', text: 'a' }],
      [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
      [
        { type: 'text', text: 'a!' },
        { type: 'text', text: 'b' },
      ],
      [
        { type: 'text', text: 'a!' },
        { type: 'text', text: 'b!' },
      ],
    ]);
    expect(seen.every((list) => Object.isFrozen(list))).toBe(true);
    expect(seen[3]![1]).toBe(seen[2]![1]); // B's message untouched by A's end: the same object
  });
});

describe('toolActivity', () => {
  it('a call appears at its start, carries its latest progress, and is gone at its end', () => {
    const progress = { content: [{ type: 'text' as const, text: '50%' }] };
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-s-u-e-|', {
        s: { type: 'tool_execution_start', runId: 'r', toolCallId: 'c1', toolName: 'fetch', args: { url: 'x' } },
        u: { type: 'tool_execution_update', runId: 'r', toolCallId: 'c1', toolName: 'fetch', partialResult: progress },
        e: {
          type: 'tool_execution_end',
          runId: 'r',
          toolCallId: 'c1',
          toolName: 'fetch',
          result: progress,
          isError: false,
          outcome: 'ok',
        },
      });
      const running = { runId: 'r', toolCallId: 'c1', toolName: 'fetch', args: { url: 'x' }, status: 'running' };
      expectObservable(source.pipe(toolActivity())).toBe('ns-u-n-|', {
        n: [],
        s: [running],
        u: [{ ...running, progress }],
      });
    });
  });

  it("a held call (started, then held) waits past its run's end; the resumed run's start replaces it", () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-b-q-E-s-|', {
        b: { type: 'tool_execution_start', runId: 'r1', toolCallId: 'c1', toolName: 'pay', args: { amount: 5 } },
        q: {
          type: 'approval_requested',
          runId: 'r1',
          requestId: 'r1:c1',
          toolCallId: 'c1',
          toolName: 'pay',
          args: { amount: 5 },
          reason: 'needs approval',
        },
        E: { type: 'agent_end', runId: 'r1', messages: [], outcome: 'suspended', usage: EMPTY_USAGE },
        s: { type: 'tool_execution_start', runId: 'r2', toolCallId: 'c1', toolName: 'pay', args: { amount: 5 } },
      });
      const waiting = {
        runId: 'r1',
        toolCallId: 'c1',
        toolName: 'pay',
        args: { amount: 5 },
        status: 'awaiting_approval',
        approval: { requestId: 'r1:c1', reason: 'needs approval' },
      };
      expectObservable(source.pipe(toolActivity())).toBe('nb-q---s-|', {
        n: [],
        b: [{ runId: 'r1', toolCallId: 'c1', toolName: 'pay', args: { amount: 5 }, status: 'running' }],
        q: [waiting],
        s: [{ runId: 'r2', toolCallId: 'c1', toolName: 'pay', args: { amount: 5 }, status: 'running' }],
      });
    });
  });
});

it('throttleDeltas refuses a bad interval', () => {
  expect(() => throttleDeltas(-1)).toThrow(ConfigurationError);
  expect(() => throttleDeltas(Number.NaN)).toThrow(ConfigurationError);
});

it.each([
  ['assembleMessages', () => assembleMessages()],
  ['toolActivity', () => toolActivity()],
  ['throttleDeltas', () => throttleDeltas(10)],
  ['toUIMessageStream', () => toUIMessageStream()],
  ['toAgUiEvents', () => toAgUiEvents()],
] as const)('unsubscribing from %s unsubscribes its source at that frame', (_, make) => {
  testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold<AgentEvent>('-a-b---', {
      a: { type: 'agent_start', runId: 'r' },
      b: update('b', 'b'),
    });
    const operator = make() as OperatorFunction<AgentEvent, unknown>;
    expectObservable(source.pipe(operator, ignoreElements()), '^--!').toBe('');
    expectSubscriptions(source.subscriptions).toBe('^--!');
  });
});

describe('numberEvents', () => {
  it('numbers each event from 1, per subscription; errors pass through', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold<AgentEvent>('-a-b-#', { a: end, b: update('x', 'x') });
      const numbered = source.pipe(numberEvents());
      expectObservable(numbered).toBe('-a-b-#', { a: { ...end, seq: 1 }, b: { ...update('x', 'x'), seq: 2 } });
      // A second subscription counts from 1 again.
      expectObservable(numbered, '---^').toBe('----a-b-#', {
        a: { ...end, seq: 1 },
        b: { ...update('x', 'x'), seq: 2 },
      });
    });
  });
});
