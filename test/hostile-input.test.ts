// Hostile input at the tool and provider boundaries (issue 15): a malformed tool result never reaches the thread, a
// thenable that throws never escapes the loop, a provider that breaks its contract ends the call as an error message.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { from, of, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ConfigurationError,
  defineTool,
  HookError,
  MemoryCheckpointer,
  MessageAssembler,
  textOf,
  type AgentEvent,
  type AgentToolResult,
  type Message,
  type Provider,
  type StreamEvent,
  type ToolResultMessage,
} from 'cubepi';
import { SQLiteCheckpointer } from 'cubepi/checkpoint/sqlite';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from './helpers.js';

/** A tool that returns `result` as it is, whatever its type says. */
function rawTool(name: string, result: () => unknown, options: { timeoutMs?: number } = {}) {
  return defineTool({
    name,
    description: 'returns what it was given',
    parameters: z.object({}),
    ...options,
    execute: () => result() as AgentToolResult,
  });
}

/** A model that calls `tool` once, then answers "done" after checking every block it was sent is well-formed. */
function scripted(tools: readonly string[]) {
  const seenByLastCall: Message[][] = [];
  const faux = new FauxProvider({
    responses: [
      fauxMessage(tools.map((name, i) => fauxToolCall(name, {}, { id: `call_${i}` }))),
      (messages) => {
        seenByLastCall.push([...messages]);
        return fauxMessage('done');
      },
    ],
  });
  return { faux, seenByLastCall };
}

const results = (messages: readonly Message[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');

function tempFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'cubepi-hostile-')), 'threads.db');
}

describe('a tool result is checked at the boundary', () => {
  const bad: [string, unknown, RegExp][] = [
    ['a null block', { content: [null] }, /content\[0\] must be a text, image or file block, got null/],
    ['a number block', { content: [42] }, /content\[0\] must be a text, image or file block, got 42/],
    ['a text block whose text is a number', { content: [{ type: 'text', text: 5 }] }, /text is 5, not a string/],
    ['an unknown block type', { content: [{ type: 'video', url: 'x' }] }, /has type "video"/],
    ['an image without data', { content: [{ type: 'image', mimeType: 'image/png' }] }, /data is undefined/],
    ['a non-boolean isError', { content: [], isError: 'yes' }, /isError must be a boolean/],
    ['details with a cycle', { content: [], details: cyclic() }, /details cannot be stored as JSON/],
    ['details with a BigInt', { content: [], details: { n: BigInt(1) } }, /details cannot be stored as JSON/],
  ];

  it.each(bad)('%s becomes an error result that says what was wrong; the next request works', async (_, raw, why) => {
    const { faux, seenByLastCall } = scripted(['bad']);
    const checkpointer = new MemoryCheckpointer();
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [rawTool('bad', () => raw)],
      checkpointer,
      threadId: 't',
    });
    const added = await agent.prompt('go');
    const [result] = results(added);
    expect(result!.isError).toBe(true);
    expect(textOf(result!)).toMatch(/^Tool bad returned an invalid result: /);
    expect(textOf(result!)).toMatch(why);
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expect(agent.state.errorMessage).toBeUndefined();
    // The model was sent a well-formed result, and the stored thread is what memory holds.
    expect(results(seenByLastCall[0]!)[0]!.content).toEqual([{ type: 'text', text: textOf(result!) }]);
    expect((await checkpointer.load('t'))!.messages).toEqual(agent.state.messages);
    expectConsistentTranscript(agent.state.messages);
  });

  it('a thread with a refused result restores in a fresh agent (SQLite) and goes on', async () => {
    const file = tempFile();
    const first = new SQLiteCheckpointer(file);
    const { faux } = scripted(['bad', 'good']);
    const good = rawTool('good', () => 'fine');
    await new Agent({
      provider: faux,
      model: 'faux',
      tools: [rawTool('bad', () => ({ content: [null, { type: 'text', text: 5 }] })), good],
      checkpointer: first,
      threadId: 't',
    }).prompt('go');
    await first.close();

    const reopened = new SQLiteCheckpointer(file);
    const later = new Agent({
      provider: new FauxProvider({ responses: [fauxMessage('again')] }),
      model: 'faux',
      checkpointer: reopened,
      threadId: 't',
    });
    const added = await later.prompt('more');
    expect(added.map(textOf)).toEqual(['more', 'again']);
    const stored = results(later.state.messages);
    expect(stored.map((m) => [m.toolName, m.isError])).toEqual([
      ['bad', true],
      ['good', false],
    ]);
    expect(textOf(stored[0]!)).toMatch(/content\[0\] .* got null; content\[1\] is a text block whose text is 5/);
    await reopened.close();
  });

  it('an afterToolCall that answers malformed content is a HookError, and nothing malformed is stored', async () => {
    const { faux } = scripted(['good']);
    const checkpointer = new MemoryCheckpointer();
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [rawTool('good', () => 'fine')],
      middleware: [{ name: 'breaker', afterToolCall: () => ({ content: [null as never] }) }],
      checkpointer,
      threadId: 't',
    });
    const error: unknown = await agent.prompt('go').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(HookError);
    expect((error as HookError).message).toMatch(/breaker.*afterToolCall/);
    expect(String((error as HookError).cause)).toMatch(/content\[0\] must be a text, image or file block, got null/);
    const stored = (await checkpointer.load('t'))!.messages;
    expect(stored).toEqual(agent.state.messages);
    expectConsistentTranscript(stored);
    for (const message of results(stored)) for (const block of message.content) expect(block).toBeTypeOf('object');
  });

  it('a wrapper that answers in the tool’s place with a malformed result gives an error result', async () => {
    const { faux } = scripted(['good']);
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [rawTool('good', () => 'fine')],
      middleware: [
        {
          name: 'bad-cache',
          phase: 'cache',
          nextCalls: 'at-most-once',
          wrapToolCall: (() => of({ result: { content: [{ type: 'text', text: null }] }, isError: false })) as never,
        },
      ],
    });
    const [result] = results(await agent.prompt('go'));
    expect(result!.isError).toBe(true);
    expect(textOf(result!)).toMatch(/through wrapToolCall\) produced an invalid result: content\[0\] is a text block/);
  });
});

