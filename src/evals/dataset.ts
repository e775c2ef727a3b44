/**
 * Eval datasets: cases with an input and what is expected of the run, from code or JSONL. Pure (no `node:` import).
 * @module
 */
import type { Message } from '../types/messages.js';
import { EvalDatasetError } from './errors.js';

/** A tool call the case expects the agent to make: its name and (some of) its arguments. */
export interface ExpectedToolCall {
  readonly name: string;
  /** The arguments the call must carry (a subset, or exactly, depending on the trajectory scorer's mode). */
  readonly arguments?: Readonly<Record<string, unknown>> | undefined;
}

/** What a case expects of the run; each scorer reads the fields it needs. */
export interface EvalExpected {
  /** The final answer's text, for the `exact` scorer. */
  readonly output?: string | undefined;
  /** A schema the final answer (parsed as JSON) must satisfy, for the `schema` scorer: a zod schema (code only). */
  readonly schema?: unknown;
  /** The tool calls the run must make, in order, for the `trajectory` and `toolChoice` scorers. */
  readonly toolCalls?: readonly ExpectedToolCall[] | undefined;
  /** Anything else a scorer of yours reads (a rubric for `modelGraded`, …). */
  readonly [key: string]: unknown;
}

/** One case: an id unique in its dataset, the prompt, what is expected, and tags to filter on. */
export interface EvalCase {
  readonly id: string;
  /** The prompt: a string, or messages (a stored thread's tail, say). */
  readonly input: string | Message | readonly Message[];
  readonly expected?: EvalExpected | undefined;
  readonly tags?: readonly string[] | undefined;
}

/** A dataset as loaded: the usable cases, and one {@link EvalDatasetError} per line or case that was not usable. */
export interface EvalDataset {
  readonly cases: readonly EvalCase[];
  readonly problems: readonly EvalDatasetError[];
}

/** Checks one entry; a message saying what is wrong, or the case. */
function checkCase(value: unknown, seen: ReadonlySet<string>): EvalCase | { problem: string; id?: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { problem: 'a case is an object' };
  const entry = value as Record<string, unknown>;
  const id = typeof entry.id === 'string' && entry.id.length > 0 ? entry.id : undefined;
  if (id === undefined) return { problem: 'missing field "id" (a non-empty string)' };
  if (seen.has(id)) return { problem: 'duplicate id', id };
  const input = entry.input;
  const okInput =
    typeof input === 'string' ||
    (Array.isArray(input) && input.length > 0 && input.every(isMessageLike)) ||
    isMessageLike(input);
  if (!okInput) return { problem: 'missing field "input" (a string, a message or a non-empty list of messages)', id };
  if (entry.expected !== undefined && (typeof entry.expected !== 'object' || entry.expected === null))
    return { problem: '"expected" is an object', id };
  const tags = entry.tags;
  if (tags !== undefined && !(Array.isArray(tags) && tags.every((t) => typeof t === 'string')))
    return { problem: '"tags" is a list of strings', id };
  return entry as unknown as EvalCase;
}

function isMessageLike(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { role?: unknown }).role === 'string' &&
    'content' in value
  );
}

/**
 * A dataset from cases given in code: each case is checked (`id` a unique non-empty string, `input` a string or
 * messages); a bad one is left out and reported in `problems`, the rest kept.
 */
export function defineDataset(cases: readonly unknown[], source = 'code'): EvalDataset {
  const good: EvalCase[] = [];
  const problems: EvalDatasetError[] = [];
  const seen = new Set<string>();
  cases.forEach((value, index) => {
    const checked = checkCase(value, seen);
    if ('problem' in checked)
      problems.push(new EvalDatasetError(checked.problem, source, undefined, checked.id, index));
    else {
      seen.add(checked.id);
      good.push(checked);
    }
  });
  return { cases: good, problems };
}

/**
 * A dataset from JSONL text, one case a line (blank lines skipped). A line that is not valid JSON, or a case missing
 * a field, is one {@link EvalDatasetError} in `problems` naming the line (and the case id when it has one); every
 * other line is still loaded. Never throws on content.
 */
export function parseDataset(text: string, source = 'dataset'): EvalDataset {
  const good: EvalCase[] = [];
  const problems: EvalDatasetError[] = [];
  const seen = new Set<string>();
  let index = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const at = index++;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      problems.push(new EvalDatasetError(`not valid JSON (${(error as Error).message})`, source, i + 1, undefined, at));
      return;
    }
    const checked = checkCase(value, seen);
    if ('problem' in checked) problems.push(new EvalDatasetError(checked.problem, source, i + 1, checked.id, at));
    else {
      seen.add(checked.id);
      good.push(checked);
    }
  });
  return { cases: good, problems };
}
