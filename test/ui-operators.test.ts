// The UI operators on a real run: what a page would render equals what the agent stored.
import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, defineTool, textOf, ToolGuard, type AgentToolResult, type Message } from 'cubepi';
import { assembleMessages, textDeltas, throttleDeltas, toolActivity, type ToolActivity } from 'cubepi/operators';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

function agentWithProgress(before: ReturnType<typeof fauxMessage>[] = []) {
  const progress = (text: string): AgentToolResult => ({ content: [{ type: 'text', text }] });
  const fetchTool = defineTool({
    name: 'fetch',
    description: 'fetches',
    parameters: z.object({ url: z.string() }),
    execute: () =>
      new Observable<AgentToolResult>((subscriber) => {
        subscriber.next(progress('10%'));
        subscriber.next(progress('90%'));
        subscriber.next(progress('done'));
        subscriber.complete();
      }),
  });
  return new Agent({
    provider: new FauxProvider({
      responses: [
        ...before,
        fauxMessage([fauxToolCall('fetch', { url: 'a' }, { id: 'c1' })]),
        fauxMessage('The page says hello, and a good deal more than that, over many tokens.'),
      ],
    }),
    model: 'faux',
    tools: [fetchTool],
  });
}

describe('UI operators on a real run', () => {
  it('assembleMessages ends with exactly what the agent stored; toolActivity saw the progress and ends empty', async () => {
    const agent = agentWithProgress([fauxMessage('an earlier answer')]);
    await agent.prompt('earlier');
    const history = agent.state.messages;
    let last: readonly Message[] = [];
    const activity: (readonly ToolActivity[])[] = [];
    const a = agent.events$.pipe(assembleMessages(history)).subscribe((messages) => (last = messages));
    const b = agent.events$.pipe(toolActivity()).subscribe((calls) => activity.push(calls));
    await agent.prompt('fetch a');
    a.unsubscribe();
    b.unsubscribe();
    expect(last).toEqual(agent.state.messages);
    expect(activity.flatMap((calls) => calls.map((c) => c.progress?.content[0]))).toContainEqual({
      type: 'text',
      text: '90%',
    });
    expect(activity.at(-1)).toEqual([]);
  });

  it('toolActivity on a run suspended for approval: one waiting entry for the held call; answered, it runs and goes', async () => {
    const agent = new Agent({
      provider: new FauxProvider({
        responses: [fauxMessage([fauxToolCall('fetch', { url: 'a' }, { id: 'h1' })]), fauxMessage('ok')],
      }),
      model: 'faux',
      tools: agentWithProgress().state.tools,
      middleware: [new ToolGuard({ policy: ToolGuard.byName({ ask: ['fetch'] }) })],
    });
    const seen: (readonly ToolActivity[])[] = [];
    const subscription = agent.events$.pipe(toolActivity()).subscribe((calls) => seen.push(calls));
    await agent.prompt('fetch a');
    expect(seen.at(-1)!.map((c) => [c.toolCallId, c.status, c.approval?.requestId])).toEqual([
      ['h1', 'awaiting_approval', agent.pending[0]!.requestId],
    ]);
    expect(seen.every((calls) => calls.length <= 1)).toBe(true); // never listed twice
    await agent.respond(agent.pending[0]!.requestId, { approve: true });
    subscription.unsubscribe();
    expect(seen.some((calls) => calls[0]?.status === 'running' && calls[0].progress !== undefined)).toBe(true);
    expect(seen.at(-1)).toEqual([]);
  });

  it('throttleDeltas keeps the streamed text whole, in fewer events', async () => {
    const agent = agentWithProgress();
    const raw: string[] = [];
    const merged: string[] = [];
    const a = agent.events$.pipe(textDeltas()).subscribe((d) => raw.push(d));
    const b = agent.events$.pipe(throttleDeltas(5), textDeltas()).subscribe((d) => merged.push(d));
    await agent.prompt('fetch a');
    a.unsubscribe();
    b.unsubscribe();
    const answer = textOf(agent.state.messages.at(-1)!);
    expect(raw.join('')).toBe(answer);
    expect(merged.join('')).toBe(answer);
    expect(merged.length).toBeLessThanOrEqual(raw.length);
  });
});