describe('a thenable whose then throws', () => {
  const throwingThen = () => ({
    then() {
      throw new Error('then exploded');
    },
  });
  const throwingGetter = () =>
    Object.defineProperty({}, 'then', {
      get() {
        throw new Error('then getter exploded');
      },
    });

  it.each([
    ['a throwing then, alone', throwingThen, 1, {}],
    ['a throwing then, in a parallel batch', throwingThen, 2, {}],
    ['a throwing then, with a timeout', throwingThen, 1, { timeoutMs: 1_000 }],
    ['a then getter that throws', throwingGetter, 1, {}],
  ] as const)('%s: the tool gets an error result and the run ends', async (_, make, count, options) => {
    const names = Array.from({ length: count }, (_x, i) => `t${i}`);
    const { faux } = scripted(names);
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: names.map((name) => rawTool(name, make, options)),
    });
    const added = await agent.prompt('go');
    const found = results(added);
    expect(found).toHaveLength(count);
    for (const result of found) {
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/exploded/);
    }
    expect(added.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    expectConsistentTranscript(agent.state.messages);
  });

  it('from a hook, it is a HookError (unchanged)', async () => {
    const { faux } = scripted([]);
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      middleware: [{ name: 'thenable', transformSystemPrompt: () => throwingThen() }],
    });
    await expect(agent.prompt('go')).rejects.toBeInstanceOf(HookError);
  });
});

describe('a provider whose stream() is not an Observable', () => {
  const broken = (value: unknown): Provider => ({
    id: 'broken',
    stream: () => value as Observable<StreamEvent>,
  });

  it.each([
    ['a Promise', Promise.resolve({ type: 'done' }), 'a Promise'],
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined'],
    ['a plain object', { type: 'done' }, 'object'],
  ])('%s: the call ends as an error message naming the broken contract', async (_, value, kind) => {
    const events: AgentEvent[] = [];
    const agent = new Agent({ provider: broken(value), model: 'faux' });
    agent.subscribe((event) => void events.push(event));
    const added = await agent.prompt('go');
    const last = added.at(-1)!;
    expect(last).toMatchObject({ role: 'assistant', stopReason: 'error', errorKind: 'unknown' });
    expect(last.role === 'assistant' && last.errorMessage).toBe(
      `Provider broken broke its contract: stream() must return an Observable, got ${kind}`,
    );
    expect(agent.state.errorMessage).toMatch(/must return an Observable/);
    expect(events.at(-1)?.type).toBe('agent_end');
  });

  it('also under a wrapper (the innermost call)', async () => {
    const agent = new Agent({
      provider: broken(null),
      model: 'faux',
      middleware: [{ name: 'observe', phase: 'observe', wrapModelCall: (request, _ctx, next) => next(request) }],
    });
    const last = (await agent.prompt('go')).at(-1)!;
    expect(last.role === 'assistant' && last.errorMessage).toMatch(/must return an Observable, got null/);
  });
});

