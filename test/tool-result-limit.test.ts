// ToolResultLimit (issue 31, execution sessions): tool text over a limit is cut with a marker the model sees, before
// afterToolCall runs, so it composes with RedactToolResults in either order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ConfigurationError,
  defineTool,
  limitToolResult,
  RedactToolResults,
  ToolResultLimit,
  type AgentToolResult,
  type Message,
  type Middleware,
  type Model,
  type ToolResultContent,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

const MODEL: Model = { id: 'faux', provider: 'faux', contextWindow: 1_000_000, maxTokens: 100 };
const IMAGE: ToolResultContent = { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' };

/** A run where the tool `dump` returns `text` (and an image, and details); what the model was sent next. */
async function runWith(text: string, middleware: readonly Middleware[]) {
  const dump = defineTool({
    name: 'dump',
    description: 'Dumps a file',
    parameters: z.object({}),
    execute: async () => ({ content: [{ type: 'text', text }, IMAGE], details: { bytes: text.length } }),
  });
  const sent: Message[][] = [];
  const faux = new FauxProvider();
  faux.setResponses([
    fauxMessage([fauxToolCall('dump', {}, { id: 'd1' })]),
    (messages: readonly Message[]) => {
      sent.push(messages.slice());
      return fauxMessage('read it');
    },
  ]);
  const agent = new Agent({ provider: faux, model: MODEL, tools: [dump], middleware });
  const added = await agent.prompt('show me the file');
  const stored = added.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
  const seen = sent[0]!.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
  return { stored, seen };
}

const textOf = (content: readonly ToolResultContent[]) =>
  content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`)).join('|');

describe('ToolResultLimit', () => {
  it('cuts a long result to the limit with a marker the model sees; the stored result is the cut one', async () => {
    const text = 'a'.repeat(1_000) + 'b'.repeat(99_000);
    const { stored, seen } = await runWith(text, [new ToolResultLimit({ maxChars: 1_000 })]);
    expect(textOf(seen.content)).toBe(
      `${'a'.repeat(1_000)}\n[… 99,000 of 100,000 characters cut by ToolResultLimit (limit 1,000) …]|<image>`,
    );
    expect(stored.content).toEqual(seen.content);
    expect(stored.details).toEqual({ bytes: 100_000 });
  });

  it('keeps head and tail with headAndTail', async () => {
    const text = 'H'.repeat(500) + 'x'.repeat(10_000) + 'T'.repeat(500);
    const { seen } = await runWith(text, [new ToolResultLimit({ maxChars: 1_000, keep: 'headAndTail' })]);
    const [first] = seen.content;
    expect(first).toEqual({
      type: 'text',
      text: `${'H'.repeat(500)}\n[… 10,000 of 11,000 characters cut by ToolResultLimit (limit 1,000) …]\n${'T'.repeat(500)}`,
    });
  });

  it('leaves a result within its limit untouched, and a tool with an Infinity limit whole', async () => {
    const short = await runWith('short', [new ToolResultLimit({ maxChars: 10 })]);
    expect(textOf(short.seen.content)).toBe('short|<image>');
    const whole = await runWith('z'.repeat(50), [new ToolResultLimit({ maxChars: 10, perTool: { dump: Infinity } })]);
    expect(textOf(whole.seen.content)).toBe(`${'z'.repeat(50)}|<image>`);
    const perTool = await runWith('z'.repeat(50), [new ToolResultLimit({ maxChars: 100, perTool: { dump: 5 } })]);
    expect(textOf(perTool.seen.content)).toMatch(/^zzzzz\n\[… 45 of 50 characters cut/);
  });

  it('composes with RedactToolResults in either order: the cut text is redacted', async () => {
    const text = 'key sk-SECRETSECRETSECRETSECRET1234 then ' + 'filler '.repeat(5_000);
    const redact = new RedactToolResults((t) => t.replace(/sk-[A-Za-z0-9]{20,}/g, '[redacted key]'));
    const limit = new ToolResultLimit({ maxChars: 200 });
    for (const middleware of [
      [redact, limit],
      [limit, redact],
    ]) {
      const { seen } = await runWith(text, middleware);
      const out = textOf(seen.content);
      expect(out).toContain('key [redacted key] then filler');
      expect(out).not.toContain('sk-SECRET');
      expect(out).toContain('characters cut by ToolResultLimit (limit 200)');
      expect(out.length).toBeLessThan(400);
    }
  });

  it('a cancelled run cancels the tool through the layer: its signal fires, the call ends aborted, nothing is cut after', async () => {
    let signalled = false;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const hang = defineTool({
      name: 'hang',
      description: 'Waits until cancelled',
      parameters: z.object({}),
      execute: (_id, _args, { signal }) =>
        new Promise<AgentToolResult>((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            signalled = true;
            reject(new Error('cancelled'));
          });
          started();
        }),
    });
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('hang', {}, { id: 'h1' })])] });
    const agent = new Agent({
      provider: faux,
      model: MODEL,
      tools: [hang],
      middleware: [new ToolResultLimit({ maxChars: 5 })],
    });
    const run = agent.prompt('go');
    await running;
    agent.abort();
    const added = await run;
    expect(signalled).toBe(true);
    const result = added.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect(result.toolCallId).toBe('h1');
    expect(textOf(result.content)).not.toContain('cut by ToolResultLimit');
  });

  it('refuses bad options with a ConfigurationError', () => {
    expect(() => new ToolResultLimit({ maxChars: -1 })).toThrow(ConfigurationError);
    expect(() => new ToolResultLimit({ maxChars: 1.5 })).toThrow(/non-negative integer/);
    expect(() => new ToolResultLimit({ perTool: { dump: Number.NaN } })).toThrow(/perTool\.dump/);
    expect(() => new ToolResultLimit({ keep: 'tail' as 'head' })).toThrow(/keep/);
    expect(() => new ToolResultLimit({ marker: 'cut' as never })).toThrow(/marker/);
  });
});

describe('limitToolResult', () => {
  it('returns the same result when within the limit', () => {
    const result: AgentToolResult = { content: [{ type: 'text', text: 'abc' }] };
    expect(limitToolResult(result, 3)).toBe(result);
  });

  it('keeps exactly maxChars of the text over any blocks, images in place, one marker (property)', () => {
    const block = fc.oneof(
      fc.string({ maxLength: 40 }).map((text): ToolResultContent => ({ type: 'text', text })),
      fc.constant(IMAGE),
    );
    fc.assert(
      fc.property(
        fc.array(block, { maxLength: 8 }),
        fc.nat(120),
        fc.constantFrom('head', 'headAndTail'),
        (content, maxChars, keep) => {
          const MARK = '\u0000';
          const result = limitToolResult({ content }, maxChars, {
            keep: keep,
            marker: () => MARK,
          });
          const all = content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
          const images = (c: readonly ToolResultContent[]) => c.filter((b) => b.type === 'image').length;
          expect(images(result.content)).toBe(images(content));
          const kept = result.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
          if (all.length <= maxChars) {
            expect(result.content).toBe(content);
            return;
          }
          expect(kept.split(MARK)).toHaveLength(2);
          const [before, after] = kept.split(MARK) as [string, string];
          // What is kept is the text's beginning (and end), exactly maxChars characters, joined by newlines.
          const head = keep === 'head' ? maxChars : Math.ceil(maxChars / 2);
          const tail = maxChars - head;
          expect(before.replace(/\n/g, '')).toBe(all.slice(0, head).replace(/\n/g, ''));
          expect(after.replace(/\n/g, '')).toBe(tail === 0 ? '' : all.slice(all.length - tail).replace(/\n/g, ''));
        },
      ),
    );
  });
});
