// Issue 31, item 11 (seed 002 §9.5): the evaluator's budget belongs to the run (`output` + `outputRetries`); the
// deprecated StructuredOutput keeps its own `maxRetries` and does not read the run's `outputRetries`.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, StructuredOutput } from 'cubepi';
import { FauxProvider, fauxMessage } from 'cubepi/testing';

describe('StructuredOutput budget (deprecated path)', () => {
  it("asks again maxRetries times whatever the run's outputRetries says", async () => {
    const faux = new FauxProvider({
      responses: [fauxMessage('not json'), fauxMessage('still not'), fauxMessage('{"n": 1}')],
    });
    const output = new StructuredOutput(z.object({ n: z.number() }), { maxRetries: 2 });
    const agent = new Agent({ provider: faux, model: 'faux', middleware: [output], outputRetries: 0 });
    const added = await agent.prompt('n?', { outputRetries: 0 });
    expect(faux.callCount).toBe(3);
    expect(output.valueOf(added)).toEqual({ n: 1 });
  });
});
