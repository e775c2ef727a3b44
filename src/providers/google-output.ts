/**
 * Native structured output on Gemini: `responseMimeType: 'application/json'` and `responseJsonSchema`, with the
 * schema made into the JSON Schema subset Gemini takes.
 * @module
 */
import type { Model } from '../types/model.js';
import type { NativeOutputRequest } from '../types/output.js';
import type { JsonSchema, StreamRequest } from '../types/provider.js';
import { geminiGeneration, GoogleRequestRefusal } from './google-refusal.js';
import { findModel } from './model-table.js';

/**
 * The keywords `responseJsonSchema` takes (the `@google/genai` 2.32 reference of `GenerationConfig.responseJsonSchema`;
 * `oneOf` is read as `anyOf`), and the two annotations kept because they guide the model.
 */
const SUPPORTED = new Set([
  '$id',
  '$defs',
  '$ref',
  '$anchor',
  'type',
  'format',
  'title',
  'description',
  'enum',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'anyOf',
  'oneOf',
  'properties',
  'additionalProperties',
  'required',
  'propertyOrdering',
]);

/**
 * Keywords that change which values (or shapes) are valid in a way the supported subset cannot say: a schema using
 * one is refused rather than sent looser than it reads.
 */
const STRUCTURAL = new Set([
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'dependentSchemas',
  'unevaluatedProperties',
  'unevaluatedItems',
  '$dynamicRef',
  '$recursiveRef',
]);

/** Keywords whose value is a map of name → schema. */
const SCHEMA_MAPS = new Set(['properties', '$defs']);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'prefixItems']);

/**
 * The generation-config fields of native structured output: `responseMimeType: 'application/json'` and
 * `responseJsonSchema` ({@link geminiResponseSchema} of `output.schema`, with `output.description` as the root's
 * `description` when it has none; Gemini takes no schema name). A model whose `structuredOutput` (given, or the
 * table's) is not `json_schema` (the retired Gemini 1.5) is refused with `model_incapable` before the request. Gemini has no strict switch: its decoding always keeps
 * to the schema it accepted, so `output.strict` changes nothing in the request.
 *
 * Gemini before 3 answers 400 "Function calling with a response mime type: 'application/json' is unsupported" when
 * function declarations are offered in the same request, so a request with tools (and a tool choice other than
 * `none`) on a model whose id names no Gemini generation ≥ 3 is refused with `model_incapable` before it is sent: the
 * runner asks such a model for the answer with a final tool or in the prompt instead. A forced tool choice
 * (`required` or a named tool: Gemini's ANY mode) with native output is refused the same way on every model: Gemini
 * answers 400 "Forced function calling (ANY mode) with a response mime type: 'application/json' is unsupported", and
 * a model forced to call a tool could never give the typed answer anyway.
 */
export function geminiOutputConfig(
  model: Model,
  output: NativeOutputRequest,
  request: Pick<StreamRequest, 'tools' | 'toolChoice'>,
): { responseMimeType: 'application/json'; responseJsonSchema: JsonSchema } {
  const native = model.structuredOutput ?? findModel(model.id)?.structuredOutput;
  if (native !== undefined && native !== 'json_schema') {
    throw new GoogleRequestRefusal(
      'model_incapable',
      `${model.id} takes no JSON Schema for its answer (structuredOutput: ${String(native)}): ask it for the answer ` +
        `with a final tool or in the prompt`,
    );
  }
  const withTools = (request.tools?.length ?? 0) > 0 && request.toolChoice !== 'none';
  const forced = request.toolChoice === 'required' || typeof request.toolChoice === 'object';
  if (withTools && forced) {
    throw new GoogleRequestRefusal(
      'model_incapable',
      `${model.id}: Gemini refuses forced function calling (ANY mode) with a JSON response ("Forced function calling ` +
        `(ANY mode) with a response mime type: 'application/json' is unsupported"): leave the tool choice on auto`,
    );
  }
  const generation = geminiGeneration(model.id);
  if (withTools && (generation === undefined || generation < 3)) {
    throw new GoogleRequestRefusal(
      'model_incapable',
      `${model.id} cannot take native structured output (responseJsonSchema) together with function declarations ` +
        `(Gemini 3 and later can): ask it for the answer with a final tool or in the prompt`,
    );
  }
  const schema = geminiResponseSchema(output.schema);
  if (output.description !== undefined && schema.description === undefined) schema.description = output.description;
  return { responseMimeType: 'application/json', responseJsonSchema: schema };
}

