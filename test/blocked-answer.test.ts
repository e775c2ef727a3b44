import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  MemoryCheckpointer,
  defineTool,
  isRecordOnly,
  type AgentEndEvent,
  type AssistantMessage,
  type Message,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { transformMessages } from '../src/providers/transform-messages.js';

// A vendor's safety system or guardrail stopping an answer is stopReason `blocked` with the vendor's words in
// `blockReason`: kept for the record, never replayed, its calls never run, and the run ends `stopped`.
describe('a blocked answer', () => {
  it('ends the run stopped, is stored with its reason, runs none of its tool calls and is never replayed', async () => {
    const seen: (readonly Message[])[] = [];
    const faux = new FauxProvider({
      responses: [
        fauxMessage([{ type: 'text', text: 'Here is how to' }, fauxToolCall('echo', { i: 1 }, { id: 'call_1' })], {
          stopReason: 'blocked',
          blockReason: 'SAFETY',
        }),
        (messages) => {
          seen.push(messages);
          return fauxMessage('a later answer');
        },
      ],
    });
    let executed = 0;
    const tool = defineTool({
      name: 'echo',
      description: 'Echoes its argument',
      parameters: z.object({ i: z.number() }),
      execute: () => {
        executed++;
        return { content: [{ type: 'text', text: 'ran' }] };
      },
    });
    const checkpointer = new MemoryCheckpointer();
    const agent = new Agent({ provider: faux, model: 'faux', tools: [tool], checkpointer, threadId: 't-blocked' });

    const events = await lastValueFrom(agent.prompt$('tell me').pipe(toArray()));
    const end = events.at(-1) as AgentEndEvent;
    expect(end.type).toBe('agent_end');
    expect(end.outcome).toBe('stopped');
    const blocked = end.messages.at(-1) as AssistantMessage;
    expect(blocked).toMatchObject({ role: 'assistant', stopReason: 'blocked', blockReason: 'SAFETY' });
    expect(isRecordOnly(blocked)).toBe(true);
    expect(executed).toBe(0);
    expect(events.some((event) => event.type === 'tool_execution_start')).toBe(false);
    expect(agent.state.errorMessage).toBe('Blocked: SAFETY');

    const stored = await checkpointer.load('t-blocked');
    expect(stored?.messages.at(-1)).toMatchObject({ stopReason: 'blocked', blockReason: 'SAFETY' });

    // Its call has no result (it never ran, and the message is never replayed, so none is owed), and the thread
    // goes on: the next prompt's request is answered.
    expect(agent.state.messages.some((message) => message.role === 'toolResult')).toBe(false);
    await agent.prompt('try again');
    expect(seen).toHaveLength(1);
    expect(agent.state.messages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'stop' });
  });

  it('is left out of a request to any provider, with its tool calls (no orphan results are made)', () => {
    const blocked: AssistantMessage = {
      ...fauxMessage([fauxToolCall('echo', {}, { id: 'c1' })], {
        stopReason: 'blocked',
        blockReason: 'guardrail_intervened',
      }),
      provider: 'bedrock',
      model: 'm',
    };
    const out = transformMessages([{ role: 'user', content: 'hi', timestamp: 1 }, blocked], {
      provider: 'bedrock',
      model: 'm',
      normalizeToolCallId: (id) => id,
    });
    expect(out).toEqual([{ role: 'user', content: 'hi', timestamp: 1 }]);
  });
});
