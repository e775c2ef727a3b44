/**
 * The check every tool result passes at the boundary, before it becomes an event or a stored message.
 * @module
 */
import { DEFAULT_MAX_FILE_BYTES, fileProblem } from './check-file.js';

/** At most this many problems are listed in one message (a result of 10,000 bad blocks gets a short answer). */
const MAX_LISTED = 3;

/**
 * Why `result` is not a valid `AgentToolResult`, or `undefined` when it is one: `content` an array of text
 * blocks (`{ type: 'text', text: string }`), image blocks (`{ type: 'image', data: string, mimeType: string }`) and
 * file blocks (checked by `fileProblem`: one source, base64, bytes against the MIME type, at most `maxFileBytes`),
 * `isError` and `terminate` booleans when present, `usage` a usage (finite non-negative counts and costs) when present,
 * and `details` serialisable as JSON (no cycle, no BigInt), since it is stored with the thread.
 *
 * Run on every tool's result, so a malformed one becomes an error result that says what was wrong instead of a
 * message that breaks every later request on the thread.
 */
export function toolResultProblem(result: unknown, maxFileBytes: number = DEFAULT_MAX_FILE_BYTES): string | undefined {
  if (typeof result !== 'object' || result === null) return `expected an object, got ${describeValue(result)}`;
  const { content, isError, terminate, details, usage } = result as Record<string, unknown>;
  if (!Array.isArray(content))
    return `content must be an array of text, image and file blocks, got ${describeValue(content)}`;
  const problems: string[] = [];
  let count = 0;
  for (let i = 0; i < content.length; i++) {
    const problem = blockProblem(content[i], maxFileBytes);
    if (problem === undefined) continue;
    if (++count <= MAX_LISTED) problems.push(`content[${i}] ${problem}`);
  }
  if (count > MAX_LISTED) problems.push(`and ${count - MAX_LISTED} more bad blocks`);
  if (isError !== undefined && typeof isError !== 'boolean') {
    problems.push(`isError must be a boolean, got ${describeValue(isError)}`);
  }
  if (terminate !== undefined && typeof terminate !== 'boolean') {
    problems.push(`terminate must be a boolean, got ${describeValue(terminate)}`);
  }
  if (usage !== undefined) {
    const problem = usageProblem(usage);
    if (problem !== undefined) problems.push(`usage ${problem}`);
  }
  if (details !== undefined) {
    try {
      JSON.stringify(details);
    } catch (error) {
      problems.push(`details cannot be stored as JSON (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return problems.length === 0 ? undefined : problems.join('; ');
}

const USAGE_COUNTS = ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning', 'totalTokens'] as const;
const USAGE_COSTS = ['input', 'output', 'cacheRead', 'cacheWrite', 'total'] as const;

/** Why `usage` is not a `Usage` (finite non-negative counts and costs), or `undefined`. */
export function usageProblem(usage: unknown): string | undefined {
  if (typeof usage !== 'object' || usage === null) return `must be a Usage object, got ${describeValue(usage)}`;
  const record = usage as Record<string, unknown>;
  // Indexed loops: run on every model call's usage, mostly before V8 optimises it (an iterator costs there).
  for (let i = 0; i < USAGE_COUNTS.length; i++) {
    const key = USAGE_COUNTS[i]!;
    if (!isAmount(record[key])) return `.${key} must be a non-negative number`;
  }
  const cost = record.cost as Record<string, unknown> | null | undefined;
  if (typeof cost !== 'object' || cost === null) return '.cost must be an object';
  for (let i = 0; i < USAGE_COSTS.length; i++) {
    const key = USAGE_COSTS[i]!;
    if (!isAmount(cost[key])) return `.cost.${key} must be a non-negative number`;
  }
  return undefined;
}

function isAmount(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function blockProblem(block: unknown, maxFileBytes: number): string | undefined {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) {
    return `must be a text, image or file block, got ${describeValue(block)}`;
  }
  const { type } = block as { type?: unknown };
  if (type === 'text') {
    const { text } = block as { text?: unknown };
    return typeof text === 'string' ? undefined : `is a text block whose text is ${describeValue(text)}, not a string`;
  }
  if (type === 'image') {
    const { data, mimeType } = block as { data?: unknown; mimeType?: unknown };
    if (typeof data !== 'string') return `is an image block whose data is ${describeValue(data)}, not a base64 string`;
    if (typeof mimeType !== 'string')
      return `is an image block whose mimeType is ${describeValue(mimeType)}, not a string`;
    return undefined;
  }
  if (type === 'file') {
    const problem = fileProblem(block, maxFileBytes);
    return problem === undefined ? undefined : `is not a valid file block: ${problem}`;
  }
  return `has type ${describeValue(type)}: a tool result holds only "text", "image" and "file" blocks`;
}

/** A short description of a value for an error message: its type, or the value itself when it is short. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value;
}
