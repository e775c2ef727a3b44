/**
 * The JSON Schema of a run's `output`, and whether a vendor's strict structured-output mode can express it.
 * @module
 */
import { z } from 'zod';
import type { OutputSchema, OutputSpec } from '../types/output.js';
import type { JsonSchema } from '../types/provider.js';

/** The schema of an {@link OutputSpec}: the spec itself, or its `schema` field. */
export function outputSchemaOf(spec: OutputSpec): OutputSchema {
  return '~standard' in spec ? spec : spec.schema;
}

/**
 * The JSON Schema (draft 2020-12) of the values `spec` validates to, without `$schema`: the Standard JSON Schema
 * converter of the schema (`~standard.jsonSchema.output({ target: 'draft-2020-12' })`), else, for a zod 4 schema
 * without it, `z.toJSONSchema(schema, { io: 'output' })`. Throws a `TypeError` for a schema that gives neither (the
 * option checks report that before a run: see docs/output.md).
 *
 * @example
 * outputJsonSchema(z.object({ city: z.string() }))
 * // { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
 */
export function outputJsonSchema(spec: OutputSpec): JsonSchema {
  const schema = outputSchemaOf(spec);
  const converter = schema['~standard'].jsonSchema;
  let json: Record<string, unknown>;
  if (converter !== undefined) json = { ...converter.output({ target: 'draft-2020-12' }) };
  else if (schema instanceof z.ZodType) json = { ...(z.toJSONSchema(schema, { io: 'output' }) as object) };
  else
    throw new TypeError(
      `output: the ${schema['~standard'].vendor} schema gives no JSON Schema (~standard.jsonSchema): use a Standard JSON Schema`,
    );
  delete json.$schema;
  return json;
}

/** Where a schema breaks the strict mode (a JSON Pointer into the schema, `''` for its root) and how. */
export interface StrictSchemaProblem {
  readonly path: string;
  readonly message: string;
}

/** Keywords strict mode takes, per what they constrain (OpenAI's structured-outputs subset of JSON Schema). */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$comment', '$id']);
const GENERIC = new Set(['type', 'enum', 'const', 'anyOf', '$ref', '$defs', 'definitions']);
const BY_TYPE: Readonly<Record<string, ReadonlySet<string>>> = {
  object: new Set(['properties', 'required', 'additionalProperties']),
  array: new Set(['items', 'minItems', 'maxItems']),
  string: new Set(['pattern', 'format']),
  number: new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']),
  integer: new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']),
  boolean: new Set(),
  null: new Set(),
};
const MAX_DEPTH = 10;
const MAX_PROPERTIES = 5000;

/**
 * The first reason a vendor's strict structured-output mode (OpenAI's rules, the strictest of the vendors) cannot
 * take `schema`, or `undefined` when it can:
 * - the root is an object schema (not a union, not an array);
 * - every object has `additionalProperties: false` and lists every property in `required` (so an optional field, a
 *   `z.record`, a passthrough object are refused: make optional fields `.nullable()`);
 * - every subschema says what it holds (`{}` — `z.any()`, `z.unknown()` — is refused);
 * - only supported keywords: `type`, `enum`, `const`, `anyOf` (not `oneOf`, `allOf`, `not`, `if`), `$ref`/`$defs`,
 *   annotations, and per type `properties`/`required`/`additionalProperties`, `items`/`minItems`/`maxItems`,
 *   `pattern`/`format`, `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum`/`multipleOf`;
 * - at most 10 levels of nesting and 5,000 properties in all.
 *
 * `path` is a JSON Pointer into the schema (`/properties/meta/additionalProperties`). Used at configuration time for a
 * model with native structured output (docs/output.md); it depends on nothing but the schema.
 *
 * @example
 * strictSchemaProblem(outputJsonSchema(z.object({ tags: z.record(z.string(), z.string()) })))
 * // { path: '/properties/tags', message: 'an open record (additionalProperties is a schema): …' }
 */
export function strictSchemaProblem(schema: JsonSchema): StrictSchemaProblem | undefined {
  const root = schema as Record<string, unknown>;
  if (root.type !== 'object')
    return {
      path: '',
      message: `the root must be an object schema (type "object"), got ${describe(root)}`,
    };
  const counter = { properties: 0 };
  return check(root, '', 0, counter);
}

