// Native structured output on Gemini (`request.output` → responseMimeType + responseJsonSchema), through the real
// @google/genai client against a local server. The vendored Gemini recordings (test/fixtures/providers/google) hold no
// structured-output stream: the answers here are hand-built in the documented GenerateContentResponse shape (a JSON
// answer is ordinary text parts), and what is asserted is the request body the SDK sent.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MODELS, userMessage, type Model, type NativeOutputRequest, type ToolDefinition } from 'cubepi';
import { GoogleProvider } from 'cubepi/providers/google';
import { fakeVertexAuth } from './google-recordings.js';
import { geminiText } from './google-wire.js';
import { ReplayServer } from './replay-server.js';
import { collectStream, expectWellFormed } from './stream-harness.js';

const FLASH3: Model = { id: 'gemini-3-flash-preview', provider: 'google', reasoning: true };
const PRO25: Model = { id: 'gemini-2.5-pro', provider: 'google', reasoning: true };

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const gemini = () => new GoogleProvider({ apiKey: 'test-key', baseURL: server.url });

const weatherTool: ToolDefinition = {
  name: 'weather',
  description: 'Weather in a city',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const answer = z.object({
  city: z.string().describe('The city'),
  temperature: z.number().min(-90).max(60),
  conditions: z.enum(['sunny', 'cloudy', 'rain']),
  note: z.string().nullable(),
});

function output(schema: Record<string, unknown>, extra: Partial<NativeOutputRequest> = {}): NativeOutputRequest {
  return { name: 'answer', schema, strict: true, ...extra };
}

describe('GoogleProvider: native structured output', () => {
  it('Gemini 3 with tools: responseMimeType and responseJsonSchema (zod 4 JSON Schema without $schema) beside the function declarations; the JSON answer is the text', async () => {
    const json = JSON.stringify({ city: 'Oslo', temperature: 4, conditions: 'rain', note: null });
    server.reply(geminiText([json.slice(0, 7), json.slice(7, 30), json.slice(30)]));
    const schema = z.toJSONSchema(answer, { io: 'output' }) as Record<string, unknown>;
    expect(schema.$schema).toBeDefined(); // what zod gives, and what must not reach Gemini
    const stream = await collectStream(
      gemini().stream(FLASH3, [userMessage('Weather in Oslo?')], {
        tools: [weatherTool],
        output: output(schema, { description: 'The weather report' }),
      }),
    );
    expectWellFormed(stream);
    const { $schema: _dropped, ...rest } = schema;
    const body = server.requests[0]!.body;
    expect(body.generationConfig.responseMimeType).toBe('application/json');
    expect(body.generationConfig.responseJsonSchema).toEqual({ ...rest, description: 'The weather report' });
    expect(body.tools[0].functionDeclarations.map((d: { name: string }) => d.name)).toEqual(['weather']);
    expect(stream.message.stopReason).toBe('stop');
    const text = stream.message.content.find((block) => block.type === 'text');
    expect(answer.parse(JSON.parse(text?.type === 'text' ? text.text : ''))).toEqual(JSON.parse(json));
  });

  it("the schema's own description is kept over the output's; Vertex AI gets the same fields", async () => {
    server.reply(geminiText(['{}']));
    const vertex = new GoogleProvider({
      vertexai: true,
      project: 'p',
      location: 'us-central1',
      googleAuthOptions: fakeVertexAuth,
      baseURL: server.url,
    });
    const schema = { type: 'object', description: 'Mine', properties: {}, additionalProperties: false };
    await collectStream(vertex.stream(FLASH3, [userMessage('Hi')], { output: output(schema, { description: 'Not' }) }));
    expect(server.requests[0]!.path).toContain('/publishers/google/models/gemini-3-flash-preview:');
    expect(server.requests[0]!.body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
    });
  });

  it('Gemini 2.5 with function declarations: refused as model_incapable before anything is sent (Gemini answers 400 to that pair)', async () => {
    const stream = await collectStream(
      gemini().stream(PRO25, [userMessage('Hi')], { tools: [weatherTool], output: output({ type: 'object' }) }),
    );
    expectWellFormed(stream);
    expect(stream.events.map((e) => e.type)).toEqual(['error']);
    expect(stream.message).toMatchObject({
      stopReason: 'error',
      errorKind: 'model_incapable',
      model: 'gemini-2.5-pro',
    });
    expect(stream.message.errorMessage).toMatch(/gemini-2\.5-pro cannot take native structured output.*Gemini 3/);
    expect(server.requests).toHaveLength(0);
  });

  it.each([['required'], [{ type: 'tool', name: 'weather' }]] as const)(
    'a forced tool choice (%j, ANY mode) with native output is refused even on Gemini 3, nothing sent',
    async (toolChoice) => {
      const stream = await collectStream(
        gemini().stream(FLASH3, [userMessage('Hi')], { tools: [weatherTool], toolChoice, output: output({}) }),
      );
      expect(stream.message.errorKind).toBe('model_incapable');
      expect(stream.message.errorMessage).toContain('Forced function calling (ANY mode)');
      expect(server.requests).toHaveLength(0);
    },
  );

  it('Gemini 2.5 without tools, or with tool choice none, is sent with the schema', async () => {
    server.reply(geminiText(['{"a":1}']), geminiText(['{"a":2}']));
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    await collectStream(gemini().stream(PRO25, [userMessage('Hi')], { output: output(schema) }));
    await collectStream(
      gemini().stream(PRO25, [userMessage('Hi')], { tools: [weatherTool], toolChoice: 'none', output: output(schema) }),
    );
    expect(server.requests.map((r) => r.body.generationConfig.responseJsonSchema)).toEqual([schema, schema]);
    expect(server.requests[1]!.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } });
  });

  it('a model whose table row says json_mode (Gemini 1.5) is refused before sending; one that says so itself too', async () => {
    for (const model of [
      { id: 'gemini-1.5-pro', provider: 'google' },
      { id: 'gemini-x-tuned', provider: 'google', structuredOutput: false as const },
    ]) {
      const stream = await collectStream(gemini().stream(model, [userMessage('Hi')], { output: output({}) }));
      expect(stream.message.errorKind).toBe('model_incapable');
      expect(stream.message.errorMessage).toContain(`${model.id} takes no JSON Schema for its answer`);
    }
    expect(server.requests).toHaveLength(0);
  });

  it('a request without output asks for no JSON', async () => {
    server.reply(geminiText(['hi']));
    await collectStream(gemini().stream(FLASH3, [userMessage('Hi')]));
    expect(server.requests[0]!.body.generationConfig?.responseMimeType).toBeUndefined();
    expect(server.requests[0]!.body.generationConfig?.responseJsonSchema).toBeUndefined();
  });
});

