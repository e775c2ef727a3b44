import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  BudgetCap,
  ConfigurationError,
  defineTool,
  MaxTurns,
  RedactToolResults,
  SlidingWindow,
  StopOnText,
  StructuredOutput,
  textOf,
  ToolCallLimit,
  userMessage,
  type AssistantMessage,
  type Message,
  type ToolResultMessage,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall, type FauxResponse } from 'cubepi/testing';
import { echoTool, expectConsistentTranscript, resultText } from './helpers.js';

const texts = (messages: readonly Message[]) => messages.map((m) => `${m.role}:${textOf(m)}`);
const results = (messages: readonly Message[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === 'toolResult');

function recording(...responses: FauxResponse[]) {
  const received: string[][] = [];
  const systemPrompts: (string | undefined)[] = [];
  const faux = new FauxProvider({
    responses: responses.map((response): FauxResponse => (messages, model, ctx) => {
      received.push(texts(messages));
      systemPrompts.push(ctx.systemPrompt);
      return typeof response === 'function' ? response(messages, model, ctx) : response;
    }),
  });
  return { faux, received, systemPrompts };
}

describe('SlidingWindow', () => {
  it('sends only the most recent messages; the transcript keeps everything', async () => {
    const { faux, received } = recording(fauxMessage('a1'), fauxMessage('a2'));
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [new SlidingWindow({ maxMessages: 2 })] });
    await agent.prompt('q1');
    await agent.prompt('q2');
    expect(received[1]).toEqual(['assistant:a1', 'user:q2']);
    expect(agent.state.messages).toHaveLength(4);
  });

  it('never splits a tool call from its result', () => {
    const window = new SlidingWindow({ maxMessages: 3 });
    const call: AssistantMessage = { ...fauxMessage([fauxToolCall('echo', { i: 1 }, { id: 'c' })]) };
    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: 'c',
      toolName: 'echo',
      content: [],
      isError: false,
      timestamp: 0,
    };
    const messages: Message[] = [userMessage('q'), call, result, result, fauxMessage('done'), userMessage('next')];
    // the last 3 would start at a tool result whose call fell out: it leaves with the call
    expect(window.transformContext(messages).map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(window.transformContext(messages.slice(0, 3))).toHaveLength(3);
  });

  it('rejects a bad size', () => {
    expect(() => new SlidingWindow({ maxMessages: 0 })).toThrow(ConfigurationError);
  });
});

describe('MaxTurns', () => {
  it('ends the run after n model calls, answering the last batch', async () => {
    const faux = new FauxProvider({ responses: [1, 2, 3].map((i) => fauxMessage([fauxToolCall('echo', { i })])) });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [echoTool], middleware: [new MaxTurns(2)] });
    const added = await agent.prompt('go');
    expect(faux.callCount).toBe(2);
    expect(results(added)).toHaveLength(2);
    expectConsistentTranscript(added);
  });

  it('counts turns per run', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('a'), fauxMessage('b')] });
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [new MaxTurns(1)] });
    await agent.prompt('one');
    await agent.prompt('two');
    expect(faux.callCount).toBe(2);
  });
});

describe('BudgetCap', () => {
  it('stops once the run used its token budget', async () => {
    const faux = new FauxProvider({ responses: [1, 2, 3, 4].map((i) => fauxMessage([fauxToolCall('echo', { i })])) });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [echoTool],
      middleware: [new BudgetCap({ tokens: 1 })],
    });
    await agent.prompt('go');
    expect(faux.callCount).toBe(1);
  });

  it('needs a bound', () => {
    expect(() => new BudgetCap({})).toThrow(/give a bound/);
    expect(() => new BudgetCap({ usd: -1 })).toThrow(/usd must be a positive number/);
  });
});

describe('StopOnText', () => {
  const run = async (pattern: string | RegExp, answer: string) => {
    const faux = new FauxProvider({
      responses: [fauxMessage('thinking...'), fauxMessage(answer), fauxMessage('third')],
    });
    const keepGoing = { name: 'keepGoing', afterModelResponse: () => ({ decision: 'loop_to_model' as const }) };
    await new Agent({ provider: faux, model: 'faux', middleware: [new StopOnText(pattern), keepGoing] }).prompt('2+2?');
    return faux.callCount;
  };

  it('stops after the turn whose answer contains the sentinel string', async () => {
    expect(await run('FINAL ANSWER', 'FINAL ANSWER: 4')).toBe(2);
    expect(await run('FINAL ANSWER', 'final answer: 4')).toBe(4); // case matters: it runs until the script ends
  });

  it('or matches a RegExp (a /g RegExp is reset between tests)', async () => {
    expect(await run(/final answer:/i, 'Final answer: 4')).toBe(2);
    const global = /ANSWER/g;
    expect(await run(global, 'ANSWER')).toBe(2);
    expect(await run(global, 'ANSWER')).toBe(2);
  });
});

