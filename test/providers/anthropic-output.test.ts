// Native structured output on AnthropicProvider, through the real @anthropic-ai/sdk client against a local server:
// the request body (`output_config.format`), the JSON answer, and the schemas Claude cannot express refused before
// sending. The fixtures hold no recorded Anthropic structured-output stream: the answer is the documented wire format
// (`anthropicMessagesWire`, a text block whose text is the JSON), split at awkward places.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findModel, MODELS, userMessage, type NativeOutputRequest } from 'cubepi';
import { AnthropicProvider } from 'cubepi/providers/anthropic';
import { anthropicMessagesWire } from 'cubepi/testing';
import { z } from 'zod';
import { ReplayServer, sse } from './replay-server.js';
import { collectStream, expectWellFormed } from './stream-harness.js';

const SONNET = findModel('claude-sonnet-4-6')!;

let server: ReplayServer;
beforeAll(async () => {
  server = await ReplayServer.start();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const provider = () => new AnthropicProvider({ apiKey: 'test-key', baseURL: server.url });
const answer = (parts: string[]) => sse(anthropicMessagesWire.text(parts, { input: 20, output: 12 }).chunks.join(''));
const lastBody = () => server.requests[server.requests.length - 1]!.body;

const Weather = z.object({
  city: z.string().min(2).describe('The city'),
  unit: z.enum(['c', 'f']),
  readings: z.array(z.number().int().max(60)).min(3),
  note: z.string().optional(),
});

function outputOf(schema: z.ZodType, description?: string): NativeOutputRequest {
  return {
    name: 'weather',
    schema: z.toJSONSchema(schema),
    strict: true,
    description,
  };
}

describe('AnthropicProvider: native structured output', () => {
  it('sends output_config.format json_schema with closed objects and unenforced constraints in descriptions; the text is the JSON', async () => {
    const json = '{"city":"Oslo","unit":"c","readings":[3,4,5]}';
    server.reply(answer(['{"ci', 'ty":"Os', 'lo","unit":"c","readings":[3,', '4,5]}']));
    const stream = await collectStream(
      provider().stream(SONNET, [userMessage('Weather in Oslo?')], { output: outputOf(Weather, 'Today in a city') }),
    );
    expectWellFormed(stream);
    expect(stream.message.content).toEqual([{ type: 'text', text: json }]);
    expect(Weather.parse(JSON.parse(json))).toEqual({ city: 'Oslo', unit: 'c', readings: [3, 4, 5] });
    const body = lastBody();
    expect(body.output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          description: 'Today in a city',
          properties: {
            city: { type: 'string', description: 'The city\n\n{minLength: 2}' },
            unit: { enum: ['c', 'f'] },
            readings: {
              type: 'array',
              items: { type: 'integer', description: expect.stringContaining('maximum: 60') as string },
              description: '{minItems: 3}',
            },
            note: { type: 'string' },
          },
          additionalProperties: false,
          required: ['city', 'unit', 'readings'],
        },
      },
    });
    // No beta header: structured outputs are generally available on the Messages API.
    expect(server.requests[0]!.headers['anthropic-beta']).toBeUndefined();
    expect(body.tools).toBeUndefined();
  });

  it('keeps $defs and $ref, anyOf for oneOf, and works with tools in the same request', async () => {
    server.reply(answer(['{"a":{"x":"1"}}']));
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { a: { $ref: '#/$defs/A' }, b: { oneOf: [{ type: 'string' }, { type: 'null' }] } },
      required: ['a'],
      $defs: { A: { type: 'object', properties: { x: { type: 'string' } } } },
    };
    const tools = [{ name: 'lookup', description: 'Look up', inputSchema: { type: 'object', properties: {} } }];
    await collectStream(
      provider().stream(SONNET, [userMessage('x')], {
        tools,
        output: { name: 'answer', schema, strict: true },
      }),
    );
    const body = lastBody();
    expect(body.output_config.format.schema).toEqual({
      $defs: { A: { type: 'object', properties: { x: { type: 'string' } }, additionalProperties: false } },
      type: 'object',
      properties: { a: { $ref: '#/$defs/A' }, b: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
      additionalProperties: false,
      required: ['a'],
    });
    expect(body.tools.map((t: { name: string }) => t.name)).toEqual(['lookup']);
    // The caller's schema is not modified.
    expect(schema.properties.b).toEqual({ oneOf: [{ type: 'string' }, { type: 'null' }] });
  });

  it.each([
    ['an open record', z.object({ tags: z.record(z.string(), z.string()) }), '/properties/tags', 'an open object'],
    [
      'a value of any type',
      z.object({ meta: z.object({ raw: z.any() }) }),
      '/properties/meta/properties/raw',
      'any type',
    ],
  ])('refuses %s before sending, naming the path (bad_request)', async (_, schema, path, why) => {
    const { events, message } = await collectStream(
      provider().stream(SONNET, [userMessage('x')], { output: outputOf(schema) }),
    );
    expect(events.map((e) => e.type)).toEqual(['error']);
    expect(message.errorKind).toBe('bad_request');
    expect(message.errorMessage).toContain(`at ${path}, `);
    expect(message.errorMessage).toContain(why);
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a recursive schema before sending', async () => {
    const schema = {
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
      $defs: {
        Node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/Node' } } } },
      },
    };
    const { message } = await collectStream(
      provider().stream(SONNET, [userMessage('x')], { output: { name: 'tree', schema, strict: true } }),
    );
    expect(message.errorKind).toBe('bad_request');
    expect(message.errorMessage).toContain('at /$defs/Node/properties/children/items, the schema is recursive');
    expect(server.requests).toHaveLength(0);
  });
});

describe('the model table: native structured output on Claude', () => {
  // Anthropic's structured outputs: Opus 4.1 (in the beta's first list) and every model from the 4.5 generation on;
  // Bedrock's: Claude Haiku, Sonnet and Opus 4.5, Opus 4.6 and later (not Opus 4.1 or Claude 4).
  const json = (provider: string) =>
    MODELS.filter((m) => m.provider === provider && /claude/.test(m.id))
      .filter((m) => m.structuredOutput === 'json_schema')
      .map((m) => m.id);
  const none = (provider: string) =>
    MODELS.filter((m) => m.provider === provider && /claude/.test(m.id))
      .filter((m) => m.structuredOutput !== 'json_schema')
      .map((m) => m.id);

  it('Anthropic: json_schema exactly on Opus 4.1 and 4.5 on', () => {
    expect(none('anthropic').sort()).toEqual(
      ['claude-3-5-sonnet-20240620', 'claude-3-haiku-20240307', 'claude-opus-4-0', 'claude-sonnet-4-0'].sort(),
    );
    expect(json('anthropic')).toEqual(
      expect.arrayContaining(['claude-opus-4-1', 'claude-haiku-4-5', 'claude-opus-4-5']),
    );
  });

  it('Bedrock: json_schema exactly on Claude 4.5 on', () => {
    for (const id of none('bedrock')) expect(id).toMatch(/claude-3|claude-(opus|sonnet)-4-(1-)?2025/);
    for (const id of json('bedrock')) expect(id).toMatch(/claude-(opus|sonnet|haiku|fable|mythos)-(4-[5-9]|5)/);
    expect(json('bedrock')).toEqual(
      expect.arrayContaining([
        'global.anthropic.claude-haiku-4-5-20251001-v1:0',
        'global.anthropic.claude-sonnet-4-5-20250929-v1:0',
        'global.anthropic.claude-opus-4-5-20251101-v1:0',
        'anthropic.claude-opus-4-6-v1',
      ]),
    );
  });
});
