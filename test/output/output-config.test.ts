import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  ConfigurationError,
  defineTool,
  InvalidInputError,
  outputJsonSchema,
  runAgentLoop,
  strictSchemaProblem,
  userMessage,
  type AgentEvent,
  type Model,
  type Provider,
  type StreamRequest,
} from 'cubepi';
import { FauxProvider, fauxMessage, fauxToolCall } from 'cubepi/testing';

const openaiNative: Model = { id: 'gpt-test', provider: 'openai', structuredOutput: 'json_schema' };
const anthropicNative: Model = { id: 'claude-test', provider: 'anthropic', structuredOutput: 'json_schema' };
const toolModel: Model = { id: 'faux-tools', provider: 'faux', structuredOutput: false };

const problemOf = (schema: z.ZodType) => strictSchemaProblem(outputJsonSchema(schema));

describe('outputJsonSchema', () => {
  it('gives the output JSON Schema without $schema', () => {
    const schema = outputJsonSchema(z.object({ n: z.number().default(1) }));
    expect(schema).toEqual({
      type: 'object',
      properties: { n: { type: 'number', default: 1 } },
      required: ['n'],
      additionalProperties: false,
    });
  });

  it('takes { schema } options and any Standard JSON Schema', () => {
    const standard = {
      '~standard': {
        version: 1 as const,
        vendor: 'x',
        validate: (value: unknown) => ({ value }),
        jsonSchema: {
          input: () => ({}),
          output: (options: { target: string }) => ({ $schema: options.target, type: 'string' }),
        },
      },
    };
    expect(outputJsonSchema({ schema: standard })).toEqual({ type: 'string' });
  });
});

describe('strictSchemaProblem', () => {
  it('accepts a closed object with every property required, nullable fields, enums, arrays and anyOf', () => {
    expect(
      problemOf(
        z.object({
          city: z.string(),
          note: z.string().nullable(),
          unit: z.enum(['c', 'f']),
          tags: z.array(z.string()).max(3),
          either: z.union([z.string(), z.number()]),
          nested: z.object({ x: z.number().int() }),
        }),
      ),
    ).toBeUndefined();
  });

  it.each([
    [
      'an optional property',
      z.object({ a: z.string().optional() }),
      '/properties/a',
      /property "a" is optional.*nullable/,
    ],
    ['an open record', z.object({ meta: z.record(z.string(), z.string()) }), '/properties/meta', /open record/],
    ['z.any()', z.object({ x: z.object({ y: z.any() }) }), '/properties/x/properties/y', /any value/],
    [
      'a loose object',
      z.object({ o: z.looseObject({ a: z.string() }) }),
      '/properties/o',
      /additionalProperties: false/,
    ],
    ['a non-object root', z.array(z.string()), '', /root must be an object/],
    [
      'a discriminated union (oneOf)',
      z.object({ u: z.discriminatedUnion('k', [z.object({ k: z.literal('a') }), z.object({ k: z.literal('b') })]) }),
      '/properties/u',
      /oneOf/,
    ],
    ['an unsupported keyword', z.object({ s: z.string().min(2) }), '/properties/s/minLength', /"minLength"/],
  ])('names the path of %s', (_name, schema, path, message) => {
    const problem = problemOf(schema);
    expect(problem?.path).toBe(path);
    expect(problem?.message).toMatch(message);
  });

  it('limits nesting to 10 levels', () => {
    let schema: z.ZodType = z.string();
    for (let i = 0; i < 11; i++) schema = z.object({ a: schema });
    expect(problemOf(schema)?.message).toMatch(/nested more than 10 levels/);
  });
});

