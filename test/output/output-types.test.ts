// The types a run with `output` gives: `prompt()` resolves to the schema's output type, the messages without it.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { Agent, Message } from 'cubepi';

describe('output types', () => {
  it('prompt, resume and retryFrom with output resolve to the schema type; without it, to the messages', () => {
    const schema = z.object({ city: z.string(), celsius: z.number().optional() });
    const typed = (agent: Agent) => agent.prompt('x', { output: schema });
    const withOptions = (agent: Agent) => agent.prompt('x', { output: { schema, mode: 'tool' } });
    const resumed = (agent: Agent) => agent.resume({ output: schema });
    const plain = (agent: Agent) => agent.prompt('x');
    expectTypeOf(typed).returns.resolves.toEqualTypeOf<{ city: string; celsius?: number | undefined }>();
    expectTypeOf(withOptions).returns.resolves.toEqualTypeOf<{ city: string; celsius?: number | undefined }>();
    expectTypeOf(resumed).returns.resolves.toEqualTypeOf<{ city: string; celsius?: number | undefined }>();
    expectTypeOf(plain).returns.resolves.toEqualTypeOf<Message[]>();
  });
});