describe('a provider stream that breaks its contract (issue 36)', () => {
  const asm = () => new MessageAssembler({ provider: 'broken', model: 'faux', timestamp: 1 });
  const streaming = (events: () => unknown[]): Provider => ({
    id: 'broken',
    stream: () => from(events()) as Observable<StreamEvent>,
  });
  const cases: [string, () => unknown[], string, unknown[]][] = [
    [
      'a value that is not an event',
      () => {
        const a = asm();
        return [a.start(), a.startText(), a.textDelta(0, 'Hel'), [], a.endText(0), a.done('stop')];
      },
      'Provider broken broke its contract: emitted an array, which is not a stream event',
      [{ type: 'text', text: 'Hel' }],
    ],
    [
      'a final message with a null block',
      () => {
        const a = asm();
        const events: unknown[] = [a.start(), a.startText(), a.textDelta(0, 'Hi'), a.endText(0)];
        const done = a.done('stop');
        return [...events, { ...done, message: { ...done.message, content: [...done.message.content, null] } }];
      },
      'Provider broken broke its contract: emitted done whose message is not a valid assistant message: ' +
        'content[1] must be a text, thinking or toolCall block, got null',
      [{ type: 'text', text: 'Hi' }],
    ],
    [
      'an unknown stopReason',
      () => {
        const a = asm();
        const done = a.done('stop');
        return [a.start(), { ...done, message: { ...done.message, stopReason: 'finished' } }];
      },
      'Provider broken broke its contract: emitted done whose message is not a valid assistant message: ' +
        'stopReason "finished" is not a stop reason',
      [],
    ],
    [
      'a block event re-indexed past its snapshot',
      () => {
        const a = asm();
        return [a.start(), a.startText(), { ...a.textDelta(0, 'x'), contentIndex: 3 }, a.endText(0), a.done('stop')];
      },
      'Provider broken broke its contract: emitted text_delta at contentIndex 3, not a text block of its partial (1 blocks)',
      [{ type: 'text', text: '' }],
    ],
    [
      'a second terminal event',
      () => {
        const a = asm();
        const events = [a.start(), a.startText(), a.textDelta(0, 'x'), a.endText(0), a.done('stop')];
        return [...events, events.at(-1)];
      },
      'Provider broken broke its contract: emitted an event of type "done" after its terminal event',
      [{ type: 'text', text: 'x' }],
    ],
  ];

  it.each(cases)(
    '%s: an error message naming the rule, what was valid kept; nothing malformed stored; the thread goes on',
    async (_, events, errorMessage, content) => {
      const checkpointer = new MemoryCheckpointer();
      const seen: AgentEvent[] = [];
      const agent = new Agent({ provider: streaming(events), model: 'faux', checkpointer, threadId: 'b' });
      agent.subscribe((event) => void seen.push(event));
      const last = (await agent.prompt('go')).at(-1)!;
      expect(last).toMatchObject({
        role: 'assistant',
        stopReason: 'error',
        errorKind: 'unknown',
        errorMessage,
        content,
      });
      expect(seen.filter((e) => e.type === 'message_start')).toHaveLength(2);
      expect(seen.filter((e) => e.type === 'message_end')).toHaveLength(2);
      expect(seen.map((e) => e.type).slice(-2)).toEqual(['turn_end', 'agent_end']);
      expect((await checkpointer.load('b'))!.messages).toEqual([expect.objectContaining({ role: 'user' }), last]);
      // A clean provider on the restored thread answers.
      const next = new Agent({
        provider: new FauxProvider({ responses: [fauxMessage('ok')] }),
        model: 'faux',
        checkpointer,
        threadId: 'b',
      });
      expect((await next.prompt('again')).at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
    },
  );
});

describe('thread ids', () => {
  it.each([
    ['not well-formed', 'user-\ud800', /unpaired surrogate/],
    ['with U+0000', 'a\u0000b', /U\+0000/],
    ['too long', 'x'.repeat(513), /at most 512/],
    ['empty', '', /a `checkpointer` needs a `threadId`|must not be empty/],
  ])('an Agent with a thread id %s is a ConfigurationError at construction', (_, threadId, why) => {
    const make = () =>
      new Agent({
        provider: new FauxProvider(),
        model: 'faux',
        checkpointer: new MemoryCheckpointer(),
        threadId,
      });
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(why);
  });
});

function cyclic(): unknown {
  const node: Record<string, unknown> = { name: 'loop' };
  node.self = node;
  return node;
}
