/**
 * Tool parameters from a JSON Schema someone else wrote (an MCP server's, a front end's client tools).
 * @module
 */
import { z } from 'zod';
import type { JsonSchema } from '../types/provider.js';
import { nestsDeeperThan } from './nests-deeper-than.js';

/** The largest schema accepted, as JSON text: a schema is data from the server, and a huge one is refused. */
export const MAX_SCHEMA_CHARS = 100_000;

/** How deeply a schema may nest: deeper ones are refused before conversion (which recurses). */
const MAX_SCHEMA_DEPTH = 32;

/** What {@link parametersFromJsonSchema} gives: the checking zod schema and the JSON Schema for the model, or why not. */
export type JsonSchemaParameters =
  | { readonly ok: true; readonly parameters: z.ZodType; readonly inputSchema: JsonSchema }
  | { readonly ok: false; readonly reason: string };

/**
 * Turns a tool's JSON Schema into what a cubepi tool needs: a zod schema that checks arguments against it (zod 4's
 * `z.fromJSONSchema`, zod 4.2 or later), and the schema itself for the model (without `$schema`). The model sees the
 * server's schema as the server wrote it; the arguments are checked against the same schema before any call.
 *
 * Refuses (with a reason, never a throw) what it cannot check: a schema that is not an object schema (`type:
 * "object"`), one bigger than {@link MAX_SCHEMA_CHARS} characters of JSON or nested deeper than 32 levels, one with a
 * keyword zod cannot express (`not`, `if`/`then`/`else`, `dependentSchemas`, a remote `$ref`, …), or an invalid one.
 * Unknown keywords (annotations, `x-…`) are ignored, as JSON Schema says.
 */
export function parametersFromJsonSchema(schema: unknown): JsonSchemaParameters {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { ok: false, reason: 'its input schema is not a JSON object' };
  }
  const record = schema as Record<string, unknown>;
  if (record.type !== 'object') {
    return { ok: false, reason: `its input schema must have type "object", got ${JSON.stringify(record.type)}` };
  }
  // Depth first, without recursion: `JSON.stringify` and the conversion recurse, and a schema nested thousands of
  // levels would overflow the stack in them.
  if (nestsDeeperThan(schema, MAX_SCHEMA_DEPTH)) {
    return { ok: false, reason: `its input schema nests deeper than ${MAX_SCHEMA_DEPTH} levels` };
  }
  let text: string;
  try {
    text = JSON.stringify(schema);
  } catch (error) {
    return { ok: false, reason: `its input schema is not JSON (${(error as Error).message})` };
  }
  if (text.length > MAX_SCHEMA_CHARS) {
    return {
      ok: false,
      reason: `its input schema is too large (${text.length} characters, at most ${MAX_SCHEMA_CHARS})`,
    };
  }
  const fromJSONSchema = (z as { fromJSONSchema?: (schema: unknown) => z.ZodType }).fromJSONSchema;
  if (typeof fromJSONSchema !== 'function') {
    return { ok: false, reason: 'checking JSON Schemas needs zod 4.2 or later (z.fromJSONSchema)' };
  }
  // A copy the server cannot change afterwards, for the model and for conversion alike.
  const copy = JSON.parse(text) as Record<string, unknown>;
  let parameters: z.ZodType;
  try {
    parameters = fromJSONSchema(copy);
  } catch (error) {
    return { ok: false, reason: `its input schema cannot be checked: ${(error as Error).message}` };
  }
  delete copy.$schema;
  return { ok: true, parameters, inputSchema: copy };
}