describe('the strict check at configuration time', () => {
  const open = z.object({ meta: z.record(z.string(), z.string()) });

  it('new Agent refuses an output its native model cannot take strictly, naming the path', () => {
    expect(() => new Agent({ provider: new FauxProvider(), model: openaiNative, output: open })).toThrow(
      ConfigurationError,
    );
    expect(() => new Agent({ provider: new FauxProvider(), model: openaiNative, output: open })).toThrow(
      /Agent: `output`: .*gpt-test.*at \/properties\/meta, an open record/,
    );
  });

  it('does not check a model that would not be asked natively, nor a fixed weaker mode', () => {
    expect(() => new Agent({ provider: new FauxProvider(), model: toolModel, output: open })).not.toThrow();
    expect(
      () => new Agent({ provider: new FauxProvider(), model: openaiNative, output: { schema: open, mode: 'tool' } }),
    ).not.toThrow();
  });

  it("prompt() refuses a run's output the same way, with InvalidInputError, before any model call", async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('x')] });
    const agent = new Agent({ provider: faux, model: openaiNative });
    await expect(agent.prompt('x', { output: open })).rejects.toThrow(InvalidInputError);
    await expect(agent.prompt('x', { output: open })).rejects.toThrow(/\/properties\/meta/);
    expect(faux.callCount).toBe(0);
    expect(agent.state.messages).toEqual([]);
  });

  it('runAgentLoop throws ConfigurationError at once', () => {
    expect(() =>
      runAgentLoop({ provider: new FauxProvider(), model: openaiNative, prompts: [userMessage('x')], output: open }),
    ).toThrow(/runAgentLoop: `output`: .*\/properties\/meta/);
  });

  it('allowWeakerMode: OpenAI is asked natively with strict false; a vendor without non-strict mode gets the final tool', async () => {
    const requests: StreamRequest[] = [];
    const events: AgentEvent[] = [];
    const make = (model: Model, responses: Parameters<FauxProvider['setResponses']>[0]) => {
      const faux = new FauxProvider({ responses });
      const provider: Provider = {
        id: 'faux',
        stream: (m, messages, request = {}) => (requests.push(request), faux.stream(m, messages, request)),
      };
      const agent = new Agent({ provider, model, output: { schema: open, allowWeakerMode: true } });
      agent.subscribe((event) => void events.push(event));
      return agent;
    };
    const value = { meta: { a: 'b' } };
    await make(openaiNative, [fauxMessage(JSON.stringify(value))]).prompt('x');
    expect(requests[0]!.output).toMatchObject({ name: 'answer', strict: false });
    await make(anthropicNative, [fauxMessage([fauxToolCall('final_answer', value)])]).prompt('x');
    expect(requests[1]!.output).toBeUndefined();
    expect(requests[1]!.tools?.map((tool) => tool.name)).toEqual(['final_answer']);
    const ends = events.filter((event) => event.type === 'agent_end');
    expect(ends.map((event) => event.output)).toEqual([value, value]);
    const attempts = events.filter((event) => event.type === 'model_attempt');
    expect(attempts.map((event) => event.output?.mode)).toEqual(['native', 'tool']);
  });

  it('a fixed native mode on a schema the model cannot take strictly is refused at the attempt', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage('never sent')] });
    const agent = new Agent({
      provider: faux,
      model: anthropicNative,
      output: { schema: open, mode: 'native', allowWeakerMode: true },
    });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => void events.push(event));
    await agent.prompt('x');
    expect(faux.callCount).toBe(0);
    const attempt = events.find((event) => event.type === 'model_attempt');
    expect(attempt?.incapable).toMatchObject({ reason: 'output', message: expect.stringMatching(/strict native/) });
    const end = events.find((event) => event.type === 'agent_end');
    expect(end).toMatchObject({ outcome: 'failed', outputError: { reason: 'missing' } });
  });
});

describe('the final tool name', () => {
  const echo = defineTool({
    name: 'final_answer',
    description: 'a tool of the app',
    parameters: z.object({}),
    execute: () => ({ content: [] }),
  });
  const schema = z.object({ a: z.string() });

  it('a run tool named like the final tool is refused at construction, run start and runAgentLoop', async () => {
    expect(() => new Agent({ provider: new FauxProvider(), model: toolModel, tools: [echo], output: schema })).toThrow(
      /a tool is already named "final_answer".*output\.name/,
    );
    const agent = new Agent({ provider: new FauxProvider(), model: toolModel, tools: [echo] });
    await expect(agent.prompt('x', { output: schema })).rejects.toThrow(InvalidInputError);
    expect(() =>
      runAgentLoop({ provider: new FauxProvider(), model: toolModel, tools: [echo], output: schema }),
    ).toThrow(ConfigurationError);
  });

  it('a named output gets a final tool of that name', async () => {
    const faux = new FauxProvider({ responses: [fauxMessage([fauxToolCall('report', { a: 'b' })])] });
    const agent = new Agent({ provider: faux, model: toolModel, tools: [echo] });
    expect(await agent.prompt('x', { output: { schema, name: 'report' } })).toEqual({ a: 'b' });
  });
});

describe('option checks', () => {
  const provider = new FauxProvider();
  it.each([
    [{ output: 'nope' }, /`output` must be a schema or \{ schema, … \}, got string/],
    [{ output: { parse: () => 1 } }, /`output` must be a schema/],
    [{ output: { schema: {} } }, /must be a Standard Schema/],
    [{ output: { schema: z.string(), name: 'has space' } }, /\.name must be 1 to 64 characters/],
    [{ output: { schema: z.string(), mode: 'json' } }, /\.mode must be "auto", "native", "tool" or "prompt"/],
    [{ outputRetries: -1 }, /`outputRetries` must be a non-negative integer, got -1/],
    [{ outputRetries: 1.5 }, /`outputRetries` must be a non-negative integer/],
    [
      { reasoning: 'extreme' },
      /`reasoning` must be "off", "minimal", "low", "medium", "high", "max" or \{ budgetTokens \}/,
    ],
    [{ reasoning: { budgetTokens: -1 } }, /`reasoning` `budgetTokens` must be a non-negative integer/],
  ])('Agent options %j → ConfigurationError', (options, message) => {
    expect(() => new Agent({ provider, model: 'faux', ...(options as object) })).toThrow(ConfigurationError);
    expect(() => new Agent({ provider, model: 'faux', ...(options as object) })).toThrow(message);
  });

  it('run options are checked at prompt() with InvalidInputError', async () => {
    const agent = new Agent({ provider, model: 'faux' });
    await expect(agent.prompt('x', { outputRetries: -2 })).rejects.toThrow(InvalidInputError);
    await expect(agent.prompt('x', { output: 42 as never })).rejects.toThrow(/`output` must be a schema/);
    await expect(agent.prompt('x', { reasoning: { budgetTokens: 'lots' } as never })).rejects.toThrow(
      InvalidInputError,
    );
  });

  it('a schema with no JSON Schema is refused', () => {
    const bare = { '~standard': { version: 1, vendor: 'bare', validate: (value: unknown) => ({ value }) } };
    expect(() => new Agent({ provider, model: 'faux', output: bare as never })).toThrow(
      /`output` gives no JSON Schema: .*bare schema gives no JSON Schema/,
    );
  });
});
