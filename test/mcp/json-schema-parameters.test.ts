import { describe, expect, it } from 'vitest';
import { MAX_SCHEMA_CHARS, parametersFromJsonSchema } from 'cubepi/mcp';

describe('parametersFromJsonSchema', () => {
  it('checks arguments against the schema (local $refs, enums, nested arrays) and keeps the schema for the model', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        mode: { enum: ['fast', 'slow'] },
        node: { $ref: '#/$defs/Node' },
      },
      required: ['mode'],
      $defs: { Node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/Node' } } } } },
    };
    const converted = parametersFromJsonSchema(schema);
    if (!converted.ok) throw new Error(converted.reason);
    expect(converted.inputSchema).not.toHaveProperty('$schema');
    expect(converted.inputSchema.properties).toEqual(schema.properties);
    expect(converted.parameters.safeParse({ mode: 'fast', node: { children: [{ children: [] }] } }).success).toBe(true);
    const bad = converted.parameters.safeParse({ mode: 'medium', node: { children: [{ children: 'no' }] } });
    expect(bad.success ? [] : bad.error.issues.map((issue) => issue.path.join('.'))).toEqual([
      'mode',
      'node.children.0.children',
    ]);
    // The server's object is copied: changing it later changes nothing here.
    schema.properties.mode.enum.push('medium');
    expect(converted.parameters.safeParse({ mode: 'medium' }).success).toBe(false);
  });

  it('refuses what it cannot check, saying why, without throwing', () => {
    const reason = (schema: unknown) => {
      const converted = parametersFromJsonSchema(schema);
      return converted.ok ? 'accepted' : converted.reason;
    };
    expect(reason(null)).toBe('its input schema is not a JSON object');
    expect(reason({ type: 'array' })).toBe('its input schema must have type "object", got "array"');
    expect(reason({ type: 'object', description: 'x'.repeat(MAX_SCHEMA_CHARS) })).toMatch(
      /^its input schema is too large/,
    );
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { a: deep } };
    expect(reason(deep)).toBe('its input schema nests deeper than 32 levels');
    // A hostile server's schema nested 100,000 levels: measured without recursion, so no stack overflow to report.
    let abyss: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100_000; i++) abyss = { type: 'object', properties: { a: abyss } };
    expect(reason(abyss)).toBe('its input schema nests deeper than 32 levels');
    expect(reason({ type: 'object', properties: { a: { if: { type: 'string' }, then: {} } } })).toMatch(
      /^its input schema cannot be checked: /,
    );
    const cyclic: Record<string, unknown> = { type: 'object' };
    cyclic.properties = { self: cyclic };
    expect(reason(cyclic)).toBe('its input schema nests deeper than 32 levels');
  });
});
