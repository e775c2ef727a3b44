/**
 * A run's JSON Schema as Anthropic structured outputs take it (Messages `output_config.format`, and Claude on Bedrock
 * Converse `outputConfig.textFormat`).
 * @module
 */
import type { JsonSchema } from '../types/provider.js';
import { RequestRefusal } from './request-refusal.js';

/**
 * The schema Claude's constrained decoding is given for `schema`, or a {@link RequestRefusal} (kind `bad_request`)
 * naming the first JSON Pointer path it cannot express:
 *
 * - an open object (`additionalProperties` `true` or a schema: a record, `z.record()`): Claude's objects are closed,
 *   so it would silently become an empty object;
 * - a node with no `type` and no `anyOf`/`oneOf`/`allOf`/`enum`/`const`/`$ref` (`z.any()`, `z.unknown()`);
 * - a recursive schema (a `$ref` that reaches itself; `#` the root), which structured outputs do not support.
 *
 * What it can express is rewritten as the Anthropic SDK's own `transformJSONSchema` does (what its `zodOutputFormat`
 * sends; written again here so Bedrock does not load that SDK): every object gets `additionalProperties: false`,
 * `oneOf` becomes `anyOf`, `$schema` is dropped, and the constraints Claude does not enforce (`minimum`, `maxLength`,
 * `pattern`, a `minItems` above 1, an unknown `format`…) move into the node's `description`, so the model still reads
 * them; the runner validates the answer against the original schema either way. `description` (the run's description
 * of the answer) is set on the root when the schema has none. The input is not modified.
 */
export function anthropicOutputSchema(schema: JsonSchema, description?: string): Record<string, unknown> {
  const root = schema as Record<string, unknown>;
  const defs = isRecord(root.$defs) ? root.$defs : {};
  checkNoCycles(root, defs);
  const strict = transform(root, '');
  if (description !== undefined && description !== '' && strict.description === undefined) {
    strict.description = description;
  }
  return strict;
}

// The string formats structured outputs enforce (the SDK's list); another format moves into the description.
const FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid']);

function transform(input: unknown, path: string): Record<string, unknown> {
  if (!isRecord(input)) return refuse(path, 'a schema must be an object');
  const rest: Record<string, unknown> = { ...input };
  const take = (key: string): unknown => {
    const value = rest[key];
    delete rest[key];
    return value;
  };
  const out: Record<string, unknown> = {};
  const defs = take('$defs');
  if (isRecord(defs)) {
    out.$defs = Object.fromEntries(Object.entries(defs).map(([k, v]) => [k, transform(v, `/$defs/${k}`)]));
  }
  const ref = take('$ref');
  if (typeof ref === 'string') return { ...out, $ref: ref };
  const enumValues = rest.enum;
  if (Array.isArray(enumValues) && enumValues.length > 0 && enumValues.every(isPrimitive)) out.enum = take('enum');
  if (rest.const !== undefined && isPrimitive(rest.const)) out.const = take('const');
  const literal = 'enum' in out || 'const' in out;
  const declared = take('type');
  const type = literal ? undefined : declared;
  const anyOf = take('anyOf');
  const oneOf = take('oneOf');
  const allOf = take('allOf');
  take('$schema');
  const variants = (list: unknown[], key: string) => list.map((v, i) => transform(v, `${path}/${key}/${i}`));
  if (Array.isArray(anyOf)) out.anyOf = variants(anyOf, 'anyOf');
  else if (Array.isArray(oneOf)) out.anyOf = variants(oneOf, 'oneOf');
  else if (Array.isArray(allOf)) out.allOf = variants(allOf, 'allOf');
  else if (!literal) {
    if (type === undefined) return refuse(path, 'a value of any type (no "type"): say which type it is');
    out.type = type;
  }
  const description = take('description');
  if (description !== undefined) out.description = description;
  const title = take('title');
  if (title !== undefined) out.title = title;
  if (type === 'object') {
    const properties = take('properties');
    out.properties = Object.fromEntries(
      Object.entries(isRecord(properties) ? properties : {}).map(([k, v]) => [
        k,
        transform(v, `${path}/properties/${k}`),
      ]),
    );
    const extra = take('additionalProperties');
    if (extra !== undefined && extra !== false) {
      refuse(path, 'an open object (additionalProperties): structured outputs take closed objects only');
    }
    out.additionalProperties = false;
    const required = take('required');
    if (required !== undefined) out.required = required;
  } else if (type === 'string') {
    if (typeof rest.format === 'string' && FORMATS.has(rest.format)) out.format = take('format');
  } else if (type === 'array') {
    const items = take('items');
    if (items !== undefined) out.items = transform(items, `${path}/items`);
    if (rest.minItems === 0 || rest.minItems === 1) out.minItems = take('minItems');
  }
  const unenforced = Object.entries(rest);
  if (unenforced.length > 0) {
    const said = `{${unenforced.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')}}`;
    out.description =
      typeof out.description === 'string' && out.description !== '' ? `${out.description}\n\n${said}` : said;
  }
  return out;
}

function checkNoCycles(root: Record<string, unknown>, defs: Record<string, unknown>): void {
  const visit = (node: unknown, path: string, refs: readonly string[]): void => {
    if (Array.isArray(node)) return node.forEach((child, i) => visit(child, `${path}/${i}`, refs));
    if (!isRecord(node)) return;
    const ref = node.$ref;
    if (typeof ref === 'string') {
      if (ref === '#' || refs.includes(ref)) return refuse(path, `the schema is recursive ($ref "${ref}")`);
      const name = /^#\/\$defs\/(.+)$/.exec(ref)?.[1];
      if (name === undefined || !(name in defs)) return refuse(path, `$ref "${ref}" does not name one of its $defs`);
      return visit(defs[name], `/$defs/${name}`, [...refs, ref]);
    }
    for (const [key, child] of Object.entries(node)) {
      if (key !== '$defs' && typeof child === 'object') visit(child, `${path}/${key}`, refs);
    }
  };
  visit(root, '', []);
}

function refuse(path: string, why: string): never {
  throw new RequestRefusal(
    'bad_request',
    `The output schema cannot be sent to Anthropic structured outputs: at ${path || '/'}, ${why}`,
  );
}

function isPrimitive(value: unknown): boolean {
  return value === null || typeof value !== 'object';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
