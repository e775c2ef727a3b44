import { describe, expect, it } from 'vitest';
import { computeUsage, MessageAssembler, type StreamEvent, type ToolCall } from 'cubepi';

describe('MessageAssembler', () => {
  it('builds a message block by block and emits one event per step', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm', timestamp: 1 });
    const events: StreamEvent[] = [asm.start()];
    events.push(asm.startThinking());
    events.push(asm.thinkingDelta(0, 'hmm'));
    asm.appendSignature(0, 'sig');
    events.push(asm.endThinking(0));
    events.push(asm.startText());
    events.push(asm.textDelta(1, 'Hel'), asm.textDelta(1, 'lo'));
    events.push(asm.endText(1));
    events.push(asm.startToolCall('c1', 'echo'));
    events.push(asm.toolCallDelta(2, '{"i":'), asm.toolCallDelta(2, '4}'));
    events.push(asm.endToolCall(2));
    asm.setUsage(computeUsage({ input: 3, output: 5 }));
    events.push(asm.done('toolUse'));

    expect(events.map((e) => e.type)).toEqual([
      'start',
      'thinking_start',
      'thinking_delta',
      'thinking_end',
      'text_start',
      'text_delta',
      'text_delta',
      'text_end',
      'toolcall_start',
      'toolcall_delta',
      'toolcall_delta',
      'toolcall_end',
      'done',
    ]);
    const done = events.at(-1)!;
    expect(done.type === 'done' && done.message).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 'sig' },
        { type: 'text', text: 'Hello' },
        { type: 'toolCall', id: 'c1', name: 'echo', arguments: { i: 4 } },
      ],
      stopReason: 'toolUse',
      usage: computeUsage({ input: 3, output: 5 }),
      provider: 'p',
      model: 'm',
      timestamp: 1,
    });
  });

  it('hands out immutable snapshots: a later delta never changes an earlier partial', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startText();
    const first = asm.textDelta(0, 'a').partial;
    const second = asm.textDelta(0, 'b').partial;
    expect(first.content).toEqual([{ type: 'text', text: 'a' }]);
    expect(second.content).toEqual([{ type: 'text', text: 'ab' }]);
    expect(first).not.toBe(second);
  });

  it('copies only the changed block: unchanged blocks are shared between snapshots (O(blocks), not O(text))', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startText();
    asm.textDelta(0, 'x'.repeat(10_000));
    asm.endText(0);
    asm.startText();
    const before = asm.textDelta(1, 'a').partial;
    const after = asm.textDelta(1, 'b').partial;
    expect(after.content[0]).toBe(before.content[0]);
    expect(after.content[1]).not.toBe(before.content[1]);
  });

  it('keeps every character across a long stream of deltas in interleaved blocks', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startThinking();
    asm.startText();
    asm.startToolCall('c1', 'echo');
    asm.toolCallDelta(2, '{"s":"');
    let expected = '';
    let partial = asm.textDelta(1, '').partial;
    for (let i = 0; i < 20_000; i++) {
      const piece = String.fromCharCode(97 + (i % 26)) + (i % 1000 === 0 ? String(i) : '');
      expected += piece;
      asm.thinkingDelta(0, piece);
      asm.toolCallDelta(2, piece);
      partial = asm.textDelta(1, piece).partial;
    }
    asm.toolCallDelta(2, '"}');
    expect(partial.content[1]).toEqual({ type: 'text', text: expected });
    const done = asm.done('toolUse');
    expect(done.type === 'done' && done.message.content).toEqual([
      { type: 'thinking', thinking: expected },
      { type: 'text', text: expected },
      { type: 'toolCall', id: 'c1', name: 'echo', arguments: { s: expected } },
    ]);
  });

  it('previews tool arguments tolerantly, then parses them strictly at the end', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startToolCall('c', 'search');
    const preview = asm.toolCallDelta(0, '{"query":"cats","li').partial.content[0];
    expect(preview).toEqual({ type: 'toolCall', id: 'c', name: 'search', arguments: { query: 'cats' } });
    asm.toolCallDelta(0, 'mit":3}');
    const end = asm.endToolCall(0);
    expect(end.toolCall).toEqual({ type: 'toolCall', id: 'c', name: 'search', arguments: { query: 'cats', limit: 3 } });
  });

  it('gives an argument text of up to 4 KB a fresh preview on every delta', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startToolCall('c', 'write');
    let raw = '{"s":"';
    asm.toolCallDelta(0, raw);
    let text = '';
    while (raw.length + 7 <= 4096) {
      const piece = 'abcdefg';
      raw += piece;
      text += piece;
      const block = asm.toolCallDelta(0, piece).partial.content[0];
      expect(block).toEqual({ type: 'toolCall', id: 'c', name: 'write', arguments: { s: text } });
    }
    expect(raw.length).toBeGreaterThan(4080);
  });

  it('parses the preview of a long argument again only every 1/16 of growth past 4 KB, and strictly at the end', () => {
    const prefix = '{"path":"a","content":"';
    const json = JSON.stringify({ path: 'a', content: 'x'.repeat(200_000 - prefix.length - 2) });
    expect(json.startsWith(prefix)).toBe(true);
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startToolCall('c', 'write');
    // Each preview parse makes a new `arguments` object; a delta without one keeps the previous object.
    const previews = new Set<unknown>();
    const longPreviews = new Set<unknown>();
    let deltas = 0;
    for (let end = 20; end <= json.length; end += 20) {
      const block = asm.toolCallDelta(0, json.slice(end - 20, end)).partial.content[0] as ToolCall;
      deltas++;
      previews.add(block.arguments);
      if (end > 4096) {
        longPreviews.add(block.arguments);
        // Never staler than 1/16 of the text: the preview holds all but the last raw.length / 16 characters.
        const content = (block.arguments as { content: string }).content;
        expect(content.length).toBeGreaterThanOrEqual(end - prefix.length - end / 16);
      }
    }
    expect(deltas).toBe(10_000);
    // ~205 deltas up to 4 KB, then one parse per 1/16 of growth: log(200,000 / 4,096) / log(17/16) ≈ 64.
    expect(longPreviews.size).toBeLessThan(100);
    expect(previews.size).toBeLessThan(300);
    expect(asm.endToolCall(0).toolCall).toEqual({
      type: 'toolCall',
      id: 'c',
      name: 'write',
      arguments: JSON.parse(json) as unknown,
    });
  });

  it('marks a call whose argument text is not valid JSON, keeping the raw text', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startToolCall('c', 'search');
    asm.toolCallDelta(0, '{"query": "cats"');
    expect(asm.endToolCall(0).toolCall).toEqual({
      type: 'toolCall',
      id: 'c',
      name: 'search',
      arguments: {},
      invalidArguments: '{"query": "cats"',
    });
  });

  it('treats an empty argument text as no arguments (Anthropic streams "" for a call without input)', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startToolCall('c', 'now');
    asm.toolCallDelta(0, '');
    expect(asm.endToolCall(0).toolCall.arguments).toEqual({});
  });

  it('takes a call that arrives whole: its arguments from the start, kept as they are at the end (no parse)', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    const args = { city: 'Paris', days: [1, 2] };
    const start = asm.startToolCall('c', 'weather', args);
    expect(start.partial.content).toEqual([{ type: 'toolCall', id: 'c', name: 'weather', arguments: args }]);
    const end = asm.endToolCall(0);
    expect(end.toolCall).toEqual({ type: 'toolCall', id: 'c', name: 'weather', arguments: args });
    expect(end.toolCall.arguments).toBe(args);
    const done = asm.done('toolUse');
    expect(done.message.content).toEqual([{ type: 'toolCall', id: 'c', name: 'weather', arguments: args }]);
    // A whole call left open by the terminal event keeps its arguments too (nothing to parse).
    const open = new MessageAssembler({ provider: 'p', model: 'm' });
    open.startToolCall('d', 'weather', args);
    expect(open.error('unavailable', 'lost').message.content).toEqual([
      { type: 'toolCall', id: 'd', name: 'weather', arguments: args },
    ]);
  });

  it('refuses whole-call arguments that are not a plain object', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    for (const bad of [null, [1], 'x', 3]) {
      expect(() => asm.startToolCall('c', 'weather', bad as never)).toThrow(
        /startToolCall: the arguments of weather must be a plain object/,
      );
    }
  });

  it('an error keeps the content so far and parses calls left open strictly', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.start();
    asm.startText();
    asm.textDelta(0, 'partial');
    asm.startToolCall('c', 'echo');
    asm.toolCallDelta(1, '{"i":1');
    const error = asm.error('unavailable', 'connection reset', 2000);
    expect(error).toMatchObject({ type: 'error', errorKind: 'unavailable', retryAfterMs: 2000 });
    expect(error.message).toMatchObject({
      stopReason: 'error',
      errorMessage: 'connection reset',
      errorKind: 'unavailable',
      content: [
        { type: 'text', text: 'partial' },
        { type: 'toolCall', id: 'c', invalidArguments: '{"i":1' },
      ],
    });
  });

  it('an aborted error has stopReason aborted', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    expect(asm.error('aborted', 'Request aborted').message.stopReason).toBe('aborted');
  });

  it('refuses a delta for a block that is not there', () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.startText();
    expect(() => asm.thinkingDelta(0, 'x')).toThrow(/no thinking block at index 0/);
    expect(() => asm.textDelta(1, 'x')).toThrow(/no text block at index 1/);
    asm.startThinking();
    expect(() => asm.textDelta(1, 'x')).toThrow(/no text block at index 1/);
    expect(asm.partial.content).toEqual([
      { type: 'text', text: '' },
      { type: 'thinking', thinking: '' },
    ]);
  });

  it("keeps a text block's signature on the deltas after it was set", () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.startText();
    asm.textDelta(0, 'a');
    asm.setTextSignature(0, 'sig');
    expect(asm.textDelta(0, 'b').partial.content).toEqual([{ type: 'text', text: 'ab', signature: 'sig' }]);
    expect(asm.endText(0).partial.content).toEqual([{ type: 'text', text: 'ab', signature: 'sig' }]);
  });

  it("keeps a tool call's signature through its deltas, the strict parse, a whole call and an invalid one", () => {
    const asm = new MessageAssembler({ provider: 'p', model: 'm' });
    asm.startToolCall('c1', 'f');
    asm.setToolCallSignature(0, 'sig-1');
    expect(asm.toolCallDelta(0, '{"a":').partial.content[0]).toMatchObject({ signature: 'sig-1' });
    asm.toolCallDelta(0, '1}');
    expect(asm.endToolCall(0).toolCall).toEqual({
      type: 'toolCall',
      id: 'c1',
      name: 'f',
      arguments: { a: 1 },
      signature: 'sig-1',
    });
    asm.startToolCall('c2', 'g', { b: 2 });
    asm.setToolCallSignature(1, 'sig-2');
    expect(asm.endToolCall(1).toolCall).toEqual({
      type: 'toolCall',
      id: 'c2',
      name: 'g',
      arguments: { b: 2 },
      signature: 'sig-2',
    });
    asm.startToolCall('c3', 'h');
    asm.setToolCallSignature(2, 'sig-3');
    asm.toolCallDelta(2, '[1]');
    expect(asm.done('toolUse').message.content[2]).toEqual({
      type: 'toolCall',
      id: 'c3',
      name: 'h',
      arguments: {},
      invalidArguments: '[1]',
      signature: 'sig-3',
    });
    expect(() => asm.setToolCallSignature(5, 'x')).toThrow(/no toolCall block at index 5/);
  });
});
