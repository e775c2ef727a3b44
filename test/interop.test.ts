// Interop: a cubepi run read by the AI SDK's own UI message stream reader, and as AG-UI events validated by
// @ag-ui/core's schemas.
import { EventSchemas } from '@ag-ui/core/schemas';
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { lastValueFrom, Observable, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, ToolGuard, type AgentToolResult, type Middleware } from 'cubepi';
import { toAgUiEvents, toUIMessageStream, type AgUiEvent, type UIMessageStreamPart } from 'cubepi/operators';
import { FauxProvider, fauxMessage, fauxText, fauxThinking, fauxToolCall } from 'cubepi/testing';

const fetchTool = defineTool({
  name: 'fetch',
  description: 'fetches a page',
  parameters: z.object({ url: z.string() }),
  execute: () =>
    new Observable<AgentToolResult>((subscriber) => {
      subscriber.next({ content: [{ type: 'text', text: 'loading' }] });
      subscriber.next({ content: [{ type: 'text', text: '<h1>hello</h1>' }] });
      subscriber.complete();
    }),
});

function agent(responses: ReturnType<typeof fauxMessage>[], middleware: Middleware[] = []) {
  return new Agent({ provider: new FauxProvider({ responses }), model: 'faux', tools: [fetchTool], middleware });
}

const toolRun = () =>
  agent([
    fauxMessage([
      fauxThinking('The user wants the page.'),
      fauxText('Looking it up.'),
      fauxToolCall('fetch', { url: 'a' }, { id: 'c1' }),
    ]),
    fauxMessage('The page says hello.'),
  ]);

