// Native structured output on BedrockProvider (Converse `outputConfig.textFormat`), through the real
// @aws-sdk/client-bedrock-runtime client against the local HTTP/2 server. The fixtures hold no recorded Bedrock
// structured-output stream: the answer is Converse's documented event stream, a text block whose text is the JSON.
import { describe, expect, it } from 'vitest';
import { findModel, userMessage, type Model } from 'cubepi';
import { z } from 'zod';
import { answer, useBedrockServer } from './bedrock-native.js';
import { collectStream, expectWellFormed } from './stream-harness.js';

const { server, provider } = useBedrockServer();
const SONNET: Model = findModel('global.anthropic.claude-sonnet-4-5-20250929-v1:0')!;
const QWEN: Model = { id: 'qwen.qwen3-32b-v1:0', provider: 'bedrock' };
const lastBody = () => server().requests.at(-1)!.body;

const Invoice = z.object({ total: z.number().min(0), lines: z.array(z.string()).max(10) });

describe('BedrockProvider: native structured output', () => {
  it('Claude: outputConfig.textFormat json_schema, the schema rewritten for Claude and sent as a JSON string', async () => {
    server().reply(answer('{"total":', '12.5,"lines":["a"]}'));
    const stream = await collectStream(
      provider().stream(SONNET, [userMessage('Invoice?')], {
        output: { name: 'invoice', description: 'The invoice', schema: z.toJSONSchema(Invoice), strict: true },
      }),
    );
    expectWellFormed(stream);
    expect(Invoice.parse(JSON.parse((stream.message.content[0] as { text: string }).text))).toEqual({
      total: 12.5,
      lines: ['a'],
    });
    const format = lastBody().outputConfig.textFormat;
    expect(format.type).toBe('json_schema');
    expect(format.structure.jsonSchema.name).toBe('invoice');
    expect(format.structure.jsonSchema.description).toBe('The invoice');
    expect(JSON.parse(format.structure.jsonSchema.schema)).toEqual({
      type: 'object',
      description: 'The invoice',
      properties: {
        total: { type: 'number', description: '{minimum: 0}' },
        lines: { type: 'array', items: { type: 'string' }, description: '{maxItems: 10}' },
      },
      additionalProperties: false,
      required: ['total', 'lines'],
    });
  });

  it('another family: the schema as given', async () => {
    server().reply(answer('{"total":1,"lines":[]}'));
    const schema = z.toJSONSchema(Invoice);
    await collectStream(
      provider().stream(QWEN, [userMessage('x')], { output: { name: 'invoice', schema, strict: false } }),
    );
    const jsonSchema = lastBody().outputConfig.textFormat.structure.jsonSchema;
    expect(jsonSchema).toEqual({ name: 'invoice', schema: JSON.stringify(schema) });
  });

  it('Claude: a schema it cannot express is a bad_request error naming the path, nothing sent', async () => {
    const before = server().requests.length;
    const { events, message } = await collectStream(
      provider().stream(SONNET, [userMessage('x')], {
        output: { name: 'm', schema: z.toJSONSchema(z.object({ m: z.record(z.string(), z.number()) })), strict: false },
      }),
    );
    expect(events.map((e) => e.type)).toEqual(['error']);
    expect(message.errorKind).toBe('bad_request');
    expect(message.errorMessage).toContain('at /properties/m, an open object');
    expect(server().requests.length).toBe(before);
  });
});