describe("GoogleProvider: the schema made into Gemini's subset", () => {
  async function sentSchema(schema: Record<string, unknown>) {
    server.reply(geminiText(['{}']));
    await collectStream(gemini().stream(FLASH3, [userMessage('Hi')], { output: output(schema) }));
    return server.requests.at(-1)!.body.generationConfig.responseJsonSchema;
  }

  it('const → a one-value enum, const null → type null; definitions → $defs with their $refs; tuple items → prefixItems', async () => {
    const sent = await sentSchema({
      type: 'object',
      properties: {
        kind: { const: 'point' },
        nothing: { const: null },
        at: { $ref: '#/definitions/pair' },
      },
      definitions: { pair: { type: 'array', items: [{ type: 'number' }, { type: 'number' }] } },
    });
    expect(sent).toEqual({
      type: 'object',
      properties: {
        kind: { enum: ['point'] },
        nothing: { type: 'null' },
        at: { $ref: '#/$defs/pair' },
      },
      $defs: { pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }] } },
    });
  });

  it('a $ref with siblings becomes anyOf of the $ref beside them; allOf of one schema → anyOf of it', async () => {
    const sent = await sentSchema({
      type: 'object',
      properties: {
        home: { $ref: '#/$defs/place', description: 'Where they live' },
        work: { allOf: [{ $ref: '#/$defs/place' }] },
      },
      $defs: { place: { type: 'string' } },
    });
    expect(sent.properties).toEqual({
      home: { description: 'Where they live', anyOf: [{ $ref: '#/$defs/place' }] },
      work: { anyOf: [{ $ref: '#/$defs/place' }] },
    });
  });

  it('value constraints Gemini does not enforce are dropped; the ones it takes are kept', async () => {
    const sent = await sentSchema({
      type: 'object',
      properties: {
        code: { type: 'string', pattern: '^[A-Z]{3}$', minLength: 3, maxLength: 3, default: 'AAA' },
        n: { type: 'integer', minimum: 1, maximum: 9, exclusiveMaximum: 10, multipleOf: 1 },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3, uniqueItems: true },
      },
      required: ['code'],
      additionalProperties: false,
    });
    expect(sent).toEqual({
      type: 'object',
      properties: {
        code: { type: 'string' },
        n: { type: 'integer', minimum: 1, maximum: 9 },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
      },
      required: ['code'],
      additionalProperties: false,
    });
  });

  it.each([
    [{ allOf: [{ type: 'object' }, { required: ['a'] }] }, '/properties/x/allOf', '"allOf"'],
    [{ not: { type: 'string' } }, '/properties/x/not', '"not"'],
    [{ type: 'object', patternProperties: { '^a': {} } }, '/properties/x/patternProperties', '"patternProperties"'],
    [{ enum: ['a', true] }, '/properties/x/enum/1', 'strings and numbers only, not true'],
    [{ const: false }, '/properties/x/const', 'not false'],
    [{ $ref: '#/$defs/a', anyOf: [{ type: 'string' }] }, '/properties/x/$ref', 'intersection'],
  ])('refused before sending, as bad_request naming the path: %j', async (x, path, why) => {
    const stream = await collectStream(
      gemini().stream(FLASH3, [userMessage('Hi')], {
        output: output({ type: 'object', properties: { x }, $defs: { a: { type: 'string' } } }),
      }),
    );
    expect(stream.events.map((e) => e.type)).toEqual(['error']);
    expect(stream.message.errorKind).toBe('bad_request');
    expect(stream.message.errorMessage).toContain(`Output schema at ${path}:`);
    expect(stream.message.errorMessage).toContain(why);
    expect(server.requests).toHaveLength(0);
  });

  it('the schema given is not changed', async () => {
    const schema = { type: 'object', properties: { a: { const: 'x', pattern: 'x' } }, definitions: {} };
    const copy = structuredClone(schema);
    await sentSchema(schema);
    expect(schema).toEqual(copy);
  });
});

describe('the model table: which Gemini rows say json_schema', () => {
  it('every Gemini from 2.0 on says json_schema (responseJsonSchema); the retired 1.5 rows say json_mode', () => {
    const rows = MODELS.filter((m) => m.provider === 'google');
    const old = rows.filter((m) => /^gemini-1\.5/.test(m.id));
    expect(old.map((m) => m.id).sort()).toEqual(['gemini-1.5-flash', 'gemini-1.5-flash-8b', 'gemini-1.5-pro']);
    for (const m of old) expect([m.id, m.structuredOutput]).toEqual([m.id, 'json_mode']);
    const rest = rows.filter((m) => !old.includes(m));
    expect(rest.length).toBeGreaterThan(20);
    for (const m of rest) expect([m.id, m.structuredOutput]).toEqual([m.id, 'json_schema']);
  });
});
