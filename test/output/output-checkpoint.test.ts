import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, MemoryCheckpointer, OutputError, type Model } from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';
import { expectConsistentTranscript } from '../helpers.js';

const toolModel: Model = { id: 'faux-tools', provider: 'faux', structuredOutput: false };
const Answer = z.object({ n: z.number() });

describe('output with a checkpointer', () => {
  it('resolves the typed answer and stores the whole run, the final call and its result included', async () => {
    const checkpointer = new MemoryCheckpointer();
    const faux = new FauxProvider({
      responses: [
        fauxMessage([fauxToolCall('final_answer', { n: 'one' }, { id: 'f1' })]),
        fauxMessage([fauxToolCall('final_answer', { n: 1 }, { id: 'f2' })]),
      ],
    });
    const agent = new Agent({ provider: faux, model: toolModel, checkpointer, threadId: 't1' });
    expect(await agent.prompt('count', { output: Answer })).toEqual({ n: 1 });
    const stored = (await checkpointer.load('t1'))!.messages;
    expect(stored.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'toolResult',
      'assistant',
      'toolResult',
    ]);
    expectConsistentTranscript(stored);

    // A later run on the restored thread (a new Agent) goes on from the stored answer; spent retries reject.
    const next = new FauxProvider({ responses: [fauxMessage([fauxToolCall('final_answer', {})])] });
    const again = new Agent({ provider: next, model: toolModel, checkpointer, threadId: 't1' });
    const error = (await again
      .prompt('again', { output: Answer, outputRetries: 0 })
      .catch((e: unknown) => e)) as OutputError;
    expect(error).toBeInstanceOf(OutputError);
    expect(error).toMatchObject({ reason: 'invalid', attempts: 1 });
    const after = (await checkpointer.load('t1'))!.messages;
    expect(after).toHaveLength(8);
    expectConsistentTranscript(after);
  });
});
