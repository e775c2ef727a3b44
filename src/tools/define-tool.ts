/**
 * Defining tools with zod schemas.
 * @module
 */
import { z } from 'zod';
import { ConfigurationError } from '../types/errors.js';
import type { JsonSchema } from '../types/provider.js';
import type { AgentTool } from '../types/tool.js';
import { zodSchemaProblem } from '../types/zod-schema-problem.js';

/**
 * The definition {@link defineTool} takes: a tool without its JSON Schema, which is derived from `parameters`. `name`
 * must be letters, digits, `_` and `-`, at most 64 characters (what every API accepts).
 */
export type ToolSpec<TSchema extends z.ZodType, TDetails> = Omit<AgentTool<TSchema, TDetails>, 'inputSchema'>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Defines a tool. The zod schema becomes the JSON Schema sent to the model (zod 4's converter, in input mode, so a
 * field with a default stays optional for the model); arguments are validated against it before `beforeToolCall`, and
 * a failed validation becomes an error result listing every issue by field path, so the model can fix its call.
 *
 * Throws {@link ConfigurationError} for an invalid name, a missing description or `execute`, a schema that is not a
 * zod 4 object schema (a zod 3 schema gets a message saying so), or a negative timeout.
 *
 * @example
 * const search = defineTool({
 *   name: 'search',
 *   description: 'Search the corpus',
 *   parameters: z.object({ query: z.string(), limit: z.number().int().default(10) }),
 *   execute: async (_id, { query, limit }, { signal }) => ({
 *     content: [{ type: 'text', text: await searchCorpus(query, limit, signal) }],
 *   }),
 * });
 */
export function defineTool<TSchema extends z.ZodType, TDetails = unknown>(
  spec: ToolSpec<TSchema, TDetails>,
): AgentTool<TSchema, TDetails> {
  if (typeof spec !== 'object' || spec === null)
    throw new ConfigurationError('defineTool: expected a tool definition object');
  if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name)) {
    throw new ConfigurationError(
      `defineTool: invalid tool name ${JSON.stringify(spec.name)} (use 1–64 letters, digits, "_" or "-")`,
    );
  }
  if (typeof spec.description !== 'string') {
    throw new ConfigurationError(`defineTool: tool "${spec.name}" needs a description string`);
  }
  if (typeof spec.execute !== 'function') {
    throw new ConfigurationError(`defineTool: tool "${spec.name}" needs an execute function`);
  }
  const problem = zodSchemaProblem(spec.parameters);
  if (problem !== undefined) {
    throw new ConfigurationError(
      `defineTool: the parameters of tool "${spec.name}" must be a zod 4 schema, got ${problem}`,
    );
  }
  if (spec.timeoutMs !== undefined && !(spec.timeoutMs > 0)) {
    throw new ConfigurationError(`defineTool: the timeoutMs of tool "${spec.name}" must be a positive number`);
  }
  if (spec.executionMode !== undefined && spec.executionMode !== 'parallel' && spec.executionMode !== 'sequential') {
    throw new ConfigurationError(`defineTool: executionMode of tool "${spec.name}" must be "parallel" or "sequential"`);
  }
  // No warm-up parse here: parsing a probe value would run the schema's own callbacks (defaults, transforms,
  // refinements, possibly async ones nobody awaits) at definition. zod compiles its parser on the first real call.
  const inputSchema = toInputSchema(spec.name, spec.parameters);
  return {
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    inputSchema,
    ...(spec.executionMode !== undefined ? { executionMode: spec.executionMode } : {}),
    ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    ...(spec.idempotent === true ? { idempotent: true } : {}),
    execute: spec.execute,
  };
}

function toInputSchema(name: string, schema: z.ZodType): JsonSchema {
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io: 'input' });
  } catch (error) {
    throw new ConfigurationError(
      `defineTool: the parameters of tool "${name}" cannot be expressed as JSON Schema: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (json.type !== 'object') {
    throw new ConfigurationError(
      `defineTool: the parameters of tool "${name}" must be an object schema (z.object(...)), got ${JSON.stringify(json.type ?? 'a non-object schema')}`,
    );
  }
  // The dialect marker means nothing to model APIs, and some reject unknown top-level keys.
  delete json.$schema;
  return json;
}

/** The outcome of validating a call's arguments. */
export type ValidationOutcome =
  { readonly ok: true; readonly args: Record<string, unknown> } | { readonly ok: false; readonly message: string };

/** What validation has learnt of a schema: its synchronous parses so far, and whether it is asynchronous. */
interface SchemaUse {
  parses: number;
  async: boolean;
}
const schemaUses = new WeakMap<z.ZodType, SchemaUse>();

/**
 * How many synchronous parses of a schema run zod's interpreted path (`jitless`) before its compiled one. zod compiles
 * an object schema's parser with `new Function` at its first parse: 0.5–1 ms on a server, paid by the tool's first
 * call, about what 50–100 interpreted parses cost in a process that has just started (each then runs cold code). A tool
 * called a few times (a batch of parallel calls, a short run) never waits for the compilation; one called more often
 * gets the compiled parser after its first 16 calls, where the interpreted path has cost about a fifth of it.
 */
const INTERPRETED_PARSES = 16;
const INTERPRETED: z.core.ParseContext<z.core.$ZodIssue> = { jitless: true };

/**
 * Validates arguments against a tool's schema. Synchronous unless the schema has async refinements or transforms
 * (then a Promise). The failure message lists every issue by field path, for the model to act on.
 *
 * zod cannot tell in advance whether a schema is asynchronous: the first validation with a given schema tries a
 * synchronous parse, and when that meets an async check, parses again asynchronously (so on that first call the
 * async check runs twice, and a Promise it rejects in the synchronous attempt is not awaited by anyone: an async
 * refinement should resolve to `false`, not reject). From then on the schema is parsed asynchronously at once.
 * The first {@link INTERPRETED_PARSES} synchronous parses of a schema skip zod's compiled fast path (same outcome).
 */
export function validateToolArguments(
  tool: AgentTool<z.ZodType, unknown>,
  args: unknown,
): ValidationOutcome | Promise<ValidationOutcome> {
  const schema = tool.parameters;
  let use = schemaUses.get(schema);
  if (use === undefined) schemaUses.set(schema, (use = { parses: 0, async: false }));
  if (!use.async) {
    const context = use.parses < INTERPRETED_PARSES ? INTERPRETED : undefined;
    use.parses++;
    try {
      return outcomeOf(tool.name, schema.safeParse(args, context));
    } catch (error) {
      // zod throws when it meets an async refinement in a synchronous parse.
      if (!(error instanceof z.core.$ZodAsyncError)) throw error;
      use.async = true;
    }
  }
  return schema.safeParseAsync(args).then((async) => outcomeOf(tool.name, async));
}

function outcomeOf(toolName: string, result: z.ZodSafeParseResult<unknown>): ValidationOutcome {
  if (result.success) return { ok: true, args: result.data as Record<string, unknown> };
  const lines = result.error.issues.map((issue) => `- ${formatPath(issue.path)}: ${issue.message}`);
  return { ok: false, message: `Invalid arguments for tool "${toolName}":\n${lines.join('\n')}` };
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(arguments)';
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += (out === '' ? '' : '.') + String(key);
  }
  return out;
}