describe('ToolCallLimit', () => {
  it('blocks calls over the per-run limit with a reason the model can read, and resets for the next run', async () => {
    const calls = [1, 2, 3].map((i) => fauxToolCall('echo', { i }, { id: `e${i}` }));
    const faux = new FauxProvider({
      responses: [
        fauxMessage(calls),
        fauxMessage('ok'),
        fauxMessage([fauxToolCall('echo', { i: 9 }, { id: 'again' })]),
        fauxMessage('ok'),
      ],
    });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [echoTool],
      middleware: [new ToolCallLimit({ perRun: 2 })],
    });
    const first = await agent.prompt('go');
    expect(results(first).map((r) => [r.toolCallId, r.isError, resultText(r)])).toEqual([
      ['e1', false, 'ok 1'],
      ['e2', false, 'ok 2'],
      ['e3', true, 'Tool call limit reached: at most 2 tool calls per run'],
    ]);
    const second = await agent.prompt('again');
    expect(results(second)[0]!.isError).toBe(false);
  });

  it('limits calls per tool', async () => {
    const other = defineTool({ name: 'other', description: 'd', parameters: z.object({}), execute: () => 'fine' });
    const calls = [
      fauxToolCall('echo', { i: 1 }, { id: 'a' }),
      fauxToolCall('echo', { i: 2 }, { id: 'b' }),
      fauxToolCall('other', {}, { id: 'c' }),
    ];
    const faux = new FauxProvider({ responses: [fauxMessage(calls), fauxMessage('ok')] });
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [echoTool, other],
      middleware: [new ToolCallLimit({ perTool: { echo: 1 } })],
    });
    const added = await agent.prompt('go');
    expect(results(added).map((r) => [r.toolCallId, r.isError])).toEqual([
      ['a', false],
      ['b', true],
      ['c', false],
    ]);
    expect(resultText(results(added)[1]!)).toBe('Tool call limit reached: at most 1 calls of echo per run');
  });
});

describe('RedactToolResults', () => {
  it('rewrites text blocks of tool results before the model sees them', async () => {
    const secret = defineTool({
      name: 'secret',
      description: 'd',
      parameters: z.object({}),
      execute: () => 'key=sk-abcdefghijklmnopqrstuvwxyz',
    });
    const { faux, received } = recording(fauxMessage([fauxToolCall('secret', {})]), fauxMessage('ok'));
    const agent = new Agent({
      provider: faux,
      model: 'faux',
      tools: [secret],
      middleware: [new RedactToolResults((text) => text.replace(/sk-[a-z]{20,}/g, '[redacted]'))],
    });
    await agent.prompt('go');
    expect(received[1]!.at(-1)).toBe('toolResult:key=[redacted]');
  });
});

describe('StructuredOutput', () => {
  const schema = z.object({ city: z.string(), celsius: z.number() });

  it('exposes the parsed value of a valid final answer, and tells the model the schema', async () => {
    const output = new StructuredOutput(schema);
    const { faux, systemPrompts } = recording(fauxMessage('```json\n{"city":"Oslo","celsius":7}\n```'));
    const agent = new Agent({ provider: faux, model: 'faux', systemPrompt: 'Weather bot.', middleware: [output] });
    const added = await agent.prompt('Oslo?');
    expect(output.valueOf(added)).toEqual({ city: 'Oslo', celsius: 7 });
    expect(added.at(-1)!.metadata).toEqual({ structuredOutput: { city: 'Oslo', celsius: 7 } });
    expect(systemPrompts[0]).toMatch(
      /^Weather bot\.\n\nAnswer with only a JSON value that matches this JSON Schema:\n\{/,
    );
  });

  it('asks again with the validation errors (loop_to_model), then accepts a corrected answer', async () => {
    const output = new StructuredOutput(schema, { maxRetries: 2 });
    const { faux, received } = recording(fauxMessage('{"city":"Oslo"}'), fauxMessage('{"city":"Oslo","celsius":7}'));
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [output] });
    const added = await agent.prompt('Oslo?');
    expect(faux.callCount).toBe(2);
    expect(received[1]!.at(-1)).toMatch(
      /^user:Your answer is not valid:\n- celsius: Invalid input: expected number, received undefined/,
    );
    expect(output.valueOf(added)).toEqual({ city: 'Oslo', celsius: 7 });
  });

  it('gives up after maxRetries: the answer stands, marked with the error, and no value is exposed', async () => {
    const output = new StructuredOutput(schema, { maxRetries: 1 });
    const faux = new FauxProvider({
      responses: [fauxMessage('not json'), fauxMessage('still not json'), fauxMessage('never')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [output] });
    const added = await agent.prompt('Oslo?');
    expect(faux.callCount).toBe(2);
    expect(output.valueOf(added)).toBeUndefined();
    expect(added.at(-1)!.metadata).toMatchObject({ structuredOutputError: expect.stringMatching(/not JSON/) });
  });

  it('leaves turns with tool calls alone', async () => {
    const output = new StructuredOutput(schema);
    const faux = new FauxProvider({
      responses: [fauxMessage([fauxToolCall('echo', { i: 1 })]), fauxMessage('{"city":"Oslo","celsius":7}')],
    });
    const agent = new Agent({ provider: faux, model: 'faux', tools: [echoTool], middleware: [output] });
    expect(output.valueOf(await agent.prompt('go'))).toEqual({ city: 'Oslo', celsius: 7 });
    expect(faux.callCount).toBe(2);
  });
});
