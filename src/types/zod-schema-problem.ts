/**
 * Telling a zod 4 schema from everything else, with a message that says what to do.
 * @module
 */
import { z } from 'zod';

/**
 * `undefined` when `value` is a schema cubepi can use (a zod 4 schema from `zod`), else what it is instead, and what to
 * do about it, to follow "must be a zod 4 schema, got ".
 *
 * `instanceof z.ZodType` holds for any zod 4 classic schema, whichever copy of zod 4 made it (zod 4 checks a trait,
 * not the prototype chain). zod 4 schemas carry `_zod`; zod 3 schemas (`zod@3`, or `zod/v3` inside zod 4) carry `_def`
 * without `_zod`; zod/mini schemas carry `_zod` but not the methods (`safeParse`) that validation calls.
 */
export function zodSchemaProblem(value: unknown): string | undefined {
  if (value instanceof z.ZodType) return undefined;
  if (typeof value === 'object' && value !== null) {
    if ('_zod' in value) return "a zod/mini schema (cubepi calls the schema's own methods: import { z } from 'zod')";
    if ('_def' in value) {
      return "a zod 3 schema. cubepi needs zod 4 (peer dependency zod ^4.0.0): upgrade zod (npm install zod@^4) and import { z } from 'zod', not from 'zod/v3'";
    }
    if (Array.isArray(value)) return 'an array';
    return `an object that is not a zod schema (keys: ${Object.keys(value).slice(0, 5).join(', ') || 'none'})`;
  }
  return value === null ? 'null' : typeof value;
}