function check(
  node: unknown,
  path: string,
  depth: number,
  counter: { properties: number },
): StrictSchemaProblem | undefined {
  if (typeof node !== 'object' || node === null || Array.isArray(node))
    return { path, message: 'a subschema must be an object (true/false schemas are not supported)' };
  const schema = node as Record<string, unknown>;
  if (depth > MAX_DEPTH) return { path, message: `nested more than ${MAX_DEPTH} levels deep` };
  const keys = Object.keys(schema);
  const constrains = keys.some((key) => !ANNOTATIONS.has(key));
  if (!constrains)
    return { path, message: 'a schema that takes any value ({}, z.any(), z.unknown()) cannot be strict' };
  const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
  // An object's own rules first: a record's `propertyNames` is better reported as the open record it is.
  if (types.includes('object')) {
    const problem = checkObject(schema, path, depth, counter);
    if (problem !== undefined) return problem;
  }
  for (const key of keys) {
    if (ANNOTATIONS.has(key) || GENERIC.has(key)) continue;
    if (types.some((type) => typeof type === 'string' && BY_TYPE[type]?.has(key) === true)) continue;
    if (key === 'oneOf') return { path, message: 'oneOf is not supported in strict mode (use anyOf: z.union)' };
    return { path: `${path}/${escape(key)}`, message: `the keyword "${key}" is not supported in strict mode` };
  }
  for (const type of types) {
    if (type !== undefined && (typeof type !== 'string' || BY_TYPE[type] === undefined))
      return { path: `${path}/type`, message: `the type ${JSON.stringify(type)} is not supported` };
  }
  if (schema.items !== undefined) {
    const problem = check(schema.items, `${path}/items`, depth + 1, counter);
    if (problem !== undefined) return problem;
  } else if (types.includes('array')) {
    return { path, message: 'an array must say what its items are (items)' };
  }
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf)) return { path: `${path}/anyOf`, message: 'anyOf must be an array' };
    for (let i = 0; i < schema.anyOf.length; i++) {
      const problem = check(schema.anyOf[i], `${path}/anyOf/${i}`, depth + 1, counter);
      if (problem !== undefined) return problem;
    }
  }
  for (const defs of ['$defs', 'definitions'] as const) {
    const definitions = schema[defs];
    if (definitions === undefined) continue;
    if (typeof definitions !== 'object' || definitions === null)
      return { path: `${path}/${defs}`, message: `${defs} must be an object` };
    for (const [name, definition] of Object.entries(definitions)) {
      const problem = check(definition, `${path}/${defs}/${escape(name)}`, 0, counter);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

function checkObject(
  schema: Record<string, unknown>,
  path: string,
  depth: number,
  counter: { properties: number },
): StrictSchemaProblem | undefined {
  const additional = schema.additionalProperties;
  if (typeof additional === 'object' && additional !== null)
    return {
      path,
      message:
        'an open record (additionalProperties is a schema: z.record, a catchall) cannot be strict: strict mode needs additionalProperties: false and fixed properties',
    };
  if (additional !== false)
    return {
      path,
      message: 'strict mode needs additionalProperties: false on every object (z.object, not looseObject)',
    };
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  if (typeof properties !== 'object' || properties === null)
    return { path: `${path}/properties`, message: 'properties must be an object' };
  const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]) : []);
  for (const [name, property] of Object.entries(properties)) {
    if (!required.has(name))
      return {
        path: `${path}/properties/${escape(name)}`,
        message: `the property "${name}" is optional: strict mode needs every property required (make it .nullable() instead of .optional())`,
      };
    counter.properties++;
    if (counter.properties > MAX_PROPERTIES) return { path, message: `more than ${MAX_PROPERTIES} properties in all` };
    const problem = check(property, `${path}/properties/${escape(name)}`, depth + 1, counter);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** A JSON Pointer segment. */
function escape(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function describe(schema: Record<string, unknown>): string {
  if (schema.type !== undefined) return `type ${JSON.stringify(schema.type)}`;
  for (const key of ['anyOf', 'oneOf', 'allOf', '$ref', 'enum', 'const']) if (key in schema) return key;
  return Object.keys(schema).length === 0 ? 'a schema that takes any value' : 'a schema without a type';
}