/**
 * `schema` as Gemini's `responseJsonSchema` takes it, transformed without changing which values it accepts where the
 * subset can say the same thing, and refused where it cannot:
 *
 * - kept: the supported keywords (`type`, `properties`, `required`, `additionalProperties`, `items`, `prefixItems`,
 *   `enum`, `anyOf`, `oneOf`, `$ref`/`$defs`, `minimum`/`maximum`, `minItems`/`maxItems`, `format`, `title`,
 *   `description`, `propertyOrdering`);
 * - rewritten: `const` → a one-value `enum` (`const: null` → `type: 'null'`); draft-07 `definitions` → `$defs` (and
 *   their `$ref`s); a tuple `items: [...]` → `prefixItems`; `allOf` of one schema → `anyOf` of it; a `$ref` with
 *   sibling keywords (which Gemini forbids) → `anyOf: [{ $ref }]` beside them;
 * - dropped: annotations and value constraints Gemini does not enforce (`$schema`, `default`, `examples`, `pattern`,
 *   `minLength`/`maxLength`, `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`, `uniqueItems`, `minProperties`,
 *   `maxProperties`, `propertyNames`, …): the model is not held to them, the run still validates the answer with the
 *   full schema;
 * - refused ({@link GoogleRequestRefusal}, kind `bad_request`, naming the JSON path): `allOf` of several schemas,
 *   `not`, `if`/`then`/`else`, `patternProperties`, `dependentSchemas`, `unevaluated*`, and an `enum`/`const` value
 *   that is not a string or a number (Gemini's enums hold strings and numbers).
 *
 * Returns a new object; `schema` is not changed.
 */
export function geminiResponseSchema(schema: JsonSchema): Record<string, unknown> {
  return convert(schema, '') as Record<string, unknown>;
}

function convert(schema: unknown, path: string): unknown {
  if (typeof schema === 'boolean') return schema;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw refuse(path, 'a schema must be an object or a boolean');
  }
  const source = { ...(schema as Record<string, unknown>) };
  if ('definitions' in source) {
    source.$defs = { ...(source.definitions as object), ...(source.$defs ?? {}) };
    delete source.definitions;
  }
  if (Array.isArray(source.items)) {
    source.prefixItems = source.items;
    delete source.items;
  }
  if (Array.isArray(source.allOf) && source.allOf.length === 1 && source.anyOf === undefined) {
    source.anyOf = source.allOf;
    delete source.allOf;
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    const at = `${path}/${key}`;
    if (STRUCTURAL.has(key)) throw refuse(at, `Gemini's responseJsonSchema cannot express "${key}"`);
    if (key === 'const') {
      if (value === null) out.type = 'null';
      else out.enum = [enumValue(value, at)];
    } else if (key === 'enum') {
      if (!Array.isArray(value)) throw refuse(at, '"enum" must be a list');
      out.enum = value.map((item, index) => enumValue(item, `${at}/${index}`));
    } else if (key === '$ref') {
      out.$ref = typeof value === 'string' ? value.replace(/^#\/definitions\//, '#/$defs/') : value;
    } else if (!SUPPORTED.has(key)) {
      continue;
    } else if (SCHEMA_MAPS.has(key)) {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, sub]) => [name, convert(sub, `${at}/${name}`)]),
      );
    } else if (SCHEMA_LISTS.has(key)) {
      if (!Array.isArray(value)) throw refuse(at, `"${key}" must be a list of schemas`);
      out[key] = value.map((sub, index) => convert(sub, `${at}/${index}`));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = convert(value, at);
    } else {
      out[key] = value;
    }
  }
  // "If $ref is set on a sub-schema, no other properties, except for those starting with a $, may be set."
  if (out.$ref !== undefined && Object.keys(out).some((key) => !key.startsWith('$'))) {
    const { $ref, ...rest } = out;
    // Beside an anyOf, the $ref would be one more branch (a union) where the schema says both (an intersection).
    if (rest.anyOf !== undefined) throw refuse(`${path}/$ref`, 'a "$ref" beside "anyOf" is an intersection');
    return { ...rest, anyOf: [{ $ref }] };
  }
  return out;
}

function enumValue(value: unknown, path: string): string | number {
  if (typeof value === 'string' || typeof value === 'number') return value;
  throw refuse(path, `Gemini's enums hold strings and numbers only, not ${JSON.stringify(value)}`);
}

function refuse(path: string, why: string): GoogleRequestRefusal {
  return new GoogleRequestRefusal('bad_request', `Output schema at ${path === '' ? '/' : path}: ${why}`);
}
