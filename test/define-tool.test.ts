import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as zm from 'zod/mini';
import { z as z3 } from 'zod/v3';
import { ConfigurationError, defineTool, StructuredOutput, validateToolArguments } from 'cubepi';

const search = defineTool({
  name: 'search',
  description: 'Search the corpus',
  parameters: z.object({
    query: z.string().describe('What to look for'),
    limit: z.number().int().default(10),
    filters: z.object({ tags: z.array(z.string()) }).optional(),
  }),
  execute: () => 'ok',
});

describe('defineTool', () => {
  it("derives the model's JSON Schema from zod in input mode: defaulted fields stay optional", () => {
    expect(search.inputSchema).toMatchObject({
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for' },
        limit: { type: 'integer', default: 10 },
        filters: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } } },
      },
      required: ['query'],
    });
    expect(search.inputSchema).not.toHaveProperty('$schema');
  });

  it('validates arguments and applies defaults', () => {
    expect(validateToolArguments(search, { query: 'cats' })).toEqual({ ok: true, args: { query: 'cats', limit: 10 } });
  });

  it('lists every issue by field path, for the model to fix its call', () => {
    const outcome = validateToolArguments(search, { query: 3, limit: 1.5, filters: { tags: ['a', 7] } });
    expect(outcome).toEqual({
      ok: false,
      message: [
        'Invalid arguments for tool "search":',
        '- query: Invalid input: expected string, received number',
        '- limit: Invalid input: expected int, received number',
        '- filters.tags[1]: Invalid input: expected string, received number',
      ].join('\n'),
    });
  });

  it('validates with async refinements through a Promise', async () => {
    const tool = defineTool({
      name: 'slow',
      description: 'd',
      parameters: z.object({ name: z.string().refine(async (v) => v.length > 2, 'too short') }),
      execute: () => 'ok',
    });
    const outcome = validateToolArguments(tool, { name: 'ab' });
    expect(outcome).toBeInstanceOf(Promise);
    expect(await outcome).toEqual({ ok: false, message: 'Invalid arguments for tool "slow":\n- name: too short' });
  });

  it("parses a schema's first 16 calls without compiling it, then compiles it once, with the same outcomes", () => {
    // zod compiles an object schema's parser with `new Function`; counted by wrapping the global it looks up.
    const compiled: unknown[] = [];
    const original = globalThis.Function;
    globalThis.Function = new Proxy(original, {
      construct: (target, args: unknown[]) => (compiled.push(args.at(-1)), Reflect.construct(target, args)),
    });
    try {
      const tool = defineTool({
        name: 'search2',
        description: 'd',
        parameters: z.object({
          query: z.string(),
          limit: z.number().int().default(10),
          filters: z.object({ tags: z.array(z.string()) }).optional(),
        }),
        execute: () => 'ok',
      });
      const valid = { query: 'cats', filters: { tags: ['a'] } };
      const invalid = { query: 3, limit: 1.5, filters: { tags: ['a', 7] } };
      const first = [validateToolArguments(tool, valid), validateToolArguments(tool, invalid)];
      for (let k = 2; k < 16; k++) void validateToolArguments(tool, valid);
      expect(compiled).toEqual([]);
      const later = [validateToolArguments(tool, valid), validateToolArguments(tool, invalid)];
      expect(compiled.length).toBeGreaterThan(0);
      const afterCompile = compiled.length;
      for (let k = 0; k < 50; k++) void validateToolArguments(tool, valid);
      expect(compiled.length).toBe(afterCompile);
      expect(later).toEqual(first);
      expect(first[0]).toEqual({ ok: true, args: { query: 'cats', limit: 10, filters: { tags: ['a'] } } });
      expect(first[1]).toMatchObject({ ok: false, message: expect.stringContaining('- filters.tags[1]:') });
    } finally {
      globalThis.Function = original;
    }
  });

  it("runs none of the schema's refinements or transforms at definition, and an async check once per call", async () => {
    const ran: string[] = [];
    const parameters = z
      .object({ n: z.number().optional() })
      .refine(async ({ n }) => (ran.push('refine'), n !== 13), 'unlucky')
      .transform((value) => (ran.push('transform'), value));
    const tool = defineTool({ name: 'probe', description: 'd', parameters, execute: () => 'ok' });
    expect(ran).toEqual([]);
    // The first validation learns that the schema is asynchronous (a synchronous attempt, then the real parse).
    expect(await validateToolArguments(tool, { n: 1 })).toEqual({ ok: true, args: { n: 1 } });
    expect(ran).toEqual(['refine', 'refine', 'transform']);
    ran.length = 0;
    expect(await validateToolArguments(tool, { n: 13 })).toEqual({
      ok: false,
      message: 'Invalid arguments for tool "probe":\n- (arguments): unlucky',
    });
    expect(ran).toEqual(['refine']);
  });

  it.each([
    [{ name: 'has space' }, /invalid tool name "has space"/],
    [{ name: '' }, /invalid tool name ""/],
    [{ description: undefined }, /needs a description/],
    [{ execute: undefined }, /needs an execute function/],
    [
      { parameters: { type: 'object' } },
      /must be a zod 4 schema, got an object that is not a zod schema \(keys: type\)/,
    ],
    [{ parameters: undefined }, /must be a zod 4 schema, got undefined/],
    [{ parameters: z.string() }, /must be an object schema/],
    [{ timeoutMs: 0 }, /timeoutMs .* must be a positive number/],
    [{ executionMode: 'later' }, /executionMode .* must be "parallel" or "sequential"/],
  ])('rejects a bad definition at once (%j)', (override, message) => {
    const spec = { name: 'ok', description: 'd', parameters: z.object({}), execute: () => 'ok', ...override };
    expect(() => defineTool(spec as never)).toThrow(ConfigurationError);
    expect(() => defineTool(spec as never)).toThrow(message);
  });

  it('refuses a zod 3 schema at once, saying that zod 4 is needed and how to get it', () => {
    // zod 4 ships zod 3 as `zod/v3`: a real zod 3 schema (`_def`, no `_zod`), as an app on zod@3 would pass.
    const define = () =>
      defineTool({
        name: 'weather',
        description: 'd',
        parameters: z3.object({ city: z3.string() }) as never,
        execute: () => 'ok',
      });
    expect(define).toThrow(ConfigurationError);
    expect(define).toThrow(
      `defineTool: the parameters of tool "weather" must be a zod 4 schema, got a zod 3 schema. cubepi needs zod 4 (peer dependency zod ^4.0.0): upgrade zod (npm install zod@^4) and import { z } from 'zod', not from 'zod/v3'`,
    );
    expect(() => new StructuredOutput(z3.object({ city: z3.string() }) as never)).toThrow(
      /^StructuredOutput: expected a zod 4 schema, got a zod 3 schema\. cubepi needs zod 4/,
    );
  });

  it('refuses a zod/mini schema, whose parse functions are not methods', () => {
    const define = () =>
      defineTool({
        name: 'weather',
        description: 'd',
        parameters: zm.object({ city: zm.string() }) as never,
        execute: () => 'ok',
      });
    expect(define).toThrow(/must be a zod 4 schema, got a zod\/mini schema/);
  });
});