async function readUI(parts: readonly UIMessageStreamPart[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  const errors: unknown[] = [];
  for await (const message of readUIMessageStream({ stream, onError: (e) => errors.push(e), terminateOnError: true })) {
    last = message;
  }
  expect(errors).toEqual([]);
  return last!;
}

const uiParts = async (run: Agent, prompt: string) =>
  lastValueFrom(run.prompt$(prompt).pipe(toUIMessageStream(), toArray()));

describe('toUIMessageStream, read by the ai package', () => {
  it('a tool run: reasoning, text, the tool part with its output, the answer; one message, two steps', async () => {
    const run = toolRun();
    const message = await readUI(await uiParts(run, 'fetch a'));
    expect(message.id).toMatch(/./); // the run id (the stream's messageId)
    expect(message.role).toBe('assistant');
    const parts = message.parts.map((p) => {
      if (p.type === 'text' || p.type === 'reasoning') return [p.type, p.text, p.state];
      if (p.type === 'tool-fetch')
        return [p.type, p.state, p.input, p.state === 'output-available' ? p.output : undefined];
      return [p.type];
    });
    expect(parts).toEqual([
      ['step-start'],
      ['reasoning', 'The user wants the page.', 'done'],
      ['text', 'Looking it up.', 'done'],
      ['tool-fetch', 'output-available', { url: 'a' }, { content: [{ type: 'text', text: '<h1>hello</h1>' }] }],
      ['step-start'],
      ['text', 'The page says hello.', 'done'],
    ]);
  });

  it('a failed tool is an output error; a denial is denied; a held call requests approval; each parses', async () => {
    const failing = defineTool({
      name: 'boom',
      description: 'fails',
      parameters: z.object({}),
      execute: () => {
        throw new Error('kaput');
      },
    });
    const guard = new ToolGuard({ policy: ToolGuard.byName({ deny: ['fetch'] }) });
    const run = new Agent({
      provider: new FauxProvider({
        responses: [
          fauxMessage([fauxToolCall('boom', {}, { id: 'b1' }), fauxToolCall('fetch', { url: 'x' }, { id: 'f1' })]),
          fauxMessage('ok'),
        ],
      }),
      model: 'faux',
      tools: [failing, fetchTool],
      middleware: [guard],
    });
    const parts = await uiParts(run, 'go');
    expect(parts).toContainEqual({ type: 'tool-output-denied', toolCallId: 'f1' });
    const message = await readUI(parts);
    const states = message.parts
      .filter((p) => p.type.startsWith('tool-'))
      .map((p) => [p.type, (p as { state: string }).state]);
    expect(states).toEqual([
      ['tool-boom', 'output-error'],
      ['tool-fetch', 'output-denied'],
    ]);

    const asking = agent(
      [fauxMessage([fauxToolCall('fetch', { url: 'y' }, { id: 'q1' })]), fauxMessage('done')],
      [new ToolGuard({ policy: ToolGuard.byName({ ask: ['fetch'] }) })],
    );
    const held = await uiParts(asking, 'go');
    expect(held.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls' });
    const requested = await readUI(held);
    expect(requested.parts.find((p) => p.type === 'tool-fetch')).toMatchObject({ state: 'approval-requested' });
    // The resumed run is a UI message of its own: the held call's input, then its output, then the answer.
    const resumed = await lastValueFrom(
      asking.respond$(asking.pending[0]!.requestId, { approve: true }).pipe(toUIMessageStream(), toArray()),
    );
    const after = await readUI(resumed);
    expect(after.parts.find((p) => p.type === 'tool-fetch')).toMatchObject({
      state: 'output-available',
      input: { url: 'y' },
    });
    expect(after.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['done']);
  });

  it('a cancelled run ends with abort', async () => {
    const run = agent([fauxMessage('a long answer '.repeat(200))]);
    const parts: UIMessageStreamPart[] = [];
    await new Promise<void>((resolve) => {
      run.events$.pipe(toUIMessageStream()).subscribe((part) => {
        parts.push(part);
        if (part.type === 'text-delta' && parts.length === 5) run.abort();
        if (part.type === 'abort' || part.type === 'finish') resolve();
      });
      void run.prompt('go');
    });
    expect(parts.at(-1)?.type).toBe('abort');
  });
});

describe('toAgUiEvents, validated by @ag-ui/core', () => {
  const check = (list: readonly AgUiEvent[]) => {
    for (const event of list) {
      const parsed = EventSchemas.safeParse(event);
      expect(parsed.success, `${event.type}: ${parsed.success ? '' : parsed.error.message}`).toBe(true);
    }
  };

  it('a tool run: every event valid; run, steps, reasoning, text, tool call with args and result, in order', async () => {
    const list = await lastValueFrom(
      toolRun()
        .prompt$('fetch a')
        .pipe(toAgUiEvents({ threadId: 't1' }), toArray()),
    );
    check(list);
    // Repeated content and argument events collapsed to one: the order of everything else is exact.
    const types = list
      .map((e) => e.type)
      .filter((type, i, all) => !(type.endsWith('_CONTENT') || type === 'TOOL_CALL_ARGS') || all[i - 1] !== type);
    expect(types).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'RUN_FINISHED',
    ]);
    const text = list
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta as string)
      .join('');
    expect(text).toBe('Looking it up.The page says hello.');
    const args = list
      .filter((e) => e.type === 'TOOL_CALL_ARGS')
      .map((e) => e.delta as string)
      .join('');
    expect(JSON.parse(args)).toEqual({ url: 'a' });
    expect(list.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
      toolCallId: 'c1',
      content: '<h1>hello</h1>',
    });
    expect(list.at(-1)).toMatchObject({ threadId: 't1', outcome: { type: 'success' } });
  });

  it('suspended → RUN_FINISHED with an interrupt per request; failed → RUN_ERROR; cancelled → outcome cancelled', async () => {
    const asking = agent(
      [fauxMessage([fauxToolCall('fetch', { url: 'y' }, { id: 'q1' })]), fauxMessage('done')],
      [new ToolGuard({ policy: ToolGuard.byName({ ask: ['fetch'] }) })],
    );
    const suspended = await lastValueFrom(asking.prompt$('go').pipe(toAgUiEvents(), toArray()));
    check(suspended);
    expect(suspended.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: {
        type: 'interrupt',
        interrupts: [{ id: asking.pending[0]!.requestId, toolCallId: 'q1', reason: 'Tool fetch needs approval' }],
      },
    });

    const failing = agent([fauxMessage('x', { stopReason: 'error', errorMessage: 'overloaded' })]);
    const failed = await lastValueFrom(failing.prompt$('go').pipe(toAgUiEvents(), toArray()));
    check(failed);
    expect(failed.at(-1)).toMatchObject({ type: 'RUN_ERROR', message: 'overloaded' });

    const stopping = agent(
      [fauxMessage('x')],
      [{ name: 'closed', onRunStart: () => ({ kind: 'stop', outcome: 'cancelled', reason: 'closed' }) }],
    );
    const cancelled = await lastValueFrom(stopping.prompt$('go').pipe(toAgUiEvents(), toArray()));
    check(cancelled);
    expect(cancelled.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
  });
});
