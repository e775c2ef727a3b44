/**
 * The last check before a strict `json_schema` goes to OpenAI: the rules whose breach the API answers with a 400.
 * @module
 */
import type { NativeOutputRequest } from '../types/output.js';
import type { JsonSchema } from '../types/provider.js';
import { OpenAIRequestRefusal } from './openai-request-refusal.js';

/**
 * Where a schema sent with `strict: true` breaks OpenAI's Structured Outputs rules, or undefined when it keeps them:
 * the root is an object (not `anyOf`), and every object — nested ones too, in `properties`, `items`, `prefixItems`,
 * `anyOf`, `$defs` and `definitions` — has `additionalProperties: false` and lists each of its properties in
 * `required`. The runner checks this before it asks for native output (`NativeOutputRequest.strict`); this second
 * check, in the provider, turns a schema that slipped past it into a typed error naming the path (`$.properties.tags`)
 * instead of a vendor 400.
 */
export function strictSchemaProblem(schema: JsonSchema): string | undefined {
  if (schema.type !== 'object' || schema.anyOf !== undefined) {
    return '$: the root of a strict schema must be an object (type "object", not anyOf)';
  }
  return walk(schema, '$');
}

function walk(node: unknown, path: string): string | undefined {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
  const schema = node as Record<string, unknown>;
  const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
  const properties = isRecord(schema.properties) ? schema.properties : undefined;
  if (types.includes('object') || properties !== undefined) {
    if (schema.additionalProperties !== false) {
      return `${path}: every object of a strict schema needs additionalProperties: false`;
    }
    const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
    const missing = Object.keys(properties ?? {}).filter((key) => !required.includes(key));
    if (missing.length > 0) {
      return `${path}: a strict schema requires every property (not in required: ${missing.join(', ')}; make an optional one nullable instead)`;
    }
  }
  const children: [unknown, string][] = [];
  for (const [key, child] of Object.entries(properties ?? {})) children.push([child, `${path}.properties.${key}`]);
  if (schema.items !== undefined) children.push([schema.items, `${path}.items`]);
  for (const key of ['prefixItems', 'anyOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((child, i) => children.push([child, `${path}.${key}[${i}]`]));
  }
  for (const key of ['$defs', 'definitions'] as const) {
    const defs = schema[key];
    if (isRecord(defs))
      for (const [name, child] of Object.entries(defs)) children.push([child, `${path}.${key}.${name}`]);
  }
  for (const [child, at] of children) {
    const problem = walk(child, at);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Throws the typed refusal of a strict `output` whose schema breaks the rules ({@link strictSchemaProblem}). */
export function assertStrictSchema(api: string, output: NativeOutputRequest): void {
  if (!output.strict) return;
  const problem = strictSchemaProblem(output.schema);
  if (problem !== undefined) {
    throw new OpenAIRequestRefusal(
      'bad_request',
      `${api} cannot take the output schema "${output.name}" in strict mode: ${problem}`,
    );
  }
}
