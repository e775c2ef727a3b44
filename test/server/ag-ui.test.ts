// AG-UI over the wire: a RunAgentInput (valid by @ag-ui/core's schema) posted to /ag-ui gets the run's AG-UI events as
// Server-Sent Events, every one valid by @ag-ui/core's schemas, the text whole; the client leaving cancels the run.
import { EventSchemas, RunAgentInputSchema } from '@ag-ui/core/schemas';
import { afterEach, describe, expect, it } from 'vitest';
import { lastValueFrom, toArray } from 'rxjs';
import { fromAgentEvents, runEventsUrl } from 'cubepi/client';
import { SseParser } from '../../src/wire/sse-parser.js';
import { agentFactory, ANSWER, serve, type Served } from './serve-helpers.js';

const JSON_TYPE = { 'content-type': 'application/json' };

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const input = (threadId: string, text: string) =>
  RunAgentInputSchema.parse({
    threadId,
    runId: 'client-run-1',
    state: {},
    messages: [{ id: 'm1', role: 'user', content: text }],
    tools: [],
    context: [],
    forwardedProps: {},
  });

describe('POST /ag-ui', () => {
  it("streams the run's AG-UI events, each valid by @ag-ui/core, with the whole answer", async () => {
    served = await serve({ agent: agentFactory().agent, flushMs: 0 });
    const response = await fetch(`${served.base}/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(input('ag-1', 'Define cube')),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const parser = new SseParser();
    const events = parser
      .push(await response.text())
      .map((record) => JSON.parse(record.data) as { type: string; delta?: string });
    for (const event of events) {
      const parsed = EventSchemas.safeParse(event);
      expect(parsed.success, `${event.type}: ${parsed.success ? '' : parsed.error.message}`).toBe(true);
    }
    expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: 'ag-1' });
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', threadId: 'ag-1' });
    expect(events.some((e) => e.type === 'TOOL_CALL_RESULT')).toBe(true);
    const text = events
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join('');
    expect(text).toContain(ANSWER);
    // The thread is the input's, stored on the server.
    const stored = (await (await fetch(`${served.base}/threads/ag-1`)).json()) as { messages: unknown[] };
    expect(stored.messages).toHaveLength(4);
  });

  it('the client leaving mid-run cancels the run', async () => {
    served = await serve({ agent: agentFactory({}, 2, 10).agent, flushMs: 0 });
    const abort = new AbortController();
    const response = await fetch(`${served.base}/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input('ag-2', 'Define cube')),
      signal: abort.signal,
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SseParser();
    let runId: string | undefined;
    while (runId === undefined) {
      const { value } = await reader.read();
      for (const record of parser.push(value ?? '')) {
        const event = JSON.parse(record.data) as { type: string; runId?: string };
        if (event.type === 'RUN_STARTED') runId = event.runId;
      }
    }
    abort.abort();
    const events = await lastValueFrom(fromAgentEvents(runEventsUrl(served.base, runId)).pipe(toArray()));
    expect(events.at(-1)).toMatchObject({ type: 'agent_end', outcome: 'cancelled' });
  });

  it('refuses an input without a final user message, or with an invalid thread id, with 400', async () => {
    const factory = agentFactory();
    served = await serve({ agent: factory.agent });
    const post = (body: unknown) =>
      fetch(`${served!.base}/ag-ui`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) }).then(
        (r) => r.status,
      );
    expect(await post({ ...input('ag-3', 'x'), messages: [] })).toBe(400);
    expect(await post({ ...input('ag-3', 'x'), messages: [{ id: 'a', role: 'assistant', content: 'hi' }] })).toBe(400);
    expect(await post(input('', 'x'))).toBe(400);
    expect(factory.created).toEqual([]);
  });
});
