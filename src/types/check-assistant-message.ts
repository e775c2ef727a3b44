/**
 * The check a provider's final message passes at the boundary, before it becomes an event or a stored message.
 * @module
 */
import type { AssistantContent } from './content.js';
import type { ProviderErrorKind, StopReason } from './messages.js';
import { describeValue, usageProblem } from './check-tool-result.js';

/** One entry per `StopReason`, held to the type by the compiler as the error kinds below are. */
const STOP_REASON_NAMES = {
  stop: true,
  length: true,
  toolUse: true,
  blocked: true,
  error: true,
  aborted: true,
} as const satisfies Record<StopReason, true>;
const STOP_REASONS: ReadonlySet<unknown> = new Set(Object.keys(STOP_REASON_NAMES));

/**
 * One entry per `ProviderErrorKind`: the compiler holds this list to the type (a kind added to it and not here, or
 * one here that it lacks, does not compile), so the boundary never refuses a kind the type allows.
 */
const ERROR_KIND_NAMES = {
  rate_limited: true,
  context_overflow: true,
  auth: true,
  unavailable: true,
  bad_request: true,
  timeout: true,
  aborted: true,
  model_incapable: true,
  unknown: true,
} as const satisfies Record<ProviderErrorKind, true>;

/** The classifications of a failed call (`ProviderErrorKind`). */
export const ERROR_KINDS: ReadonlySet<unknown> = new Set(Object.keys(ERROR_KIND_NAMES));

/**
 * Why `message` is not a valid `AssistantMessage`, or `undefined` when it is one: `role` `assistant`; `content` an
 * array of text (`text` a string), thinking (`thinking` a string) and tool-call blocks (`id` and `name` strings,
 * `arguments` an object serialisable as JSON, tool-call ids distinct); a known `stopReason`; `usage` a usage (finite
 * non-negative counts and costs); `provider` and `model` strings; a finite `timestamp`; and the optional fields of
 * their types when present (`errorKind` a known kind, `retryAfterMs` a non-negative number, `metadata` an object
 * serialisable as JSON). Fields outside the type are not looked at.
 *
 * Run once per model call, on the message of its terminal event: a malformed message stored in the thread would break
 * every later request on it. O(blocks), plus one `JSON.stringify` of each call's arguments.
 */
export function assistantMessageProblem(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    return `expected an assistant message, got ${describeValue(message)}`;
  }
  const m = message as Record<string, unknown>;
  if (m.role !== 'assistant') return `role is ${describeValue(m.role)}, not "assistant"`;
  const { content } = m;
  if (!Array.isArray(content)) return `content must be an array of blocks, got ${describeValue(content)}`;
  let ids: Set<unknown> | undefined;
  for (let i = 0; i < content.length; i++) {
    const block: unknown = content[i];
    const problem = blockProblem(block);
    if (problem !== undefined) return `content[${i}] ${problem}`;
    if ((block as AssistantContent).type !== 'toolCall') continue;
    // Two calls with one id could not each get their result: the second would be taken for the first's.
    const id = (block as { id: string }).id;
    if ((ids ??= new Set()).has(id)) return `content[${i}] repeats the tool call id ${describeValue(id)}`;
    ids.add(id);
  }
  if (!STOP_REASONS.has(m.stopReason)) return `stopReason ${describeValue(m.stopReason)} is not a stop reason`;
  const usage = usageProblem(m.usage);
  if (usage !== undefined) return `usage ${usage}`;
  if (!Number.isFinite(m.timestamp)) return `timestamp must be a number, got ${describeValue(m.timestamp)}`;
  const problem = fieldsProblem(m, MESSAGE_FIELDS);
  if (problem !== undefined) return problem;
  if (m.errorKind !== undefined && !ERROR_KINDS.has(m.errorKind)) {
    return `errorKind ${describeValue(m.errorKind)} is not an error kind`;
  }
  if (m.retryAfterMs !== undefined && !((m.retryAfterMs as number) >= 0 && Number.isFinite(m.retryAfterMs))) {
    return `retryAfterMs must be a non-negative number, got ${describeValue(m.retryAfterMs)}`;
  }
  return m.metadata === undefined ? undefined : objectProblem(m.metadata, 'metadata');
}

/**
 * The well-formed blocks of `content` (of a snapshot that broke the contract, or was cut off), in order: what is kept
 * of it. A tool call whose id an earlier kept call has is left out.
 */
export function wellFormedContent(content: unknown): AssistantContent[] {
  if (!Array.isArray(content)) return [];
  const kept: AssistantContent[] = [];
  let ids: Set<string> | undefined;
  for (const block of content as unknown[]) {
    if (blockProblem(block) !== undefined) continue;
    const b = block as AssistantContent;
    if (b.type === 'toolCall') {
      ids ??= new Set();
      if (ids.has(b.id)) continue;
      ids.add(b.id);
    }
    kept.push(b);
  }
  return kept;
}

/**
 * Fields, their types and whether they may be absent, of a message and of each kind of block. Read with indexed loops
 * (no iterator, no destructuring): this runs once per model call, mostly before V8 optimises it.
 */
type Fields = readonly (readonly [name: string, type: string, optional: boolean])[];
const MESSAGE_FIELDS: Fields = [
  ['provider', 'string', false],
  ['model', 'string', false],
  ['errorMessage', 'string', true],
  ['blockReason', 'string', true],
  ['responseId', 'string', true],
];
const BLOCK_FIELDS: Readonly<Record<string, Fields>> = {
  text: [
    ['text', 'string', false],
    ['signature', 'string', true],
  ],
  thinking: [
    ['thinking', 'string', false],
    ['signature', 'string', true],
    ['redacted', 'boolean', true],
  ],
  toolCall: [
    ['id', 'string', false],
    ['name', 'string', false],
    ['invalidArguments', 'string', true],
    ['signature', 'string', true],
  ],
};

function fieldsProblem(record: Record<string, unknown>, fields: Fields): string | undefined {
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const value = record[field[0]];
    if (typeof value === field[1] || (field[2] && value === undefined)) continue;
    return `${field[0]} must be a ${field[1]}, got ${describeValue(value)}`;
  }
  return undefined;
}

function blockProblem(block: unknown): string | undefined {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) {
    return `must be a text, thinking or toolCall block, got ${describeValue(block)}`;
  }
  const b = block as Record<string, unknown>;
  const { type } = b;
  const fields = type === 'text' || type === 'thinking' || type === 'toolCall' ? BLOCK_FIELDS[type] : undefined;
  if (fields === undefined) return `has type ${describeValue(b.type)}, not text, thinking or toolCall`;
  const problem =
    fieldsProblem(b, fields) ?? (b.type === 'toolCall' ? objectProblem(b.arguments, 'arguments') : undefined);
  return problem === undefined ? undefined : `(${b.type as string}): ${problem}`;
}

/** Why `value` is not an object serialisable as JSON (it is stored with the thread), or `undefined`. */
function objectProblem(value: unknown, name: string): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `${name} must be an object, got ${describeValue(value)}`;
  }
  try {
    JSON.stringify(value);
    return undefined;
  } catch (error) {
    return `${name} cannot be stored as JSON (${error instanceof Error ? error.message : String(error)})`;
  }
}
