import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, parallel, race, runComposite, sequence } from 'cubepi';
import { OpenAIProvider } from 'cubepi/providers/openai';
import { deferred } from '../helpers.js';

// The official OpenAI SDK against a local server speaking Chat Completions SSE. `fast` answers at once; any other
// model sends its first chunk and then holds the response open until the client goes away. `fast` waits for both
// `slow-*` requests to be open.

let server: Server;
let baseURL: string;
const opened = new Map<string, ReturnType<typeof deferred>>();
const closed = new Map<string, ReturnType<typeof deferred>>();
const gate = (map: Map<string, ReturnType<typeof deferred>>, model: string) => {
  if (!map.has(model)) map.set(model, deferred());
  return map.get(model)!;
};

const chunk = (res: ServerResponse, model: string, delta: object, finish: string | null = null, usage?: object) =>
  res.write(
    `data: ${JSON.stringify({
      id: `c-${model}`,
      object: 'chat.completion.chunk',
      created: 0,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(usage === undefined ? {} : { usage }),
    })}\n\n`,
  );

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (data: Buffer) => (body += data.toString()));
    req.on('end', () => {
      const { model } = JSON.parse(body) as { model: string };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      chunk(res, model, { role: 'assistant', content: '' });
      gate(opened, model).resolve(undefined);
      // The connection closing before the response ended is the client aborting the request.
      res.on('close', () => {
        if (!res.writableEnded) gate(closed, model).resolve(undefined);
      });
      if (model.startsWith('fast')) {
        // The winner answers once both losers' requests are open, so the race is decided while they stream.
        void Promise.all([gate(opened, 'slow-1').promise, gate(opened, 'slow-2').promise]).then(() => {
          chunk(res, model, { content: `answer from ${model}` });
          chunk(res, model, {}, 'stop', { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
          res.end('data: [DONE]\n\n');
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const agentOn = (model: string) => new Agent({ provider: new OpenAIProvider({ baseURL, apiKey: 'test' }), model });

describe('composites through the OpenAI SDK: cancelled members close their sockets', () => {
  it("race: the winner answers and the losers' HTTP requests are aborted (their connections close)", async () => {
    const losers = [agentOn('slow-1'), agentOn('slow-2')];
    const fast = agentOn('fast-1');
    const end = await runComposite(
      race(
        { name: 'slow1', agent: losers[0]! },
        { name: 'slow2', agent: losers[1]! },
        { name: 'fast', agent: () => fast },
      ),
      'go',
    );
    expect(end).toMatchObject({ outcome: 'completed', winner: 'fast', answer: 'answer from fast-1' });
    await Promise.all([gate(closed, 'slow-1').promise, gate(closed, 'slow-2').promise]);
    await Promise.all(losers.map((loser) => loser.waitForIdle()));
    for (const loser of losers) {
      const last = loser.state.messages.at(-1)!;
      expect(last.role === 'assistant' && last.stopReason).toBe('aborted');
    }
    expect(end.results.map((r) => r.outcome)).toEqual(['lost', 'lost', 'completed']);
  });

  it("unsubscribing from a parallel composite aborts every member's request", async () => {
    const members = [agentOn('hold-1'), agentOn('hold-2')];
    const subscription = parallel(...members)
      .run$('go')
      .subscribe();
    await Promise.all([gate(opened, 'hold-1').promise, gate(opened, 'hold-2').promise]);
    subscription.unsubscribe();
    await Promise.all([gate(closed, 'hold-1').promise, gate(closed, 'hold-2').promise]);
    await Promise.all(members.map((member) => member.waitForIdle()));
    expect(members.map((member) => member.state.isStreaming)).toEqual([false, false]);
  });

  it("the composite's signal aborts a sequence's running member", async () => {
    const controller = new AbortController();
    const member = agentOn('hold-3');
    const ended = runComposite(sequence(member), 'go', { signal: controller.signal });
    await gate(opened, 'hold-3').promise;
    controller.abort();
    await gate(closed, 'hold-3').promise;
    expect((await ended).outcome).toBe('cancelled');
  });
});
